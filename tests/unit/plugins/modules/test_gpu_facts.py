"""inferops.llm.gpu_facts with nvidia-smi answered from fixtures and sysfs from fixture trees.

Outputs marked "constructed" follow the formats of the captures in tests/unit/fixtures/topology
(no GPU was available to capture them); the topo matrices are captures.
"""

from __future__ import annotations

import json
import pathlib

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.modules import gpu_facts

NVIDIA_SMI = "/usr/bin/nvidia-smi"
QUERY = (
    "--query-gpu=index,name,uuid,pci.bus_id,pci.device_id,memory.total,compute_cap,pcie.link.gen.current,"
    "pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,driver_version"
)
QUERY_WITHOUT_COMPUTE_CAP = QUERY.replace("compute_cap,", "")
CSV = "--format=csv,noheader,nounits"
# constructed: two RTX 5090 as in the two_gpus_root_port_and_switch sysfs tree, GPU 0 idle at Gen1
TWO_5090_QUERY = (
    "0, NVIDIA GeForce RTX 5090, GPU-3b3d1f0c-7a4e-4f0e-9a51-0f2c8d9e6a11, 00000000:01:00.0, 0x2B8510DE, 32607, "
    "12.0, 1, 5, 16, 16, 580.95.05\n"
    "1, NVIDIA GeForce RTX 5090, GPU-8c1e2d3f-4b5a-4c6d-8e7f-9a0b1c2d3e4f, 00000000:83:00.0, 0x2B8510DE, 32607, "
    "12.0, 5, 5, 16, 16, 580.95.05\n"
)
VERSION_580 = (
    "NVIDIA-SMI version  : 580.95.05\nNVML version        : 580.95\nDRIVER version      : 580.95.05\n"
    "CUDA Version        : 13.0\n"
)
FIXTURES = pathlib.Path(__file__).resolve().parent.parent.parent / "fixtures" / "topology"


