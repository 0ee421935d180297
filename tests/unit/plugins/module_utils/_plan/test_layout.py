"""Layout selection: vLLM's divisibility rules, topology placement on every captured sample, and inventory layouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import parse_topology
from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import CATALOGUE
from ansible_collections.inferops.llm.plugins.module_utils._plan.layout import (
    LayoutError,
    ParallelDims,
    fp8_block_split_fails,
    layout_search,
    link_rank,
    pipeline_parallel_problems,
    pp_layer_partition,
    select_layout,
    tensor_parallel_problems,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
TOPOLOGY = FIXTURES / "topology"
GIB = 2**30

QWEN35_MOE = ParallelDims(
    num_attention_heads=16,
    num_key_value_heads=2,
    num_hidden_layers=40,
    linear_num_key_heads=16,
    linear_num_value_heads=32,
    moe_intermediate_size=512,
    num_experts=256,
)
LLAMA_70B = ParallelDims(num_attention_heads=64, num_key_value_heads=8, num_hidden_layers=80)


def topo(name: str) -> dict:
    return parse_topology((TOPOLOGY / name).read_text())


def gpus(count: int, name: str = "NVIDIA A30", memory_mib: int = 24576, gen: int = 4, width: int = 16) -> list:
    return [
        {"index": i, "name": name, "memory_mib": memory_mib, "pcie_gen_max": gen, "pcie_width_current": width}
        for i in range(count)
    ]


def needs(total_gib: float, overhead_gib: float = 1.0):
    """Per-GPU bytes for an even split of `total_gib` of weights and KV, plus a fixed per-GPU overhead."""
    return {(tp, pp): total_gib * GIB / (tp * pp) + overhead_gib * GIB for tp in range(1, 17) for pp in range(1, 65)}


# ------------------------------------------------------------------------------------ vLLM's hard rules


@pytest.mark.parametrize(
    ("tp", "ok"),
    [(1, True), (2, True), (4, True), (8, True), (16, True), (3, False), (6, False), (32, False)],
)
def test_attention_and_gdn_heads_must_split(tp, ok):
    # 16 q heads, 16 GDN key heads, 32 GDN value heads, 2 KV heads (TP 4, 8, 16 replicate them).
    assert (tensor_parallel_problems(QWEN35_MOE, tp) == []) is ok


def test_kv_heads_must_divide_or_be_divided():
    dims = ParallelDims(num_attention_heads=48, num_key_value_heads=8, num_hidden_layers=48)
    assert tensor_parallel_problems(dims, 16) == []  # multiple of 8 KV heads: replicated twice
    assert tensor_parallel_problems(dims, 4) == []  # divides 8
    problems = tensor_parallel_problems(dims, 12)  # 48 % 12 == 0 but 12 is neither a divisor nor a multiple of 8
    assert problems == ["12 neither divides the 8 KV heads nor is a multiple of them"]


def test_gdn_value_heads_checked_separately():
    dims = ParallelDims(
        num_attention_heads=24,
        num_key_value_heads=4,
        num_hidden_layers=64,
        linear_num_key_heads=16,
        linear_num_value_heads=48,
    )
    assert tensor_parallel_problems(dims, 8) == []
    assert tensor_parallel_problems(dims, 16) == ["24 attention heads are not divisible by 16"]
    odd = ParallelDims(num_attention_heads=8, num_key_value_heads=2, num_hidden_layers=8, linear_num_value_heads=6)
    assert tensor_parallel_problems(odd, 4) == ["6 Gated-DeltaNet value heads are not divisible by 4"]


def test_fp8_block_moe_needs_whole_128_blocks_per_rank():
    minimax = ParallelDims(
        num_attention_heads=48,
        num_key_value_heads=8,
        num_hidden_layers=62,
        moe_intermediate_size=1536,
        num_experts=256,
        fp8_block_n=128,
    )
    assert not fp8_block_split_fails(minimax, 4)  # 384 = 3 blocks
    assert fp8_block_split_fails(minimax, 8)  # 192 is not whole blocks
    assert tensor_parallel_problems(minimax, 8) == ["block-FP8 expert width 1536/8 = 192 is not a multiple of 128"]
    assert tensor_parallel_problems(minimax, 8, expert_parallel=True) == []
    # Without block quantization the same split is fine.
    plain = ParallelDims(**{**minimax.__dict__, "fp8_block_n": 0})
    assert not fp8_block_split_fails(plain, 8)


def test_pipeline_rules():
    assert pipeline_parallel_problems(QWEN35_MOE, 40) == []
    assert pipeline_parallel_problems(QWEN35_MOE, 41) == ["41 pipeline stages exceed the 40 layers"]
    no_pp = ParallelDims(num_attention_heads=8, num_key_value_heads=8, num_hidden_layers=8, supports_pp=False)
    assert pipeline_parallel_problems(no_pp, 2) == ["the model class does not implement SupportsPP"]
    assert pipeline_parallel_problems(no_pp, 1) == []


def test_dims_from_model_architecture():
    # the Qwen3.5-35B-A3B config.json the catalogue holds (one copy of the data, not another here)
    config = next(entry["config"] for entry in CATALOGUE if entry["id"] == "Qwen/Qwen3.5-35B-A3B")
    assert ParallelDims.from_model(ModelArchitecture.from_config(config)) == QWEN35_MOE
    assert ParallelDims.from_model(ModelArchitecture.from_config(config).to_dict()) == QWEN35_MOE


def test_dims_fp8_block_from_quantization_config():
    arch = ModelArchitecture.from_config(
        {
            "architectures": ["Qwen3MoeForCausalLM"],
            "model_type": "qwen3_moe",
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "hidden_size": 2048,
            "vocab_size": 151936,
            "max_position_embeddings": 262144,
            "num_experts": 128,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 768,
            "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
        }
    )
    dims = ParallelDims.from_model(arch)
    assert dims.fp8_block_n == 128
    assert fp8_block_split_fails(dims, 4)  # 768/4 = 192
    assert not fp8_block_split_fails(dims, 2)  # 384 = 3 blocks


def test_link_rank():
    assert link_rank("NV18") == (0, 18)
    assert link_rank(" PIX ") == (1, 0)
    assert link_rank("SOC") == link_rank("SYS") == (5, 0)
    with pytest.raises(LayoutError, match="unknown topology cell"):
        link_rank("CNS")


@pytest.mark.parametrize(
    ("memory", "expected"),
    [([1, 1], [20, 20]), ([3, 1], [30, 10]), ([32607, 24576], [23, 17]), ([1, 1, 1], [14, 13, 13])],
)
def test_pp_layer_partition_is_weighted_and_complete(memory, expected):
    assert pp_layer_partition(40, memory) == expected


def test_pp_layer_partition_keeps_one_layer_per_stage():
    assert pp_layer_partition(4, [100, 1, 1]) == [2, 1, 1]


# ------------------------------------------------------------------------------------ every topology sample


def test_sample_01_two_geforce_over_phb():
    t = topo("01_2x_rtx5090_pcie_phb.txt")
    g = gpus(2, "NVIDIA GeForce RTX 5090", 32607, gen=5)
    layout = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(40), gpu_memory_utilization=0.92)
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (2, 1)
    assert layout["gpus"] == [0, 1]
    # GeForce, no NVLink, no P2P grant: custom all-reduce off and NCCL kept off P2P.
    assert layout["flags"] == ["--disable-custom-all-reduce"]
    assert layout["env"] == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "0,1", "NCCL_P2P_DISABLE": "1"}
    assert layout["fits"] is True
    assert "PHB" in layout["reason"]


def test_sample_01_fits_one_gpu_and_replicates_on_request():
    t = topo("01_2x_rtx5090_pcie_phb.txt")
    g = gpus(2, "NVIDIA GeForce RTX 5090", 32607, gen=5)
    single = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(20))
    assert (single["tensor_parallel_size"], single["data_parallel_size"], single["gpus"]) == (1, 1, [0])
    assert single["reason"].startswith("fits one GPU")
    replicated = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(20), replicas=True)
    assert (replicated["tensor_parallel_size"], replicated["data_parallel_size"]) == (1, 2)
    assert replicated["gpus"] == [0, 1]
    assert replicated["flags"] == []


def test_sample_02_keeps_the_sys_gpu_out_of_tp_groups():
    t = topo("02_5gpu_dual_numa_sys_phb_node.txt")
    g = gpus(5, "NVIDIA GeForce RTX 4090", 24564)
    pair = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(30))
    # PHB pairs (1+2, 3+4) beat NODE pairs; GPU0 sits across the socket link.
    assert pair["tensor_parallel_size"] == 2
    assert pair["gpus"] == [1, 2]
    four = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(70))
    assert (four["tensor_parallel_size"], four["pipeline_parallel_size"]) == (2, 2)
    assert four["tp_groups"] == [[1, 2], [3, 4]]
    assert 0 not in four["gpus"]
    # Three pipeline stages (16 heads do not split three ways) stay on one socket: GPU0 is across SYS.
    three = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(50))
    assert (three["tensor_parallel_size"], three["pipeline_parallel_size"]) == (1, 3)
    assert 0 not in three["gpus"]


def test_sample_04_tp_on_nvlink_pairs_pp_across_sockets():
    t = topo("04_4x_a30_nv4_pairs_dual_numa_nic.txt")
    layout = select_layout(gpus(4), QWEN35_MOE, topology=t, memory_fit=needs(70))
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (2, 2)
    assert layout["tp_groups"] == [[0, 1], [2, 3]]
    assert layout["flags"] == []  # NVLink pairs keep custom all-reduce
    assert "NVLink" in layout["reason"]
    two = select_layout(gpus(4), QWEN35_MOE, topology=t, memory_fit=needs(30))
    assert two["gpus"] == [0, 1]


def test_sample_05_nvlink_pairs_are_found_by_matrix_not_index():
    t = topo("05_4gpu_nv4_bridge_pairs_phb_p2p_cns.txt")
    g = gpus(4, "NVIDIA GeForce RTX 3090", 24576)
    pair = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(30))
    assert pair["gpus"] == [0, 3]
    assert pair["flags"] == []
    four = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(70))
    assert four["gpus"] == [0, 3, 1, 2]
    assert four["env"]["CUDA_VISIBLE_DEVICES"] == "0,3,1,2"


def test_sample_05_pcie_pair_without_p2p_grant_disables_custom_allreduce():
    t = topo("05_4gpu_nv4_bridge_pairs_phb_p2p_cns.txt")
    g = gpus(4, "NVIDIA RTX A5000", 24576)
    layout = select_layout(
        g, QWEN35_MOE, topology=t, memory_fit=needs(30), requested={"tensor_parallel_size": 2, "gpus": [0, 1]}
    )
    # Not GeForce, but `topo -p2p` says CNS for 0<->1.
    assert layout["flags"] == ["--disable-custom-all-reduce"]
    assert "NCCL_P2P_DISABLE" not in layout["env"]


def test_sample_07_eight_b300_full_nvlink_takes_tp8_and_expert_parallel_when_blocks_do_not_split():
    t = topo("07_8x_b300_nv18_ansi_header.txt")
    g = gpus(8, "NVIDIA B300 SXM6 AC", 275040, gen=6)
    dense = select_layout(g, LLAMA_70B, topology=t, memory_fit=needs(1800))
    assert dense["tensor_parallel_size"] == 8
    assert dense["gpus"] == list(range(8))
    minimax = ParallelDims(
        num_attention_heads=48,
        num_key_value_heads=8,
        num_hidden_layers=62,
        moe_intermediate_size=1536,
        num_experts=256,
        fp8_block_n=128,
    )
    moe = select_layout(g, minimax, topology=t, memory_fit=needs(1800))
    assert moe["tensor_parallel_size"] == 8
    assert moe["expert_parallel"] is True
    assert "--enable-expert-parallel" in moe["flags"]


def test_sample_08_three_a6000_pair_then_uneven_pipeline():
    t = topo("08_3x_a6000_nv4_pair_plus_node_nvlink_status.txt")
    g = gpus(3, "NVIDIA RTX A6000", 49140)
    pair = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(70))
    assert (pair["tensor_parallel_size"], pair["gpus"]) == (2, [0, 1])
    # Three GPUs: 16 heads do not split three ways, so PP=3 (vLLM's "uneven GPU split" advice).
    three = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(110))
    assert (three["tensor_parallel_size"], three["pipeline_parallel_size"]) == (1, 3)


def test_sample_09_vm_h100_tp4_over_nvlink():
    t = topo("09_4x_h100_vm_empty_cpu_affinity.txt")
    layout = select_layout(gpus(4, "NVIDIA H100 80GB HBM3", 81559, gen=5), LLAMA_70B, topology=t, memory_fit=needs(250))
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (4, 1)
    assert layout["flags"] == []


def test_sample_10_legacy_k80_pix_pairs():
    text = (TOPOLOGY / "10_legacy_k80_soc_mlx4_no_numa.txt").read_text().split("# Second legacy")[0]
    t = parse_topology(text)
    g = gpus(4, "Tesla K80", 12206, gen=3)
    layout = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(16))
    assert (layout["tensor_parallel_size"], layout["gpus"]) == (2, [0, 1])


def test_sample_14_pcie_switches_prefer_tp2_pp2_over_tp4():
    t = topo("14_8x_p40_pcie_switch_pix_pxb_soc.txt")
    g = gpus(8, "Tesla P40", 24576, gen=3)
    layout = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(70))
    # TP>2 without NVLink loses custom all-reduce; pairs on one PCIe switch (PIX) with PP between them.
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (2, 2)
    assert layout["tp_groups"] == [[0, 1], [2, 3]]


# ------------------------------------------------------------------------------------ link width and VRAM


def test_narrow_slots_rank_last_in_tp_groups_but_stay_candidates():
    # 4x 3090, all PHB, GPUs 2 and 3 in Gen4 x4 (chipset) slots.
    matrix = [["X" if i == j else "PHB" for j in range(4)] for i in range(4)]
    g = gpus(4, "NVIDIA GeForce RTX 3090", 24576)
    g[2]["pcie_width_current"] = g[3]["pcie_width_current"] = 4
    pair = select_layout(g, QWEN35_MOE, topology={"matrix": matrix}, memory_fit=needs(30))
    assert pair["gpus"] == [0, 1]
    four = select_layout(g, QWEN35_MOE, topology={"matrix": matrix}, memory_fit=needs(70))
    assert (four["tensor_parallel_size"], four["pipeline_parallel_size"]) == (1, 4)
    # The heuristic order puts the narrow TP group last; the search still holds it for the speed model.
    search = layout_search(g, QWEN35_MOE, topology={"matrix": matrix})
    shapes = {(c.tp, c.pp): c.groups for c in search.candidates}
    assert shapes[(2, 2)] == [[0, 1], [2, 3]]
    assert shapes[(4, 1)] == [[0, 1, 2, 3]]


def test_sys_hops_and_narrow_links_never_drop_a_placement():
    """Issue #27: link rules order candidates; every TP x PP that the model's shape allows is placed."""
    t = topo("02_5gpu_dual_numa_sys_phb_node.txt")
    g = gpus(5, "NVIDIA GeForce RTX 4090", 24564)
    g[0]["pcie_width_current"] = 1
    search = layout_search(g, QWEN35_MOE, topology=t)
    shapes = {(c.tp, c.pp) for c in search.candidates}
    assert {(1, 1), (2, 1), (1, 2), (4, 1), (2, 2), (1, 4), (1, 5)} <= shapes


