# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The engine seam: one planner per engine and device behind one interface (``EnginePlanner``).

``build_plan`` (planner.py) asks ``planner_for(inputs)`` for the host's planner and calls only the
interface: ``plan`` (the engine's own planner loop: settings, budget, checks, command), ``key_findings``
(what the engine's role would refuse besides) and ``start`` (how long a start may take). Adding an engine
(or a device of one) is adding its planner here; the engine names are switched on nowhere else in
``build_plan``. What the code after the plan reads of an engine (service config, report, metrics, scrape
targets, gateway) is its record in ``_engines/facts.py``, plain data that the filters import without the
planners.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import as_number
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.start_timeout import start_timeout
from ansible_collections.inferops.llm.plugins.module_utils._plan.cluster import ClusterContext
from ansible_collections.inferops.llm.plugins.module_utils._plan.common import normalize_hardware, plan_findings
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import (
    STANDBY_VAR,
    HostInputs,
    vllm_key_findings,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.ollama_plan import ollama_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.refusals import (
    ollama_checksum_findings,
    ollama_pull_findings,
    ray_findings,
)
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_cpu_plan import vllm_cpu_plan
from ansible_collections.inferops.llm.plugins.module_utils._plan.vllm_plan import vllm_plan

Measured = Optional[Mapping[str, Any]]


class EnginePlanner:
    """What build_plan needs of an engine. The defaults: no extra findings, no start section."""

    def plan(
        self, inputs: HostInputs, hardware: Mapping[str, Any], measured: Measured, cluster: Optional[ClusterContext]
    ) -> Dict[str, Any]:
        """The engine's plan dict (the keys of docs/plan.md that the engine fills)."""
        raise NotImplementedError

    def key_findings(
        self,
        inputs: HostInputs,
        variables: Mapping[str, Any],
        defined: Sequence[str],
        hardware: Mapping[str, Any],
        cluster: Optional[ClusterContext],
    ) -> List[Dict[str, Any]]:
        """Findings about the host's variables that the engine's roles would refuse after the driver and the
        download (inputs.vllm_key_findings, _plan/refusals.py)."""
        return []

    def start(self, plan: Mapping[str, Any], measured: Measured) -> Optional[Dict[str, Any]]:
        """The plan's ``start`` section (how long a start may take), None when the engine has none."""
        return None


class _VllmPlanner(EnginePlanner):
    def key_findings(
        self,
        inputs: HostInputs,
        variables: Mapping[str, Any],
        defined: Sequence[str],
        hardware: Mapping[str, Any],
        cluster: Optional[ClusterContext],
    ) -> List[Dict[str, Any]]:
        found = vllm_key_findings(variables, defined)
        if inputs.standby_ollama is not None:  # installed by the ollama role, which refuses it without a sha256
            standby = inputs.standby_ollama.version
            version_variable = f"{STANDBY_VAR}.version"
            found += plan_findings(
                ollama_checksum_findings(variables, hardware.get("architecture"), standby, version_variable)
                + ollama_pull_findings(variables)
            )
        if cluster is not None and cluster.backend == "ray":
            head = cluster.role == "head"
            found += plan_findings(ray_findings(variables, defined, inputs.engine_version, head))
        return found

    def start(self, plan: Mapping[str, Any], measured: Measured) -> Optional[Dict[str, Any]]:
        return start_timeout(plan["model"]["weights_bytes"], plan["model"]["repo"], measured)


class VllmGpuPlanner(_VllmPlanner):
    """vLLM on NVIDIA GPUs: the planner loop over ranked layouts (vllm_plan.py)."""

    def plan(
        self, inputs: HostInputs, hardware: Mapping[str, Any], measured: Measured, cluster: Optional[ClusterContext]
    ) -> Dict[str, Any]:
        return vllm_plan(inputs, normalize_hardware(hardware), measured, cluster)


class VllmCpuPlanner(_VllmPlanner):
    """vLLM's CPU build (vllm_device: cpu): one process sized from the host's memory (vllm_cpu_plan.py)."""

    def plan(
        self, inputs: HostInputs, hardware: Mapping[str, Any], measured: Measured, cluster: Optional[ClusterContext]
    ) -> Dict[str, Any]:
        return vllm_cpu_plan(inputs, host_memory_mib(hardware), measured, host_cpu_cores(hardware))


class OllamaPlanner(EnginePlanner):
    """Ollama on the host's GPUs (ollama_plan.py)."""

    def plan(
        self, inputs: HostInputs, hardware: Mapping[str, Any], measured: Measured, cluster: Optional[ClusterContext]
    ) -> Dict[str, Any]:
        return ollama_plan(inputs, normalize_hardware(hardware))

    def key_findings(
        self,
        inputs: HostInputs,
        variables: Mapping[str, Any],
        defined: Sequence[str],
        hardware: Mapping[str, Any],
        cluster: Optional[ClusterContext],
    ) -> List[Dict[str, Any]]:
        return plan_findings(
            ollama_checksum_findings(variables, hardware.get("architecture")) + ollama_pull_findings(variables)
        )


# (inputs.engine, inputs.device) -> its planner: the registry, the one place that names the engines here.
PLANNERS: Dict[Tuple[str, str], EnginePlanner] = {
    ("vllm", "cuda"): VllmGpuPlanner(),
    ("vllm", "cpu"): VllmCpuPlanner(),
    ("ollama", "cuda"): OllamaPlanner(),
}


def planner_for(inputs: HostInputs) -> EnginePlanner:
    """The planner of a host's engine and device (validate_inputs admits no other pair)."""
    return PLANNERS[(inputs.engine, inputs.device)]


def host_cpu_cores(hardware: Mapping[str, Any]) -> Optional[int]:
    """The host's physical CPU cores (hardware ``cpu_cores``: the gathered processor facts), if known."""
    value = as_number(hardware.get("cpu_cores"), "int")
    return int(value) if value and value > 0 else None


def host_memory_mib(hardware: Mapping[str, Any]) -> Optional[int]:
    """The host's memory in MiB (hardware ``memory_mib``: inferops_host_memory_mib or ansible_memtotal_mb)."""
    value = as_number(hardware.get("memory_mib"), "int")
    return int(value) if value and value > 0 else None
