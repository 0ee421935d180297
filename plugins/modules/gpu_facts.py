#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_facts
short_description: Gather NVIDIA GPUs, driver and GPU interconnect topology as facts
version_added: 0.1.0
description:
  - Gathers the NVIDIA GPUs of a Linux host, the loaded driver, and how the GPUs are connected
    (NVLink, PCIe switch, host bridge, NUMA node, socket interconnect).
  - With the C(nvidia) kernel module loaded, reads C(nvidia-smi --query-gpu) (never the banner),
    C(nvidia-smi --version) for the CUDA version (C(nvidia-smi -q -x) on drivers without it),
    C(nvidia-smi topo -m) for the topology and C(nvidia-smi topo -p2p r) for peer-to-peer grants,
    and completes each GPU with sysfs (NUMA node, link width of the parent port).
  - Without the driver (a fresh host) it lists the NVIDIA display-class PCI functions from sysfs with
    their PCIe link, so planning can start before a driver exists; GPU names, memory and the
    topology matrix are then unknown.
  - A host without NVIDIA GPUs gets empty lists and C(driver_loaded=false); the
    module does not fail for that.
  - When an C(nvidia-smi) command fails, the module warns and falls back (sysfs for the GPUs, an
    empty topology); output it cannot parse fails the task with the output attached.
  - The maximum PCIe link width and generation are the smallest of what C(nvidia-smi), the GPU and its
    parent port report in sysfs, because C(nvidia-smi) reports x16 for cards in narrower slots.
  - Hosts that cannot be reached, or whose GPUs are elsewhere, can declare the same facts in the
    inventory instead; see the P(inferops.llm.gpu_topology#filter) filter.
author:
  - inferops.llm maintainers (@inferops)
options: {}
extends_documentation_fragment:
  - inferops.llm.attributes
attributes:
  check_mode:
    support: full
    details: The module only reads; check mode gathers the same facts.
  diff_mode:
    support: none
    details: Nothing changes, so there is no diff.
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
    details: Returns its results in RV(ansible_facts).
  idempotent:
    support: full
  platform:
    description: Target OS/families that can be operated against.
    platforms: posix
    support: full
    details: Linux hosts (reads C(/sys)).
notes:
  - Fact injection can be off (C(inject_facts_as_vars=false)); read the results as
    C(ansible_facts['inferops_gpus']).
  - C(pcie_gen_current) and C(pcie_width_current) can read lower on an idle GPU, which saves power
    by lowering its link speed.
seealso:
  - plugin: inferops.llm.gpu_topology
    plugin_type: filter
"""

EXAMPLES = r"""
---
- name: Gather GPU facts
  inferops.llm.gpu_facts:

- name: Show the GPUs
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts['inferops_gpus'] | map(attribute='name') | list }} with driver
      {{ ansible_facts['inferops_gpu_driver']['driver_version'] }}

- name: Stop when a GPU is on a narrow PCIe link
  ansible.builtin.assert:
    that: ansible_facts['inferops_gpus'] | map(attribute='pcie_width_max') | reject('none') | min >= 8
    fail_msg: A GPU sits in a slot narrower than x8.
  when: ansible_facts['inferops_gpus'] | length > 0