def test_seed4_nvlink_pairs_in_x4_slots_still_form_tp_groups():
    # Seed deployment 4: 0+1 and 2+3 NVLink-bridged, 2+3 in x4 slots: TP2 x PP2, PP boundary on the slow links.
    matrix = [
        ["X", "NV4", "PHB", "PHB"],
        ["NV4", "X", "PHB", "PHB"],
        ["PHB", "PHB", "X", "NV4"],
        ["PHB", "PHB", "NV4", "X"],
    ]
    g = gpus(4, "NVIDIA GeForce RTX 3090", 24576)
    g[2]["pcie_width_current"] = g[3]["pcie_width_current"] = 4
    layout = select_layout(
        g, QWEN35_MOE, topology={"matrix": matrix}, memory_fit=needs(75), gpu_memory_utilization=0.92
    )
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (2, 2)
    assert layout["tp_groups"] == [[0, 1], [2, 3]]
    assert "--disable-custom-all-reduce" not in layout["flags"]


def test_mixed_vram_goes_to_weighted_pipeline():
    matrix = [["X", "PHB"], ["PHB", "X"]]
    g = [
        {
            "index": 0,
            "name": "NVIDIA GeForce RTX 5090",
            "memory_mib": 32607,
            "pcie_gen_max": 5,
            "pcie_width_current": 16,
        },
        {
            "index": 1,
            "name": "NVIDIA GeForce RTX 3090",
            "memory_mib": 24576,
            "pcie_gen_max": 4,
            "pcie_width_current": 16,
        },
    ]
    layout = select_layout(g, QWEN35_MOE, topology={"matrix": matrix}, memory_fit=needs(40))
    assert (layout["tensor_parallel_size"], layout["pipeline_parallel_size"]) == (1, 2)
    assert layout["env"]["VLLM_PP_LAYER_PARTITION"] == "23,17"
    # 46 GiB on an even split would not fit the 24 GB card; weighted by VRAM it does.
    weighted = select_layout(g, QWEN35_MOE, topology={"matrix": matrix}, memory_fit=needs(47, overhead_gib=0))
    assert weighted["fits"] is True


