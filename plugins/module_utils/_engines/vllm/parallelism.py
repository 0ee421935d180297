# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Which tensor/pipeline-parallel sizes vLLM accepts for a model: its divisibility rules.

Shared by the layout search (``_plan/layout.py``, which re-exports these names) and the
tensor-parallel-divisibility check (``checks/parallel.py``). Sources: docs/checks.md#tensor-parallel-divisibility
and the research notes (topology/notes.md section 2): vLLM's head/KV-head divisibility, Gated-DeltaNet heads,
and the FP8 block rule for MoE (block-quantized FP8 weights split into whole blocks per rank, fp8_utils.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Mapping, Tuple


class LayoutError(ValueError):
    """Input that cannot describe a layout (names the variable to fix)."""


@dataclass(frozen=True)
class ParallelDims:
    """The model dimensions that constrain tensor/pipeline/expert parallelism."""

    num_attention_heads: int
    num_key_value_heads: int
    num_hidden_layers: int
    linear_num_key_heads: int = 0
    linear_num_value_heads: int = 0
    moe_intermediate_size: int = 0
    num_experts: int = 0
    fp8_block_n: int = 0  # 0 unless the checkpoint is block-quantized FP8 (weight_block_size)
    supports_pp: bool = True

    @classmethod
    def from_model(cls, model: Any) -> ParallelDims:
        """From a ModelArchitecture (model_arch.py), its ``to_dict()``, or a mapping of these field names."""
        data = model.to_dict() if hasattr(model, "to_dict") else dict(model)

        def number(*names: str) -> int:
            for name in names:
                if data.get(name) is not None:
                    return int(data[name])
            return 0

        heads = number("num_attention_heads")
        if heads <= 0:
            raise LayoutError("the model architecture has no num_attention_heads; set inferops_model.config")
        quant = data.get("quantization") or {}
        block = quant.get("weight_block_size") if isinstance(quant, Mapping) else None
        fp8_block_n = number("fp8_block_n")
        if not fp8_block_n and block and str(quant.get("scheme", "")).startswith("fp8"):
            fp8_block_n = int(block[0])
        return cls(
            num_attention_heads=heads,
            num_key_value_heads=number("num_kv_heads", "num_key_value_heads") or heads,
            num_hidden_layers=number("num_layers", "num_hidden_layers") or 1,
            linear_num_key_heads=number("linear_num_key_heads"),
            linear_num_value_heads=number("linear_num_value_heads"),
            moe_intermediate_size=number("moe_intermediate_size"),
            num_experts=number("num_experts"),
            fp8_block_n=fp8_block_n,
            supports_pp=bool(data.get("supports_pp", True)),
        )


def tensor_parallel_problems(dims: ParallelDims, tp: int, expert_parallel: bool = False) -> List[str]:
    """Why vLLM would refuse this tensor-parallel size for the model (empty list: it accepts it)."""
    problems = []
    if tp < 1:
        return [f"tensor parallel size must be >= 1, got {tp}"]
    if dims.num_attention_heads % tp:
        problems.append(f"{dims.num_attention_heads} attention heads are not divisible by {tp}")
    kv = dims.num_key_value_heads
    if (tp >= kv and tp % kv) or (tp < kv and kv % tp):
        problems.append(f"{tp} neither divides the {kv} KV heads nor is a multiple of them")
    for name, heads in (("key", dims.linear_num_key_heads), ("value", dims.linear_num_value_heads)):
        if heads and heads % tp:
            problems.append(f"{heads} Gated-DeltaNet {name} heads are not divisible by {tp}")
    if fp8_block_split_fails(dims, tp) and not expert_parallel:
        problems.append(
            f"block-FP8 expert width {dims.moe_intermediate_size}/{tp} = "
            f"{dims.moe_intermediate_size / tp:g} is not a multiple of {dims.fp8_block_n}"
        )
    return problems


def fp8_block_split_fails(dims: ParallelDims, tp: int) -> bool:
    """Block-FP8 MoE experts whose per-rank width is not whole blocks (needs expert parallel)."""
    if not (dims.fp8_block_n and dims.num_experts and dims.moe_intermediate_size):
        return False
    return dims.moe_intermediate_size % tp != 0 or (dims.moe_intermediate_size // tp) % dims.fp8_block_n != 0


def pipeline_parallel_problems(dims: ParallelDims, pp: int) -> List[str]:
    """Why vLLM would refuse this pipeline-parallel size for the model."""
    if pp < 1:
        return [f"pipeline parallel size must be >= 1, got {pp}"]
    if pp > 1 and not dims.supports_pp:
        return ["the model class does not implement SupportsPP"]
    if pp > dims.num_hidden_layers:
        return [f"{pp} pipeline stages exceed the {dims.num_hidden_layers} layers"]
    return []


def valid_splits(dims: ParallelDims, world: int, pp_factor: int = 1) -> List[Tuple[int, int, bool]]:
    """``(tp, pp, expert_parallel)`` of every split of ``world`` GPUs into TP x local PP that vLLM accepts for the
    model, PP counted over ``pp_factor`` nodes (expert parallel where block-FP8 experts do not split)."""
    result = []
    for tp in range(1, world + 1):
        if world % tp:
            continue
        pp = world // tp * pp_factor
        ep = fp8_block_split_fails(dims, tp)
        if tensor_parallel_problems(dims, tp, expert_parallel=ep) or pipeline_parallel_problems(dims, pp):
            continue
        result.append((tp, pp, ep))
    return result
