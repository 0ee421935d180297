# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What every engine's plan shares: hardware as the plan sees it, the report's sections, findings."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import SEVERITIES
from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_number, plain
from ansible_collections.inferops.llm.plugins.module_utils._hardware.gpu_specs import add_row_hint, gpu_spec
from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import is_commit
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import HostInputs, PlanInputError

# ------------------------------------------------------------------------------------ rendering


def resolved(value: Any, source: str, reason: Optional[str] = None) -> Dict[str, Any]:
    """One entry of the plan's ``settings``: value, source (inventory|default|chosen), reason."""
    entry: Dict[str, Any] = {"value": value, "source": source}
    if reason:
        entry["reason"] = reason
    return entry


def revision_check(model: Mapping[str, Any], commit: Optional[str] = None) -> Optional[Dict[str, str]]:
    """A warning when the revision is a branch or tag: the download is then not reproducible. ``commit``:
    the sha the branch resolved to (cache refs/ or the Hub), which the message then gives to pin."""
    revision = str(model.get("revision", ""))
    if is_commit(revision):
        return None
    pin = (
        f"Pin the commit it resolves to now, which this plan used: inferops_model.revision: {commit}"
        if commit
        else "Pin the 40-character commit sha of the revision you tested."
    )
    return {
        "id": "model-revision",
        "severity": "warning",
        "message": (
            f"inferops_model.revision {revision!r} is a branch or tag, not a commit: a later download may get "
            f"different weights. {pin}"
        ),
    }


# ------------------------------------------------------------------------------------ assembly


@dataclass
class Hardware:
    """The host's GPUs as gathered by gpu_facts or declared in inventory."""

    gpus: List[Dict[str, Any]]
    topology: Optional[Dict[str, Any]]
    driver: Dict[str, Any]
    notes: List[Dict[str, str]] = field(default_factory=list)  # findings about the hardware as given


def normalize_hardware(hardware: Mapping[str, Any]) -> Hardware:
    gpus = hardware.get("gpus")
    if isinstance(gpus, (str, bytes)) or not isinstance(gpus, Sequence) or not gpus:
        raise PlanInputError(
            [
                "no GPUs to plan for: declare inferops_gpus (and inferops_gpu_topology_text for more than one GPU) "
                "or let the plan role gather them with inferops.llm.gpu_facts on a host with NVIDIA GPUs"
            ]
        )
    gpu_list = [plain(gpu) for gpu in gpus]
    driver = hardware.get("driver")
    driver_loaded = not isinstance(driver, Mapping) or driver.get("driver_loaded") is not False
    for position, gpu in enumerate(gpu_list):
        if not isinstance(gpu, dict) or as_number(gpu.get("memory_mib"), "int") is None:
            if not driver_loaded:
                raise PlanInputError(
                    [
                        "the GPUs' memory is unknown until the NVIDIA driver is loaded: install the driver first "
                        "(site.yml --tags driver, inferops_manage_driver: true) or declare inferops_gpus in inventory"
                    ]
                )
            raise PlanInputError([f"inferops_gpus[{position}] needs index, name and memory_mib (as gpu_facts returns)"])
        memory = as_number(gpu.get("memory_mib"), "int")
        if memory is None or not 1 <= memory <= 4 * 1024 * 1024:
            raise PlanInputError(
                [
                    f"inferops_gpus[{position}].memory_mib is out of range: it must be the GPU's memory in MiB "
                    "(1 to 4 TiB), such as 24576 for a 24 GB card"
                ]
            )
        index = as_number(gpu.get("index", position), "int")
        if index is None or not 0 <= index < 1024:
            raise PlanInputError([f"inferops_gpus[{position}].index must be the nvidia-smi index such as {position}"])
        gpu.setdefault("index", position)
    indices = [int(as_number(gpu["index"], "int")) for gpu in gpu_list]
    if len(set(indices)) != len(indices):
        raise PlanInputError([f"inferops_gpus lists the same index twice ({indices}): give each GPU its own index"])
    topology = hardware.get("topology")
    topology = plain(topology) if isinstance(topology, Mapping) and topology.get("matrix") else None
    notes: List[Dict[str, str]] = []
    if topology is None and len(gpu_list) > 1:
        topology = assumed_topology(len(gpu_list))
        notes.append(
            finding(
                "topology-assumed",
                "warning",
                f"inferops_gpu_topology_text is not set: the plan assumes the {len(gpu_list)} GPUs are linked "
                "through the host bridge (PHB: no NVLink, no peer-to-peer). Paste the output of "
                "`nvidia-smi topo -m` (and `nvidia-smi topo -p2p r`) of the host into inferops_gpu_topology_text, "
                "or let the plan gather it from the host, for a layout that uses its real links",
            )
        )
    for name in sorted({str(gpu.get("name") or "") for gpu in gpu_list}):
        if gpu_spec(name) is None:
            notes.append(
                finding(
                    "gpu-specs-unknown",
                    "warning",
                    f"{name or 'a GPU without a name'} is not in the GPU table: the plan predicts its memory but no "
                    f"speed (no decode, prefill or TTFT figure); {add_row_hint(name)}",
                )
            )
    if topology is not None and len(topology["matrix"]) != len(gpu_list):
        raise PlanInputError(
            [
                f"inferops_gpu_topology_text shows {len(topology['matrix'])} GPUs but inferops_gpus lists "
                f"{len(gpu_list)}: declare both from the same host"
            ]
        )
    return Hardware(
        gpus=gpu_list, topology=topology, driver=plain(driver) if isinstance(driver, Mapping) else {}, notes=notes
    )


