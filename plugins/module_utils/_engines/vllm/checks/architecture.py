# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""architecture-unsupported: the checkpoint's architecture against the pinned release's model registry."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import Finding
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.architectures import (
    READ_RELEASES,
    served_class,
    support,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import VllmVersion, parse_vllm_version

# vLLM tries its Transformers backend for a class its registry lacks before it refuses ("Model architectures
# [...] are not supported for now"); the plan's figures are for vLLM's own implementation.
_REFUSED = "vLLM refuses to start, unless its Transformers backend can run the class (not what this plan budgets)."


def _classes(arch: Mapping[str, Any]) -> List[str]:
    """config.json's ``architectures`` in order (a mapping without it: its one ``architecture``)."""
    names = [str(name) for name in arch.get("architectures") or () if name]
    first = str(arch.get("architecture") or "")
    return names or ([first] if first else [])


def _served_note(vv: VllmVersion, names: List[str], served: str, base: Optional[str]) -> List[Finding]:
    """An info note when vLLM serves another class than the first, or converts the class from a listed one."""
    if base is not None:
        return [
            Finding(
                "architecture-unsupported",
                "info",
                f"config.json lists {', '.join(names)}: the model registry of vLLM {vv.text} (vllm_version) does "
                f"not list {served} but converts it from {base}, which it lists (registry.py _normalize_arch), so "
                f"vLLM serves {served} with {base}'s implementation and the head its name calls for",
            )
        ]
    if served == names[0]:
        return []
    return [
        Finding(
            "architecture-unsupported",
            "info",
            f"config.json lists {', '.join(names)}: the model registry of vLLM {vv.text} (vllm_version) lists "
            f"{served} but not {names[0]}, so vLLM serves the model as {served} (the first class it lists)",
        )
    ]


def check_architecture(
    vv: VllmVersion, arch: Mapping[str, Any], repo: str = "", model_format: str = ""
) -> List[Finding]:
    """vLLM's registry tries every class of config.json's ``architectures`` in order and serves the first it
    lists (``_ModelRegistry.inspect_model_cls``/``resolve_model_cls`` of vllm/model_executor/models/registry.py:
    ``for arch in architectures: ... if model_info is not None: return``, at 0.8.0 and at 0.33.0 alike), so
    one listed class passes. When the release lists none of them: an error when another release lists one
    (vLLM refuses to start: "Model architectures [...] are not supported for now" or "... was supported in
    vLLM until"), naming the release that lists one; a warning when no release read lists any (vLLM then
    tries its Transformers backend with the first class, which the plan cannot verify). A note when the class
    served is not the first, or is converted from a class it lists (conversions.json: from 0.10.0 a
    ForSequenceClassification class whose ForCausalLM is listed, from 0.10.1 vLLM's _normalize_arch). A GGUF's
    architecture is llama.cpp's name, mapped by vLLM's GGUF loader: not checked."""
    names = _classes(arch)
    if not names or model_format.lower() == "gguf":
        return []
    verdicts = [support(name, vv.number) for name in names]
    if any(v.status == "unread" for v in verdicts):
        return []
    chosen = served_class(verdicts, vv.number)
    if chosen is not None:
        return _served_note(vv, names, *chosen)
    model = f"inferops_model {repo}" if repo else "inferops_model"
    what = f"a {names[0]}" if len(names) == 1 else f"one of {', '.join(names)} (config.json architectures)"
    none_listed = "does not list it" if len(names) == 1 else "lists none of them"
    later = sorted((v for v in verdicts if v.status == "later"), key=lambda v: parse_vllm_version(str(v.passing)))
    if later:
        first = later[0]
        which = "" if len(names) == 1 else f" (it lists {first.architecture})"
        return [
            Finding(
                "architecture-unsupported",
                "error",
                f"{model} is {what}, which the model registry of vLLM {vv.text} (vllm_version) {none_listed}: "
                f"{_REFUSED} {first.passing} is the first release that lists it{which}: pin vllm_version "
                f"{first.passing} or later",
                "vllm_version",
                first.passing,
            )
        ]
    removed = sorted((v for v in verdicts if v.status == "removed"), key=lambda v: parse_vllm_version(str(v.passing)))
    if removed:
        last = removed[-1]
        which = "" if len(names) == 1 else f" {last.architecture}"
        return [
            Finding(
                "architecture-unsupported",
                "error",
                f"{model} is {what}, which vLLM removed from its model registry after {last.passing}, so "
                f"vLLM {vv.text} (vllm_version) {none_listed}: {_REFUSED} Pin vllm_version {last.passing} "
                f"(the last release that lists{which or ' it'}) or choose another inferops_model",
                "vllm_version",
                last.passing,
            )
        ]
    return [
        Finding(
            "architecture-unsupported",
            "warning",
            f"{model} is {what}, which no vLLM model registry from {READ_RELEASES[0]} to "
            f"{READ_RELEASES[-1]} lists: vLLM {vv.text} (vllm_version) will try its Transformers backend, "
            f"which starts only if the installed transformers implements {names[0]} (or the repository's "
            "auto_map does, with trust_remote_code) and supports vLLM's attention; the plan cannot check that",
            "inferops_model.repo",
        )
    ]