def test_memory_fit_accepts_a_total_and_a_verdict():
    g = gpus(2)
    by_total = select_layout(g, QWEN35_MOE, memory_fit=30 * GIB)
    assert by_total["tensor_parallel_size"] == 2
    by_verdict = select_layout(
        g, QWEN35_MOE, memory_fit={(tp, pp): tp * pp >= 2 for tp in range(1, 5) for pp in range(1, 5)}
    )
    assert by_verdict["tensor_parallel_size"] == 2


def test_nothing_fits_is_reported_not_raised():
    layout = select_layout(gpus(2), QWEN35_MOE, memory_fit=needs(500))
    assert layout["fits"] is False
    assert "does not fit on 2 GPU(s)" in layout["reason"]


def test_undeclared_topology_is_assumed_one_root_complex():
    layout = select_layout(gpus(2), QWEN35_MOE, memory_fit=needs(30))
    assert (layout["tensor_parallel_size"], layout["gpus"]) == (2, [0, 1])


# ------------------------------------------------------------------------------------ inventory layouts


def test_inventory_sizes_are_kept_and_validated():
    t = topo("02_5gpu_dual_numa_sys_phb_node.txt")
    g = gpus(5, "NVIDIA GeForce RTX 4090", 24564)
    kept = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(10), requested={"tensor_parallel_size": 2})
    assert kept["tensor_parallel_size"] == 2
    assert kept["source"]["tensor_parallel_size"] == "inventory"
    assert kept["gpus"] == [1, 2]
    assert kept["problems"] == []
    assert "automatic choice would be TP=1" in kept["reason"]

    bad = select_layout(g, QWEN35_MOE, topology=t, memory_fit=needs(70), requested={"tensor_parallel_size": 3})
    assert bad["tensor_parallel_size"] == 3  # never silently changed
    assert bad["problems"][0]["variable"] == "vllm_tensor_parallel_size"
    assert bad["problems"][0]["suggested"] == 2
    assert "16 attention heads are not divisible by 3" in bad["problems"][0]["message"]