"""

RETURN = r"""
ansible_facts:
  description: The gathered facts.
  returned: always
  type: dict
  contains:
    inferops_gpus:
      description:
        - One entry per NVIDIA GPU, in C(nvidia-smi) index order (PCI bus order when only sysfs is read).
        - Values that cannot be known are V(null), for example C(name), C(memory_mib) and C(uuid)
          when the driver is not loaded.
      returned: always
      type: list
      elements: dict
      contains:
        index:
          description: C(nvidia-smi) index; without a driver the position in PCI bus order, which is
            the order C(nvidia-smi) uses.
          type: int
          sample: 0
        name:
          description: Product name.
          type: str
          sample: NVIDIA GeForce RTX 5090
        uuid:
          description: Stable GPU UUID.
          type: str
          sample: GPU-49dacec4-c9d8-7109-cffc-9ff262186fe6
        pci_bus_id:
          description: PCI address in the sysfs and lspci form (4-digit domain, lower case).
          type: str
          sample: "0000:01:00.0"
        pci_device_id:
          description: PCI device id, which tells the GPU generation before a driver exists.
          type: str
          sample: "0x2b85"
        memory_mib:
          description: Total GPU memory in MiB; V(null) without a driver and on unified-memory parts.
          type: int
          sample: 32607
        compute_capability:
          description: CUDA compute capability, V(null) on drivers older than R510.
          type: str
          sample: "12.0"
        pcie_gen_current:
          description: Current PCIe generation (lower while idle).
          type: int
          sample: 5
        pcie_gen_max:
          description: Highest PCIe generation the GPU and its slot both support.
          type: int
          sample: 5
        pcie_width_current:
          description: Current PCIe link width (lanes).
          type: int
          sample: 16
        pcie_width_max:
          description: Widest PCIe link the GPU and its slot both support (lanes).
          type: int
          sample: 16
        numa_node:
          description: NUMA node of the GPU from sysfs, V(null) when the host has no NUMA information.
          type: int
          sample: 0
    inferops_gpu_driver:
      description: The NVIDIA driver.
      returned: always
      type: dict
      contains:
        driver_loaded:
          description: Whether the C(nvidia) kernel module is loaded.
          type: bool
          sample: true
        driver_version:
          description: Driver version, V(null) without a loaded driver.
          type: str
          sample: 580.95.05
        cuda_version:
          description: Highest CUDA version the driver supports, V(null) when unknown.
          type: str
          sample: "13.0"
    inferops_gpu_topology:
      description:
        - The C(nvidia-smi topo -m) matrix, parsed. Empty lists without a driver or without GPUs.
        - Lists indexed by GPU follow the C(nvidia-smi) index.
      returned: always
      type: dict
      contains:
        gpus:
          description: Matrix labels.
          type: list
          elements: str
          sample: [GPU0, GPU1]
        matrix:
          description:
            - Connection between GPU I(i) and GPU I(j) at C(matrix[i][j]), best first
              V(NV<k>) (k bonded NVLinks), V(PIX), V(PXB), V(PHB), V(NODE), V(SYS); V(X) on the diagonal.
            - The legacy V(SOC) is reported as V(SYS).
          type: list
          elements: list
          sample: [[X, NV4], [NV4, X]]
        cpu_affinity:
          description: CPU list near each GPU (cpulist syntax), V(null) when empty or not printed.
          type: list
          elements: str
          sample: ["0-23,48-71", "0-23,48-71"]
        numa_affinity:
          description: NUMA node(s) near each GPU as printed, V(null) when empty, V(N/A) or not printed.
          type: list
          elements: str
          sample: ["0", "0"]
        gpu_numa_id:
          description: NUMA id of each GPU's own memory (coherent platforms such as Grace), else V(null).
          type: list
          elements: str
          sample: [null, null]
        nics:
          description: Network adapters in the matrix; C(name) comes from the NIC legend.
          type: list
          elements: dict
          sample: [{label: NIC0, name: mlx5_0}]
        nic_matrix:
          description: Connection between GPU I(i) and NIC I(n) at C(nic_matrix[i][n]).
          type: list
          elements: list
          sample: [[PIX], [SYS]]
        nvlink:
          description: GPU pairs joined by NVLink, with the number of bonded links.
          type: list
          elements: dict
          sample: [{gpus: [0, 1], links: 4}]
        p2p:
          description:
            - Peer-to-peer read grants from C(nvidia-smi topo -p2p r) at C(p2p[i][j]), V(X) on the
              diagonal; V(OK) when granted, otherwise why not (V(CNS) chipset, V(GNS) GPU, V(TNS)
              topology, V(NS) not supported, V(DR) disabled by regkey, V(U) unknown).
            - Empty when not gathered.
          type: list
          elements: list
          sample: [[X, GNS], [GNS, X]]
