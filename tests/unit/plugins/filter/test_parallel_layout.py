"""The inferops.llm.parallel_layout filter: Jinja-friendly inputs over layout.select_layout."""

from __future__ import annotations

from collections import UserDict, UserList

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.gpu_topology import gpu_topology
from ansible_collections.inferops.llm.plugins.filter.parallel_layout import FilterModule, parallel_layout
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import find_model

GIB = 2**30
ARCHITECTURE = {
    "num_attention_heads": 16,
    "num_kv_heads": 2,
    "num_layers": 40,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "num_experts": 256,
    "moe_intermediate_size": 512,
}


def a30s(count=4):
    return [
        {"index": i, "name": "NVIDIA A30", "memory_mib": 24576, "pcie_gen_max": 4, "pcie_width_current": 16}
        for i in range(count)
    ]


def test_registered_under_its_name():
    assert FilterModule().filters()["parallel_layout"] is parallel_layout


def test_declared_topology_text_and_total_memory(topology_sample):
    topology = gpu_topology(topology_sample("04_4x_a30_nv4_pairs_dual_numa_nic.txt"))
    layout = parallel_layout(a30s(), ARCHITECTURE, topology=topology, memory=70 * GIB, gpu_memory_utilization=0.92)
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (2, 2)
    assert layout["gpus"] == [0, 1, 2, 3]
    assert layout.__class__ is dict and layout["gpus"].__class__ is list


def test_config_json_mapping_is_read_as_an_architecture():
    config = find_model("Qwen/Qwen3.6-35B-A3B").config
    layout = parallel_layout(a30s(), config, requested={"tensor_parallel_size": 3})
    assert layout["tensor_parallel_size"] == 3
    assert "16 attention heads are not divisible by 3" in layout["problems"][0]["message"]


def test_per_layout_memory_mapping():
    need = {"1x1": 40 * GIB, "2x1": 21 * GIB, "1x2": 21 * GIB}
    layout = parallel_layout(a30s(2), ARCHITECTURE, memory=need)
    assert layout["tensor_parallel_size"] == 2
    # Layouts missing from the mapping do not fit.
    assert parallel_layout(a30s(2), ARCHITECTURE, memory={"1x1": 40 * GIB})["fits"] is False


def test_lazy_containers_are_read_not_mutated():
    gpus = UserList([UserDict(g) for g in a30s(2)])
    model = UserDict(ARCHITECTURE)
    before = [dict(g) for g in gpus]
    layout = parallel_layout(gpus, model, requested=UserDict({"gpus": UserList([1, 0]), "tensor_parallel_size": 2}))
    assert layout["gpus"] == [1, 0]
    assert [dict(g) for g in gpus] == before


def test_ollama_sees_only_its_gpus():
    layout = parallel_layout(a30s(3), ARCHITECTURE, engine="ollama", requested={"gpus": [2]})
    assert layout["env"]["CUDA_VISIBLE_DEVICES"] == "2"


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (("text", ARCHITECTURE), {}, "GPU list"),
        ((a30s(1), ["x"]), {}, "config.json mapping"),
        ((a30s(1), ARCHITECTURE), {"topology": "GPU0 X"}, "topology must be a mapping"),
        ((a30s(1), ARCHITECTURE), {"memory": "lots"}, "total bytes"),
        (([{"index": 0}], ARCHITECTURE), {}, "memory_mib"),
        ((a30s(1), {"num_attention_heads": 0}), {}, "num_attention_heads"),
    ],
)
def test_bad_input_is_a_filter_error_naming_the_fix(args, kwargs, match):
    with pytest.raises(AnsibleFilterError, match=match):
        parallel_layout(*args, **kwargs)
