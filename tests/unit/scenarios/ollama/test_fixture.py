"""The Ollama fixture of extensions/molecule/ollama reads environment and Modelfiles with Ollama's rules.

The cases are in fixture_cases.yml.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[4]
CASES = yaml.safe_load((Path(__file__).with_name("fixture_cases.yml")).read_text())
fixture = load_script(ROOT / "extensions" / "molecule" / "ollama" / "fixture" / "ollama.py", "ollama_fixture")


def _table(name):
    return list(CASES[name].items())


@pytest.mark.parametrize(("value", "expected"), _table("host"))
def test_host(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_HOST", value)
    assert fixture.host_url() == expected


@pytest.mark.parametrize(("value", "expected"), _table("bool"))
def test_bool(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_BOOL", value)
    assert fixture.env_bool("OLLAMA_BOOL") is expected


@pytest.mark.parametrize(("value", "expected"), _table("uint"))
def test_uint(monkeypatch, capsys, value, expected):
    monkeypatch.setenv("OLLAMA_UINT", value)
    assert fixture.env_uint("OLLAMA_UINT", 11434) == expected
    warned = 'msg="invalid environment variable, using default" key=OLLAMA_UINT' in capsys.readouterr().err
    assert warned is (value != "" and expected == 11434)


@pytest.mark.parametrize(("value", "expected"), _table("keep_alive"))
def test_keep_alive(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_KEEP_ALIVE", value)
    assert fixture.format_duration(fixture.env_duration("OLLAMA_KEEP_ALIVE", 5 * 60 * 10**9)) == expected


@pytest.mark.parametrize(("value", "expected"), _table("load_timeout"))
def test_load_timeout(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_LOAD_TIMEOUT", value)
    got = fixture.env_duration("OLLAMA_LOAD_TIMEOUT", 5 * 60 * 10**9, zero_is_infinite=True)
    assert fixture.format_duration(got) == expected


@pytest.mark.parametrize(("value", "expected"), _table("var"))
def test_var(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_VAR", value)
    assert fixture.var("OLLAMA_VAR") == expected


@pytest.mark.parametrize(("value", "expected"), _table("log_level"))
def test_log_level(monkeypatch, value, expected):
    monkeypatch.setenv("OLLAMA_DEBUG", value)
    assert fixture.log_level() == expected


@pytest.mark.parametrize("case", CASES["modelfile"], ids=lambda case: case["error"] or "accepted")
def test_modelfile(tmp_path, case):
    (tmp_path / "foo").write_bytes(b"GGUF")
    try:
        fixture.create_request(fixture.parse_modelfile(case["text"]), str(tmp_path))
    except fixture.ModelfileError as error:
        assert str(error) == case["error"]
    else:
        assert case["error"] == ""


def test_accepted_modelfile_values_are_typed(tmp_path):
    (tmp_path / "foo").write_bytes(b"GGUF")
    text = CASES["modelfile"][-1]["text"]
    source, parameters = fixture.create_request(fixture.parse_modelfile(text), str(tmp_path))
    assert source == str(tmp_path / "foo")
    assert parameters == {"num_ctx": 8192, "temperature": 0.6, "stop": ["<|im_end|>", "<|endoftext|>"]}


def test_server_config_line_holds_the_effective_values(monkeypatch, capsys):
    monkeypatch.setenv("OLLAMA_CONTEXT_LENGTH", "8k")
    monkeypatch.setenv("OLLAMA_FLASH_ATTENTION", "1")
    monkeypatch.setenv("OLLAMA_KEEP_ALIVE", "-1")
    line = fixture.server_config()
    assert " OLLAMA_CONTEXT_LENGTH:0 " in line and " OLLAMA_FLASH_ATTENTION:true " in line
    assert " OLLAMA_KEEP_ALIVE:2562047h47m16.854775807s " in line and line.startswith("map[CUDA_VISIBLE_DEVICES:")
    assert "value=8k default=0" in capsys.readouterr().err
