# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The engine seam (_plan/engines.py): every engine and device the inputs admit has a planner, and
build_plan switches on no engine name (issue 23, part 2)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines import facts
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


ROOT = Path(__file__).resolve().parents[5]
# The code after the plan reads _engines/facts.py instead of comparing engine names (issue 23, part 2).
AFTER_THE_PLAN = (
    "plugins/module_utils/_plan/service.py",
    "plugins/module_utils/_plan/report.py",
    "plugins/module_utils/_plan/picture.py",
    "plugins/module_utils/_plan/metrics.py",
    "plugins/module_utils/_plan/scrape.py",
    "plugins/action/plan_fleet.py",
)


def _engine_comparisons(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                if isinstance(operand, ast.Constant) and operand.value in ENGINES:
                    yield f"{path.name}:{node.lineno} compares with {operand.value!r}"


@pytest.mark.parametrize("path", AFTER_THE_PLAN)
def test_the_code_after_the_plan_switches_on_no_engine_name(path):
    found = list(_engine_comparisons(ROOT / path))
    assert not found, f"{found}: read the engine's record in _engines/facts.py instead"


def test_the_scanner_sees_a_comparison(tmp_path):
    source = tmp_path / "example.py"
    source.write_text('def f(plan):\n    return plan["engine"] == "ollama"\n')
    assert list(_engine_comparisons(source)) == ["example.py:2 compares with 'ollama'"]


def test_the_engine_records_are_the_admitted_engines_and_match_the_roles():
    assert tuple(facts.ENGINES) == ENGINES
    for name, record in facts.ENGINES.items():
        defaults = yaml.safe_load((ROOT / "roles" / name / "defaults" / "main.yml").read_text(encoding="utf-8"))
        assert defaults[record.port_variable] == record.default_port, name
        assert record.listen_variable in defaults, name
        if record.api_key_variable:
            spec = yaml.safe_load((ROOT / "roles" / name / "meta" / "argument_specs.yml").read_text(encoding="utf-8"))
            assert record.api_key_variable in spec["argument_specs"]["main"]["options"], name