def assumed_topology(count: int) -> Dict[str, Any]:
    """The topology planned when none is given: every pair through the host bridge, peer-to-peer refused."""
    return {
        "matrix": [["X" if a == b else "PHB" for b in range(count)] for a in range(count)],
        "p2p": [["X" if a == b else "NS" for b in range(count)] for a in range(count)],
    }


def load_config(model: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """config.json given inline or as a file on the controller (None: use the catalogue)."""
    if isinstance(model.get("config"), dict):
        return model["config"]
    path = model.get("config_file")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except (OSError, ValueError) as exc:
        raise PlanInputError([f"inferops_model.config_file {path!r} cannot be read as config.json: {exc}"]) from exc
    if not isinstance(config, dict):
        raise PlanInputError([f"inferops_model.config_file {path!r} does not hold a JSON object"])
    quant_file = os.path.join(os.path.dirname(str(path)), "hf_quant_config.json")
    if not config.get("quantization_config") and os.path.isfile(quant_file):
        # ModelOpt <= 0.29 keeps the scheme beside config.json; vLLM reads it only when config.json has none.
        try:
            with open(quant_file, encoding="utf-8") as handle:
                config = {**config, "quantization_config": json.load(handle)}
        except (OSError, ValueError) as exc:
            raise PlanInputError([f"inferops_model.config_file: {quant_file!r} cannot be read as JSON: {exc}"]) from exc
    return config


# The image processor's files of a checkpoint, in the order transformers' AutoImageProcessor prefers them.
_PROCESSOR_FILES = (("preprocessor_config.json", ()), ("processor_config.json", ("image_processor",)))


def load_image_max_pixels(model: Mapping[str, Any]) -> Optional[int]:
    """The image processor's pixel limit (``size.longest_edge``, or ``max_pixels``) from the checkpoint's
    preprocessor_config.json or processor_config.json beside ``config_file``; None when the plan has no such file."""
    path = model.get("config_file")
    if not path or isinstance(model.get("config"), dict):
        return None
    folder = os.path.dirname(str(path))
    for name, keys in _PROCESSOR_FILES:
        candidate = os.path.join(folder, name)
        if not os.path.isfile(candidate):
            continue
        try:
            with open(candidate, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            raise PlanInputError([f"inferops_model.config_file: {candidate!r} cannot be read as JSON: {exc}"]) from exc
        for key in keys:
            data = data.get(key) if isinstance(data, dict) else None
        if not isinstance(data, dict):
            continue
        size = data.get("size")
        value = size.get("longest_edge") if isinstance(size, dict) else None
        value = value if value is not None else data.get("max_pixels")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def driver_facts(driver: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The installed driver as checks.check_driver reads it (None when unknown or not loaded)."""
    if not driver.get("driver_version"):
        return None
    return {"version": str(driver["driver_version"]), "cuda": None}


def finding(check_id: str, severity: str, message: str) -> Dict[str, str]:
    return {"id": check_id, "severity": severity if severity in SEVERITIES else "warning", "message": message}


def plan_findings(
    findings: Sequence[Mapping[str, Any]], default_id: str = "tensor-parallel-divisibility"
) -> List[Dict[str, Any]]:
    """Findings as the plan lists them: id, severity, and a message naming the variable and a passing value;
    with that value, ``suggestion`` ({variable, value, message without it}) for build_plan to verify it."""
    result = []
    for item in findings:
        message = str(item.get("message", ""))
        variable = item.get("variable")
        if variable and str(variable) not in message:
            message = f"{variable}: {message}"
        suggested = item.get("suggested")
        # Already offered when the message names it as a value: quoted ("use 'qwen3_coder'") or after the
        # variable ("vllm_max_num_seqs: 6"). A number that is only a figure of the message ("this host has 8
        # GPU(s)", "PP 2") is not an offer: the value is appended.
        value = re.escape(str(suggested))
        shown = re.search(rf"'{value}'|\"{value}\"|{re.escape(str(variable))}: {value}(?![\w.])", message)
        bare = message
        if variable and suggested not in (None, "", []) and not shown:
            message += f" (a value that passes: {variable}: {json.dumps(suggested)})"
        severity = item.get("severity") or "error"
        entry: Dict[str, Any] = finding(str(item.get("id") or default_id), str(severity), message)
        # For the verification by a re-plan (_plan/suggestions.py); the plan's checks keep the message only.
        if variable:
            entry["variable"] = str(variable)
        if variable and suggested not in (None, "", []):
            entry["suggestion"] = {"variable": str(variable), "value": suggested, "message": bare}
        result.append(entry)
    return result


def model_section(
    inputs: HostInputs, architecture: str, weights_bytes: int, weights_source: str, quantization: Optional[str]
) -> Dict[str, Any]:
    return {
        "repo": inputs.model["repo"],
        "revision": inputs.model["revision"],
        "architecture": architecture,
        "weights_bytes": int(weights_bytes),
        "weights_source": weights_source,
        "quantization": quantization,
    }


def layout_section(layout: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "tensor_parallel_size": int(layout["tensor_parallel_size"]),
        "pipeline_parallel_size": int(layout["pipeline_parallel_size"]),
        "data_parallel_size": int(layout["data_parallel_size"]),
        "gpus": [int(i) for i in layout["gpus"]],
        "reason": str(layout["reason"]),
    }


def service_environment(
    layout_env: Mapping[str, Any], engine_env: Mapping[str, str], user_env: Mapping[str, str]
) -> Dict[str, str]:
    environment = {str(k): str(v) for k, v in layout_env.items()}
    environment.update(engine_env)
    environment.update(user_env)
    return environment
