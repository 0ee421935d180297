# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Findings: one frozen type and one registry of ids for everything the plan reports in ``checks``.

Every id is kebab-case and has a section in docs/checks.md (a unit test holds the registry and the
document together). The plan refuses to emit an id that is not registered (``Finding`` raises), so an
emitted id always has its documentation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional

SEVERITIES = ("error", "warning", "info")

# id -> what it is about (the docs/checks.md section says cause, versions, source and fix).
FINDING_IDS: Dict[str, str] = {
    "architecture-unsupported": "the pinned engine release does not implement the model's architecture",
    "attention-backend": "an attention backend the GPU, KV dtype or model cannot use",
    "cluster-gpus": "the nodes of a cluster differ in GPUs, or one has none",
    "cluster-head": "a cluster without exactly one head or with an unknown backend",
    "cluster-network": "a cluster node without a usable address, interface or port",
    "cluster-python": "the nodes of a cluster run different Pythons",
    "cluster-version": "the nodes of a cluster differ in engine, version or model",
    "context-length": "a context longer than the model or the release accepts",
    "cudagraph-capture-size": "CUDA-graph capture sizes that do not fit the batch",
    "driver-version": "an NVIDIA driver older than the GPU or the engine's CUDA needs",
    "engine-format": "a weight format the engine release cannot load",
    "gateway-backend-loopback": "an engine on another host than the gateway bound to loopback, so unreachable",
    "gateway-ollama-unrouted": "an Ollama engine host without ollama_models, so no gateway route",
    "gateway-profile-invalid": "a gateway profile whose name hides a served model",
    "gateway-profile-parameter": "a profile's sampling or template field the engine or its version does not accept",
    "gateway-profile-unserved": "a gateway profile for a model no engine of the inventory serves",
    "gateway-reasoning-parser": "a thinking profile on a vLLM started without a reasoning parser",
    "gpu-specs-unknown": "a GPU missing from the specs table: memory planned, no speed predicted",
    "kv-cache-dtype": "a KV cache dtype the release, GPU or backend refuses",
    "kv-scales-hybrid": "--calculate-kv-scales on a release or model that refuses it",
    "mamba-block-size": "the hybrid block size against max_num_batched_tokens",
    "max-num-seqs": "more sequences than the KV cache or the recurrent state holds",
    "memory-fit": "weights, overhead and KV cache against the GPU's memory",
    "memory-overhead-uncertain": "a non-KV overhead term the plan cannot pin down, with the KV range it spans",
    "model-revision": "a branch or tag instead of a commit",
    "model-quantization-assumed": "a repository named for a quantization planned unquantized: its files were not read",
    "model-source": "a gated or private repository read without a token that grants access",
    "ollama-arch-unsupported": "an architecture the pinned Ollama cannot load",
    "ollama-arch-unverified": "a GGUF architecture the pinned Ollama release's names were not read for",
    "ollama-checksum-unknown": "an Ollama release without a known sha256, which the ollama role refuses",
    "ollama-context-clamped": "an Ollama context longer than the GGUF's",
    "ollama-coresidency": "Ollama on standby does not fit beside vLLM",
    "ollama-flash-attention-gpu": "flash attention asked on a GPU that cannot use it",
    "ollama-kv-quantized-without-fa": "a quantized Ollama KV cache without flash attention",
    "ollama-parallel-forced": "Ollama serves the architecture one request at a time",
    "ollama-pull-digest": "a pulled Ollama model without a digest pin (a mutable tag), or a malformed one",
    "ollama-partial-offload": "layers left on the CPU",
    "ollama-version-unverified": "an Ollama newer than the source the budget was traced to",
    "ollama-vram-exceeded": "a GPU overflows with the pinned num_gpu",
    "prefill-unprofiled": "prefill memory that vLLM's startup profile does not measure",
    "prefix-caching-hybrid": "prefix caching on a hybrid model in a release that cannot",
    "ray-requirements": "a Ray cluster node without token authentication or without vLLM in Ray's environment",
    "ray-version-mismatch": "a head whose Ray beside vLLM (vllm_ray_version) is not the cluster's ray_version",
    "quantization-capability": "a quantization the GPU's compute capability cannot run",
    "reasoning-parser": "a reasoning parser the release or model family lacks",
    "rope-scaling": "rope scaling overrides that change the context",
    "tensor-parallel-divisibility": "a parallel layout the model's dimensions do not split into",
    "tool-call-parser": "a tool-call parser the release or model family lacks",
    "topology-assumed": "several GPUs planned without their topology",
    "vllm-api-key-required": "vLLM listening beyond loopback without vllm_api_key, which the vllm role refuses",
    "vllm-allow-remote-required": "vLLM beyond loopback without vllm_allow_remote, which the vllm role refuses",
    "unknown-variable": "a variable with a collection prefix the collection does not define (warn mode)",
}


class UnknownFindingId(ValueError):
    """A finding id that is not registered (a programming error: register and document it)."""


@dataclass(frozen=True)
class Finding:
    """One finding: id (registered), severity, message; variable and a value that passes when known."""

    id: str
    severity: str
    message: str
    variable: Optional[str] = None
    suggested: Any = None

    def __post_init__(self) -> None:
        if self.id not in FINDING_IDS:
            raise UnknownFindingId(f"finding id {self.id!r} is not registered in _core/findings.py FINDING_IDS")
        if self.severity not in SEVERITIES:
            raise ValueError(f"finding severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}")

    @classmethod
    def from_mapping(cls, item: Mapping[str, Any]) -> Finding:
        return cls(
            id=str(item["id"]),
            severity=str(item.get("severity") or "error"),
            message=str(item.get("message", "")),
            variable=item.get("variable"),
            suggested=item.get("suggested"),
        )

    def entry(self) -> Dict[str, Any]:
        """The finding as the checks hand it on: id, severity, message, and the variable with a passing value."""
        return {
            "id": self.id,
            "severity": self.severity,
            "message": self.message,
            "variable": self.variable,
            "suggested": self.suggested,
        }

    def to_plan(self) -> Dict[str, str]:
        """The entry of the plan's ``checks`` (the message already names the variable and a passing value)."""
        return {"id": self.id, "severity": self.severity, "message": self.message}


def finding_entry(
    check_id: str, severity: str, message: str, variable: Optional[str] = None, suggested: Any = None
) -> Dict[str, Any]:
    """A check's finding as the checks pass it on (``{id, severity, message, variable, suggested}``); the id
    and severity are validated here, where the finding is made."""
    return Finding(check_id, severity, message, variable, suggested).entry()


def finding_entries(findings: Iterable[Finding]) -> List[Dict[str, Any]]:
    """The entries of findings made as ``Finding`` (each validated where it was made), in their order."""
    return [finding.entry() for finding in findings]
