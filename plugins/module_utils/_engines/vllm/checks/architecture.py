# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""architecture-unsupported: the checkpoint's architecture against the pinned release's model registry."""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.architectures import (
    READ_RELEASES,
    support,
)
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.checks.tables import Finding
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import VllmVersion

# vLLM tries its Transformers backend for a class its registry lacks before it refuses ("Model architectures
# [...] are not supported for now"); the plan's figures are for vLLM's own implementation.
_REFUSED = "vLLM refuses to start, unless its Transformers backend can run the class (not what this plan budgets)."


def check_architecture(
    vv: VllmVersion, arch: Mapping[str, Any], repo: str = "", model_format: str = ""
) -> List[Finding]:
    """An error when the release's registry lacks an architecture that another release lists (vLLM refuses
    to start: "Model architectures [...] are not supported for now" or "... was supported in vLLM until");
    a warning when no release read lists it (vLLM then tries its Transformers backend, which the plan
    cannot verify). A GGUF's architecture is llama.cpp's name, mapped by vLLM's GGUF loader: not checked."""
    name = str(arch.get("architecture") or "")
    if not name or model_format.lower() == "gguf":
        return []
    verdict = support(name, vv.number)
    model = f"inferops_model {repo}" if repo else "inferops_model"
    if verdict.status == "later":
        return [
            finding_entry(
                "architecture-unsupported",
                "error",
                f"{model} is a {name}, which the model registry of vLLM {vv.text} (vllm_version) does not list: "
                f"{_REFUSED} {verdict.passing} is the first release that lists it: pin vllm_version "
                f"{verdict.passing} or later",
                "vllm_version",
                verdict.passing,
            )
        ]
    if verdict.status == "removed":
        return [
            finding_entry(
                "architecture-unsupported",
                "error",
                f"{model} is a {name}, which vLLM removed from its model registry after {verdict.passing}, so "
                f"vLLM {vv.text} (vllm_version) does not list it: {_REFUSED} Pin vllm_version {verdict.passing} "
                "(the last release that lists it) or choose another inferops_model",
                "vllm_version",
                verdict.passing,
            )
        ]
    if verdict.status == "unknown":
        return [
            finding_entry(
                "architecture-unsupported",
                "warning",
                f"{model} is a {name}, which no vLLM model registry from {READ_RELEASES[0]} to "
                f"{READ_RELEASES[-1]} lists: vLLM {vv.text} (vllm_version) will try its Transformers backend, "
                f"which starts only if the installed transformers implements {name} (or the repository's "
                "auto_map does, with trust_remote_code) and supports vLLM's attention; the plan cannot check that",
                "inferops_model.repo",
            )
        ]
    return []