"""

import typing as t

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import (
    OPTIONAL_QUERY_FIELDS,
    QUERY_FIELDS,
    empty_topology,
    gpu_from_query,
    gpu_from_sysfs,
    merge_sysfs,
    parse_cuda_version,
    parse_p2p,
    parse_query_gpu,
    parse_topology,
    read_nvidia_module,
    read_pci_gpus,
)

SYSFS_ROOT = "/sys"


def _query_gpus(module: AnsibleModule, nvidia_smi: str) -> tuple[list[dict], str | None] | None:
    """Rows of `nvidia-smi --query-gpu` and the driver version; None when nvidia-smi fails."""
    fields = list(QUERY_FIELDS)
    while True:
        command = [nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        rc, out, err = module.run_command(command)
        rejected = [field for field in OPTIONAL_QUERY_FIELDS if field in fields and field in out + err]
        if rc == 0 or not rejected:
            break
        fields = [field for field in fields if field not in rejected]
    if rc != 0:
        module.warn(f"{' '.join(command)} failed (rc {rc}): {(err or out).strip()}; GPUs are read from sysfs")
        return None
    try:
        rows = parse_query_gpu(out, fields)
    except ValueError as error:
        module.fail_json(msg=f"cannot parse the output of {' '.join(command)}: {error}", stdout=out)
    driver_version = next((row["driver_version"] for row in rows if row["driver_version"]), None)
    return [gpu_from_query(row) for row in rows], driver_version


def _cuda_version(module: AnsibleModule, nvidia_smi: str) -> str | None:
    for arguments in (["--version"], ["-q", "-x"]):
        rc, out, _err = module.run_command([nvidia_smi, *arguments])
        version = parse_cuda_version(out) if rc == 0 else None
        if version:
            return version
    return None


def _run_parser(module: AnsibleModule, command: list[str], parse: t.Callable[[str], t.Any], empty: t.Any) -> t.Any:
    """Run a read-only nvidia-smi command and parse its output; warn and return `empty` when it fails."""
    rc, out, err = module.run_command(command, environ_update={"NO_COLOR": "1"})
    if rc != 0:
        module.warn(f"{' '.join(command)} failed (rc {rc}): {(err or out).strip()}")
        return empty
    try:
        return parse(out)
    except ValueError as error:
        module.fail_json(msg=f"cannot parse the output of {' '.join(command)}: {error}", stdout=out)


def _topology(module: AnsibleModule, nvidia_smi: str) -> dict:
    topology = _run_parser(module, [nvidia_smi, "topo", "-m"], parse_topology, empty_topology())
    if topology["gpus"]:
        # Which GPU pairs the driver grants peer-to-peer reads (GeForce cards: none over PCIe).
        topology["p2p"] = _run_parser(module, [nvidia_smi, "topo", "-p2p", "r"], parse_p2p, [])
    return topology


def gather(module: AnsibleModule) -> dict:
    nvidia_module = read_nvidia_module(SYSFS_ROOT)
    pci_gpus = read_pci_gpus(SYSFS_ROOT)
    driver = {
        "driver_loaded": nvidia_module["loaded"],
        "driver_version": nvidia_module["version"],
        "cuda_version": None,
    }
    gpus: list[dict] = []
    topology = empty_topology()
    # Without the module, nvidia-smi would only fail (or load it through nvidia-modprobe).
    nvidia_smi = module.get_bin_path("nvidia-smi") if nvidia_module["loaded"] else None
    queried = _query_gpus(module, nvidia_smi) if nvidia_smi else None
    if queried is not None:
        queried_gpus, driver_version = queried
        by_bus_id = {device["pci_bus_id"]: device for device in pci_gpus}
        gpus = [merge_sysfs(gpu, by_bus_id.get(gpu["pci_bus_id"])) for gpu in queried_gpus]
        driver["driver_version"] = driver_version or driver["driver_version"]
        driver["cuda_version"] = _cuda_version(module, nvidia_smi)
        if gpus:
            topology = _topology(module, nvidia_smi)
        elif pci_gpus:
            module.warn(
                f"nvidia-smi lists no GPU while sysfs lists {len(pci_gpus)} NVIDIA GPU(s): the driver does not "
                "drive them (Blackwell and newer need the open kernel modules); GPUs are read from sysfs"
            )
    if not gpus:
        gpus = [gpu_from_sysfs(index, device) for index, device in enumerate(pci_gpus)]
    return {"inferops_gpus": gpus, "inferops_gpu_driver": driver, "inferops_gpu_topology": topology}


def main() -> None:
    module = AnsibleModule(argument_spec={}, supports_check_mode=True)
    module.exit_json(changed=False, ansible_facts=gather(module))


if __name__ == "__main__":
    main()
