# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The engine seam (_plan/engines.py): every engine and device the inputs admit has a planner, and
build_plan switches on no engine name (issue 23, part 2)."""

from __future__ import annotations

import ast
import inspect

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._plan import engines, planner
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import ENGINES, VLLM_DEVICES


def _admitted():
    for engine in ENGINES:
        for device in VLLM_DEVICES if engine == "vllm" else ("cuda",):
            yield engine, device


@pytest.mark.parametrize(("engine", "device"), list(_admitted()))
def test_every_engine_and_device_the_inputs_admit_has_a_planner(engine, device):
    assert isinstance(engines.PLANNERS[(engine, device)], engines.EnginePlanner)
    assert type(engines.PLANNERS[(engine, device)]).plan is not engines.EnginePlanner.plan


def test_the_registry_holds_nothing_the_inputs_refuse():
    assert set(engines.PLANNERS) == set(_admitted())


def test_build_plan_names_no_engine():
    tree = ast.parse(inspect.getsource(planner.build_plan))
    named = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in ENGINES]
    assert named == [], f"build_plan switches on engine names {named}: add the behaviour to the engine's planner"


def test_the_cpu_device_picks_the_cpu_build():
    class Inputs:
        engine, device = "vllm", "cpu"

    assert isinstance(engines.planner_for(Inputs()), engines.VllmCpuPlanner)
    Inputs.device = "cuda"
    assert isinstance(engines.planner_for(Inputs()), engines.VllmGpuPlanner)
    Inputs.engine = "ollama"
    assert engines.planner_for(Inputs()).start({}, None) is None  # only vLLM has a start section
