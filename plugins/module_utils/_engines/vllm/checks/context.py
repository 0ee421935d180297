# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""context-length and rope-scaling."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_bool
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import Version


def _yarn_overrides(overrides: Any) -> Optional[Mapping[str, Any]]:
    """The YaRN rope mapping inside vllm_hf_overrides (rope_scaling or rope_parameters, any depth)."""
    if isinstance(overrides, Mapping):
        kind = str(overrides.get("rope_type") or overrides.get("type") or "").lower()
        if kind == "yarn":
            return overrides
        for value in overrides.values():
            found = _yarn_overrides(value)
            if found is not None:
                return found
    return None


def _without_rope(overrides: Any) -> Any:
    if not isinstance(overrides, Mapping):
        return overrides
    result = {}
    for key, value in overrides.items():
        if key in ("rope_scaling", "rope_parameters") and _yarn_overrides(value) is not None:
            continue
        cleaned = _without_rope(value)
        if cleaned != {} or not isinstance(value, Mapping):
            result[key] = cleaned
    return result


def check_context(ver: Version, arch: Mapping[str, Any], s: Mapping[str, Any], env: Mapping[str, Any]) -> List[Finding]:
    findings = []
    # "auto" / -1: vLLM fits the length to the memory, which memory-fit covers.
    max_len = s.get("max_model_len")
    max_len = int(max_len) if isinstance(max_len, int) or str(max_len).isdigit() else 0
    native = int(arch.get("rope_original_max_position_embeddings") or arch.get("max_position_embeddings") or 0)
    derived = int(arch.get("derived_max_model_len") or native)
    yarn = _yarn_overrides(s.get("hf_overrides"))
    if yarn is not None:
        original = int(yarn.get("original_max_position_embeddings") or native)
        derived = int(original * float(yarn.get("factor") or 1.0))
        if max_len > 0 and native and max_len <= int(arch.get("max_position_embeddings") or native):
            findings.append(
                Finding(
                    "rope-scaling",
                    "error",
                    f"YaRN rope scaling in vllm_hf_overrides while max_model_len {max_len} fits the model's native "
                    f"{arch.get('max_position_embeddings')} positions: vLLM's YaRN is static, so it only degrades "
                    "quality (and a smaller original_max_position_embeddings can shrink the window); remove it",
                    "vllm_hf_overrides",
                    _without_rope(s.get("hf_overrides")),
                )
            )
    elif arch.get("rope_type") == "yarn" and max_len > 0 and native and max_len <= native:
        findings.append(
            Finding(
                "rope-scaling",
                "warning",
                f"the checkpoint ships static YaRN (factor {arch.get('rope_factor')}) but max_model_len {max_len} "
                f"fits its {native} original positions; short prompts lose quality",
                "vllm_hf_overrides",
                {"rope_scaling": None},
            )
        )
    allow_long = as_bool(env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    if max_len > 0 and derived and max_len > derived and not allow_long:
        findings.append(
            Finding(
                "context-length",
                "error",
                f"max_model_len {max_len} is greater than the derived maximum {derived} "
                "(max_position_embeddings x rope factor); vLLM refuses to start. Lower it or add YaRN "
                "rope scaling in vllm_hf_overrides",
                "vllm_max_model_len",
                derived,
            )
        )
    batched = s.get("max_num_batched_tokens")
    if batched and max_len > 0 and as_bool(s.get("enable_chunked_prefill")) is False and int(batched) < max_len:
        findings.append(
            Finding(
                "context-length",
                "error",
                f"chunked prefill is off and max_num_batched_tokens {batched} < max_model_len {max_len}: vLLM refuses "
                "to start",
                "vllm_enable_chunked_prefill",
                True,
            )
        )
    return findings
