# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Where the plan's model description comes from: the hook between a host's inputs and the engine plans.

Order (docs/plan.md "Where the model comes from"): ``inferops_model.config`` / ``config_file`` as given;
else, when the plan runs with a ``ModelResolver`` (the ``plan_fleet`` action on the controller), the
checkpoint's own files from the Hugging Face cache or the Hub (``_model/hub.py``); else the catalogue.
The engine plans then read the checkpoint like a ``config_file`` (config.json, hf_quant_config.json and the
image processor's files beside it in the cache) and its exact tensor bytes (``HostInputs.checkpoint_bytes``).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture
from ansible_collections.inferops.llm.plugins.module_utils._model.catalogue import find_model
from ansible_collections.inferops.llm.plugins.module_utils._model.hub import (
    WAYS_TO_PROVIDE,
    Checkpoint,
    GgufCheckpoint,
    ModelResolver,
    ModelSourceError,
)
from ansible_collections.inferops.llm.plugins.module_utils._model.weights import (
    quantization_conflict,
    quantization_named_by,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import finding, plan_findings
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import STANDBY_VAR, HostInputs, PlanInputError


def resolve_model_source(inputs: HostInputs, resolver: Optional[ModelResolver]) -> List[Dict[str, str]]:
    """Point ``inputs`` at the checkpoint's files when the resolver finds them; the findings to report.

    Sets ``inputs.model["config_file"]`` (the cached config.json), ``inputs.checkpoint_bytes`` and
    ``inputs.model_source`` (the report's ``commit`` / ``config_source``); for a GGUF of the Ollama kept on
    standby, its header's shape and size (``inputs.standby_ollama``). Raises PlanInputError naming
    ``inferops_model.repo``, ``.revision`` or ``.quantization`` (or ``inferops_standby_ollama.model``) when the
    model cannot be described.
    """
    if resolver is None:
        return []
    return _resolve_model(inputs, resolver) + _resolve_standby(inputs, resolver)


def _resolve_model(inputs: HostInputs, resolver: ModelResolver) -> List[Dict[str, str]]:
    model = inputs.model
    if isinstance(model.get("config"), dict):
        inputs.model_source = {"commit": None, "config_source": "inferops_model.config"}
        return []
    if model.get("config_file"):
        inputs.model_source = {"commit": None, "config_source": f"inferops_model.config_file {model['config_file']}"}
        return []
    repo, revision = str(model["repo"]), str(model["revision"])
    if str(model.get("file", "")).lower().endswith(".gguf"):
        return _use_gguf(inputs, resolver)
    try:
        result = resolver.resolve(repo, revision)
    except ModelSourceError as exc:
        raise PlanInputError([str(exc)]) from None
    if isinstance(result, Checkpoint):
        return _use_checkpoint(inputs, result)
    named = quantization_named_by(repo)  # the quantization the repository's name states, if any
    entry = find_model(model.get("base_model") or repo)
    if entry is None:
        raise PlanInputError(
            [
                f"inferops_model.repo {repo!r} at {revision!r} is neither in the Hugging Face cache of the controller, "
                f"nor reachable ({result.message}), nor catalogued, nor given inline: {WAYS_TO_PROVIDE}"
            ]
        )
    # Offline, unreachable or without huggingface_hub, the catalogue is the expected fallback: the report says
    # so in config_source. A gated repository is worth a warning: the plan could read it with a token.
    inputs.model_source = {
        "commit": None,
        "config_source": f"catalogue:{entry.id} (checkpoint not read: {result.message})",
    }
    findings = _quantization_assumed(model, entry, named, result.message)
    if result.reason != "gated":
        return findings
    gated = f"{result.message}; until then the plan uses the catalogue's {entry.id}"
    return [finding("model-source", "warning", gated), *findings]


def _quantization_assumed(model: Dict[str, Any], entry: Any, named: Optional[str], why: str) -> List[Dict[str, Any]]:
    """A warning when the catalogue stands in for a repository whose name states a quantization (``named``:
    weights.quantization_named_by) that neither the inventory nor the catalogued architecture gives: the plan
    would budget the weights at 16 bits."""
    if named is None or "quantization" in model or entry.architecture().quantization is not None:
        return []
    return plan_findings(
        [
            {
                "id": "model-quantization-assumed",
                "severity": "warning",
                "message": f"inferops_model.repo {model['repo']!r} is named for {named.upper()} weights, but its "
                f"quantization config was not read ({why}) and the catalogue's {entry.id} is unquantized, so the "
                "plan budgets 16-bit weights: set inferops_model.quantization, or put the checkpoint in the "
                "controller's Hugging Face cache (`hf download REPO --revision REV`) for the plan to read it",
                "variable": "inferops_model.quantization",
                "suggested": named,
            }
        ]
    )


def _use_checkpoint(inputs: HostInputs, checkpoint: Checkpoint) -> List[Dict[str, str]]:
    model = inputs.model
    if "quantization" in model:
        conflict = quantization_conflict(
            model["quantization"], ModelArchitecture.from_config(checkpoint.config).quantization
        )
        if conflict:
            raise PlanInputError(
                [
                    f"{conflict} ({checkpoint.config_source}): remove inferops_model.quantization (the plan reads the "
                    "scheme from the checkpoint), or plan the repository that has the scheme you mean"
                ]
            )
    inputs.model = {**model, "config_file": checkpoint.config_file}
    if checkpoint.weights_bytes is not None and "weights_bytes" not in model:
        inputs.checkpoint_bytes = (checkpoint.weights_bytes, str(checkpoint.weights_source))
    notes = "".join(f"; {note}" for note in checkpoint.notes)
    inputs.model_source = {"commit": checkpoint.commit, "config_source": checkpoint.config_source + notes}
    return []


def _use_gguf(inputs: HostInputs, resolver: ModelResolver) -> List[Dict[str, str]]:
    """A GGUF file: its header gives the shape and the architecture the Ollama plan reads (base_model is used only
    when the header cannot be read) and the Hub its exact size."""
    model = inputs.model
    result = _read_gguf(resolver, model, "inferops_model")
    if isinstance(result, GgufCheckpoint):
        inputs.gguf_shape = dict(result.shape)
        if "weights_bytes" not in model:
            # "gguf file ..." as _model/weights.py names a GGUF total (the file holds only the text model)
            inputs.checkpoint_bytes = (result.file_bytes, f"gguf file size, {result.source}")
            if inputs.engine == "ollama":  # the Ollama budget reads the size from the model mapping
                inputs.model = {**model, "weights_bytes": result.file_bytes}
        inputs.model_source = {"commit": result.commit, "config_source": result.source}
        return []
    inputs.model_source = {"commit": None, "config_source": f"inventory (GGUF header not read: {result.message})"}
    return [finding("model-source", "warning", result.message)] if result.reason == "gated" else []


def _resolve_standby(inputs: HostInputs, resolver: ModelResolver) -> List[Dict[str, str]]:
    """The GGUF of the Ollama kept on standby beside vLLM, read like the active model's: its header's shape
    (architecture included) and its size as ``weights_bytes`` unless the inventory gives one."""
    standby = inputs.standby_ollama
    if standby is None or not str(standby.model.get("file", "")).lower().endswith(".gguf"):
        return []
    result = _read_gguf(resolver, standby.model, f"{STANDBY_VAR}.model")
    if isinstance(result, GgufCheckpoint):
        standby.gguf_shape = dict(result.shape)
        if "weights_bytes" not in standby.model:
            standby.model = {**standby.model, "weights_bytes": result.file_bytes}
        return []
    return [finding("model-source", "warning", result.message)] if result.reason == "gated" else []


def _read_gguf(resolver: ModelResolver, model: Dict[str, Any], var: str) -> Any:
    """The GgufCheckpoint of ``model["file"]``, or the Unresolved reason when its size is in the inventory;
    PlanInputError naming ``var`` (inferops_model or inferops_standby_ollama.model) otherwise."""
    repo, revision, file = str(model["repo"]), str(model["revision"]), str(model["file"])
    try:
        result = resolver.resolve_gguf(repo, revision, file)
    except ModelSourceError as exc:
        raise PlanInputError([str(exc).replace("inferops_model", var)]) from None
    if isinstance(result, GgufCheckpoint) or "weights_bytes" in model:
        return result
    raise PlanInputError(
        [
            f"{var}.file {file!r} of {repo!r} at {revision!r} could not be read ({result.message}): "
            "put the file in the controller's Hugging Face cache (`hf download REPO FILE`), or give its size in "
            f"bytes as {var}.weights_bytes (with {var}.base_model for its architecture)"
        ]
    )


def source_keys(inputs: HostInputs) -> Dict[str, Any]:
    """The report's ``model.commit`` and ``model.config_source`` (only when the plan ran with a resolver)."""
    return dict(inputs.model_source) if inputs.model_source is not None else {}