def test_inventory_too_many_gpus_and_wrong_gpu_list():
    g = gpus(2)
    big = select_layout(g, QWEN35_MOE, requested={"tensor_parallel_size": 4})
    assert big["tensor_parallel_size"] == 4
    assert any("this host has 2" in p["message"] for p in big["problems"])
    assert big["fits"] is False
    wrong = select_layout(g, QWEN35_MOE, requested={"tensor_parallel_size": 2, "gpus": [1, 7]})
    assert wrong["problems"][0]["variable"] == "vllm_gpus"
    order = select_layout(g, QWEN35_MOE, requested={"tensor_parallel_size": 2, "gpus": [1, 0]})
    assert order["gpus"] == [1, 0]
    assert order["problems"] == []


def test_unset_sizes_come_from_the_automatic_choice():
    t = topo("04_4x_a30_nv4_pairs_dual_numa_nic.txt")
    layout = select_layout(
        gpus(4), QWEN35_MOE, topology=t, memory_fit=needs(30), requested={"enable_expert_parallel": True}
    )
    assert (layout["tensor_parallel_size"], layout["gpus"], layout["expert_parallel"]) == (2, [0, 1], True)
    assert layout["source"]["tensor_parallel_size"] == "chosen"


def test_pinned_gpu_set_without_sizes_is_laid_out_inside_it():
    t = topo("04_4x_a30_nv4_pairs_dual_numa_nic.txt")
    layout = select_layout(gpus(4), QWEN35_MOE, topology=t, memory_fit=needs(30), requested={"gpus": [3, 2]})
    assert (layout["tensor_parallel_size"], layout["gpus"]) == (2, [2, 3])
    assert layout["source"]["gpus"] == "inventory"
    unknown = select_layout(gpus(4), QWEN35_MOE, topology=t, memory_fit=needs(30), requested={"gpus": [9]})
    assert unknown["problems"][0]["variable"] == "vllm_gpus"