def sample(name: str) -> str:
    """A sample without its '#' provenance comments, as nvidia-smi prints it."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


@pytest.fixture
def run_module(monkeypatch, capsys):
    def run(sysfs_root: str, answers: dict[tuple[str, ...], tuple[int, str, str]] | None, check_mode: bool = False):
        """Run the module; answers maps nvidia-smi arguments to (rc, stdout, stderr), None = not installed."""
        calls: list[tuple[str, ...]] = []
        warned: list[str] = []

        def run_command(self, args, **kwargs):
            assert args[0] == NVIDIA_SMI
            calls.append(tuple(args[1:]))
            return answers.get(tuple(args[1:]), (2, "", f"unexpected arguments {args[1:]}"))

        monkeypatch.setattr(gpu_facts, "SYSFS_ROOT", sysfs_root)
        monkeypatch.setattr(AnsibleModule, "run_command", run_command)
        monkeypatch.setattr(AnsibleModule, "warn", lambda self, warning: warned.append(warning))
        monkeypatch.setattr(
            AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None if answers is None else NVIDIA_SMI
        )
        with patch_module_args({"_ansible_check_mode": check_mode}), pytest.raises(SystemExit) as exited:
            gpu_facts.main()
        result = json.loads(capsys.readouterr().out)
        result["rc"] = exited.value.code
        result["calls"] = calls
        result["warned"] = warned
        return result

    return run


@pytest.mark.parametrize("check_mode", [False, True])
def test_host_without_gpu(sysfs_tree, run_module, check_mode):
    result = run_module(sysfs_tree("no_gpu_virtio"), {}, check_mode=check_mode)
    assert result["rc"] == 0
    assert result["changed"] is False
    facts = result["ansible_facts"]
    assert facts["inferops_gpus"] == []
    assert facts["inferops_gpu_driver"] == {"driver_loaded": False, "driver_version": None, "cuda_version": None}
    assert facts["inferops_gpu_topology"]["matrix"] == []
    assert facts["inferops_gpu_topology"]["nvlink"] == []
    assert result["calls"] == []  # nvidia-smi is not run without the kernel module


def test_fresh_host_lists_gpus_from_sysfs(sysfs_tree, run_module):
    result = run_module(sysfs_tree("narrow_x4_chipset_slot"), {})
    assert result["calls"] == []
    (gpu,) = result["ansible_facts"]["inferops_gpus"]
    assert gpu["index"] == 0
    assert gpu["name"] is None
    assert gpu["memory_mib"] is None
    assert gpu["pci_bus_id"] == "0000:07:00.0"
    assert gpu["pci_device_id"] == "0x2d04"
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_width_current"], gpu["pcie_width_max"]) == (
        1,
        3,
        4,
        4,
    )
    assert result["ansible_facts"]["inferops_gpu_driver"]["driver_loaded"] is False


def test_driver_loaded_two_gpus(sysfs_tree, run_module):
    answers = {
        (QUERY, CSV): (0, TWO_5090_QUERY, ""),
        ("--version",): (0, VERSION_580, ""),
        ("topo", "-m"): (0, sample("01_2x_rtx5090_pcie_phb.txt"), ""),
        ("topo", "-p2p", "r"): (0, sample("01b_2x_rtx5090_topo_p2p_rw.txt"), ""),
    }
    result = run_module(sysfs_tree("two_gpus_root_port_and_switch"), answers)
    facts = result["ansible_facts"]
    first, second = facts["inferops_gpus"]
    assert first == {
        "index": 0,
        "name": "NVIDIA GeForce RTX 5090",
        "uuid": "GPU-3b3d1f0c-7a4e-4f0e-9a51-0f2c8d9e6a11",
        "pci_bus_id": "0000:01:00.0",
        "pci_device_id": "0x2b85",
        "memory_mib": 32607,
        "compute_capability": "12.0",
        "pcie_gen_current": 1,
        "pcie_gen_max": 5,
        "pcie_width_current": 16,
        "pcie_width_max": 16,
        "numa_node": 0,
    }
    assert (second["pci_bus_id"], second["numa_node"], second["pcie_gen_current"]) == ("0000:83:00.0", 1, 5)
    assert facts["inferops_gpu_driver"] == {
        "driver_loaded": True,
        "driver_version": "580.95.05",
        "cuda_version": "13.0",
    }
    topology = facts["inferops_gpu_topology"]
    assert topology["matrix"] == [["X", "PHB"], ["PHB", "X"]]
    assert topology["cpu_affinity"] == ["0-63", "0-63"]
    assert topology["p2p"] == [["X", "GNS"], ["GNS", "X"]]
    assert result["changed"] is False
    assert result["warned"] == []


def test_narrow_slot_overrides_nvidia_smi_width_max(sysfs_tree, run_module):
    root = sysfs_tree("narrow_x4_chipset_slot")
    module_dir = pathlib.Path(root) / "module" / "nvidia"
    module_dir.mkdir(parents=True)
    (module_dir / "version").write_text("595.71.05\n")
    # constructed from sample 11C's link values: gen.current 1, gen.max 3, width.current 4, width.max 16
    query = "0, NVIDIA GeForce RTX 5060 Ti, GPU-0d1e2f3a-4b5c-6d7e-8f90-a1b2c3d4e5f6, 00000000:07:00.0, 0x2D0410DE, "
    query += "16311, 12.0, 1, 3, 4, 16, 595.71.05\n"
    answers = {
        (QUERY, CSV): (0, query, ""),
        ("--version",): (0, VERSION_580.replace("580.95.05", "595.71.05").replace("13.0", "13.2"), ""),
        ("topo", "-m"): (0, "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-15\t0\t\tN/A\n", ""),
        ("topo", "-p2p", "r"): (0, " \tGPU0\t\n GPU0\tX\t\n", ""),
    }
    (gpu,) = run_module(root, answers)["ansible_facts"]["inferops_gpus"]
    assert (gpu["pcie_width_current"], gpu["pcie_width_max"], gpu["pcie_gen_max"]) == (4, 4, 3)


def test_old_driver_without_compute_cap_and_version_flag(sysfs_tree, run_module):
    root = sysfs_tree("vm_conventional_bridge")
    query = "0, NVIDIA L4, GPU-1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809, 00000000:06:10.0, 0x27B810DE, 23034, "
    query += "4, 4, 16, 16, 570.144\n"
    xml = sample("12_nvidia_smi_q_x_xml_excerpt.xml").split("-->\n", 1)[1]
    answers = {
        (QUERY, CSV): (2, "", 'Field "compute_cap" is not a valid field to query.\n'),
        (QUERY_WITHOUT_COMPUTE_CAP, CSV): (0, query, ""),
        ("--version",): (2, "", "Invalid combination of input arguments.\n"),
        ("-q", "-x"): (0, xml, ""),
        ("topo", "-m"): (0, "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\tN/A\n", ""),
        ("topo", "-p2p", "r"): (0, " \tGPU0\t\n GPU0\tX\t\n", ""),
    }
    result = run_module(root, answers)
    (gpu,) = result["ansible_facts"]["inferops_gpus"]
    assert gpu["compute_capability"] is None
    assert gpu["memory_mib"] == 23034
    assert gpu["pci_device_id"] == "0x27b8"
    assert result["ansible_facts"]["inferops_gpu_driver"] == {
        "driver_loaded": True,
        "driver_version": "570.144",
        "cuda_version": None,  # that XML (driver 390) has no <cuda_version>
    }
    assert ("-q", "-x") in result["calls"]


def test_driver_that_sees_no_gpu_falls_back_to_sysfs_with_a_warning(sysfs_tree, run_module):
    answers = {(QUERY, CSV): (6, "No devices were found\n", "")}
    result = run_module(sysfs_tree("two_gpus_root_port_and_switch"), answers)
    facts = result["ansible_facts"]
    assert [gpu["pci_bus_id"] for gpu in facts["inferops_gpus"]] == ["0000:01:00.0", "0000:83:00.0"]
    assert facts["inferops_gpus"][0]["uuid"] is None
    assert facts["inferops_gpu_topology"]["matrix"] == []
    assert facts["inferops_gpu_driver"]["driver_loaded"] is True
    assert facts["inferops_gpu_driver"]["driver_version"] == "580.95.05"  # from /sys/module/nvidia/version
    assert any("No devices were found" in warning for warning in result["warned"])


def test_driver_loaded_without_nvidia_smi(sysfs_tree, run_module):
    result = run_module(sysfs_tree("vm_conventional_bridge"), None)
    assert result["calls"] == []
    assert result["ansible_facts"]["inferops_gpu_driver"]["driver_version"] == "570.144"
    assert [gpu["pci_bus_id"] for gpu in result["ansible_facts"]["inferops_gpus"]] == ["0000:06:10.0"]


def test_unparseable_topology_fails_with_the_output(sysfs_tree, run_module):
    answers = {
        (QUERY, CSV): (0, TWO_5090_QUERY, ""),
        ("--version",): (0, VERSION_580, ""),
        ("topo", "-m"): (0, "\tGPU0\tGPU1\nGPU0\t X \tPHB\n", ""),
    }
    result = run_module(sysfs_tree("two_gpus_root_port_and_switch"), answers)
    assert result["failed"] is True
    assert "nvidia-smi topo -m" in result["msg"]
    assert "no GPU1 row" in result["msg"]
    assert result["stdout"].startswith("\tGPU0")
