"""The inferops.llm.gpu_topology filter: declared `nvidia-smi topo -m` text parsed on the controller."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.gpu_topology import FilterModule, gpu_topology
from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import empty_topology


def test_registered_under_its_name():
    assert FilterModule().filters()["gpu_topology"] is gpu_topology


def test_declared_text_gives_the_gpu_facts_structure(topology_sample):
    topology = gpu_topology(topology_sample("04_4x_a30_nv4_pairs_dual_numa_nic.txt"))
    assert topology["nvlink"] == [{"gpus": [0, 1], "links": 4}, {"gpus": [2, 3], "links": 4}]
    assert topology["numa_affinity"] == ["0", "0", "1", "1"]
    assert topology["nics"] == [{"label": "NIC0", "name": "mlx5_0"}]
    # Plain types, not subclasses or lazy containers: what later filters and the plan JSON expect.
    assert topology.__class__ is dict
    assert all(row.__class__ is list and all(cell.__class__ is str for cell in row) for row in topology["matrix"])


@pytest.mark.parametrize("text", [None, "", "\n"])
def test_nothing_declared_is_a_host_without_gpus(text):
    assert gpu_topology(text) == empty_topology()


def test_not_text_is_rejected_naming_the_variable():
    with pytest.raises(AnsibleFilterError, match="inferops_gpu_topology_text"):
        gpu_topology([["X", "NV4"], ["NV4", "X"]])


def test_unparseable_text_is_rejected_with_the_reason(topology_sample):
    with pytest.raises(AnsibleFilterError, match=r"no `nvidia-smi topo -m` matrix.*inferops_gpu_topology_text"):
        gpu_topology(topology_sample("15_nvidia_smi_nvlink_status_samples.txt"))