def test_inventory_expert_parallel_off_with_unsplittable_blocks_is_a_problem():
    dims = ParallelDims(
        num_attention_heads=32,
        num_key_value_heads=4,
        num_hidden_layers=48,
        moe_intermediate_size=768,
        num_experts=128,
        fp8_block_n=128,
    )
    layout = select_layout(gpus(4), dims, requested={"tensor_parallel_size": 4, "enable_expert_parallel": False})
    assert layout["expert_parallel"] is False
    assert layout["problems"][0]["variable"] == "vllm_enable_expert_parallel"
    assert layout["problems"][0]["suggested"] is True


def test_multi_node_tp_inside_node_pp_across_nodes():
    t = topo("09_4x_h100_vm_empty_cpu_affinity.txt")
    g = gpus(4, "NVIDIA H100 80GB HBM3", 81559, gen=5)
    worker = select_layout(
        g,
        LLAMA_70B,
        topology=t,
        memory_fit=needs(500),
        multi_node={"nnodes": 2, "node_rank": 1, "master_addr": "10.0.0.1"},
    )
    assert worker["tensor_parallel_size"] == 4
    assert worker["pipeline_parallel_size"] == 2
    assert worker["flags"] == ["--nnodes", "2", "--node-rank", "1", "--master-addr", "10.0.0.1", "--headless"]
    head = select_layout(g, LLAMA_70B, topology=t, memory_fit=needs(500), multi_node={"nnodes": 2, "node_rank": 0})
    assert "--headless" not in head["flags"]
    with pytest.raises(LayoutError, match="node_rank 2"):
        select_layout(g, LLAMA_70B, multi_node={"nnodes": 2, "node_rank": 2})


def test_ollama_only_chooses_visible_gpus():
    layout = select_layout(gpus(3), QWEN35_MOE, engine="ollama", requested={"gpus": [2, 0]})
    assert layout["gpus"] == [2, 0]
    assert layout["env"]["CUDA_VISIBLE_DEVICES"] == "2,0"
    assert layout["problems"] == []
    unknown = select_layout(gpus(2), QWEN35_MOE, engine="ollama", requested={"gpus": [5]})
    assert unknown["problems"][0]["variable"] == "ollama_gpus"
    everything = select_layout(gpus(2), QWEN35_MOE, engine="ollama")
    assert everything["gpus"] == [0, 1]


def test_bad_input_names_the_variable():
    with pytest.raises(LayoutError, match="no GPUs"):
        select_layout([], QWEN35_MOE)
    with pytest.raises(LayoutError, match="memory_mib"):
        select_layout([{"index": 0, "name": "x"}], QWEN35_MOE)
    with pytest.raises(LayoutError, match="unique"):
        select_layout(gpus(1) + gpus(1), QWEN35_MOE)
    with pytest.raises(LayoutError, match="2x2"):
        select_layout(gpus(2), QWEN35_MOE, topology={"matrix": [["X"]]})
