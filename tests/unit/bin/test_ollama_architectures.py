"""tests/bin/ollama-architectures: the names it reads from a release tag of ollama/ollama (here a repository made
in the test with the same layout: the tests have no network)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[3]
tool = load_script(ROOT / "tests" / "bin" / "ollama-architectures", "ollama_architectures")

LLAMA_ARCH = """
static const std::map<llm_arch, const char *> LLM_ARCH_NAMES = {
    { LLM_ARCH_LLAMA,            "llama"            },
    { LLM_ARCH_GPT_OSS,          "gpt-oss"          },
    { LLM_ARCH_UNKNOWN,          "(unknown)"        },
};

static const std::map<llm_kv, const char *> LLM_KV_NAMES = {
    { LLM_KV_GENERAL_TYPE, "general.type" },
};
"""
GO_MODEL = 'func init() {\n\tmodel.Register("gptoss", New)\n\tmodel.Register("gpt-oss", New)\n}\n'


def test_the_names_of_llama_cpp_and_of_the_go_engine():
    assert tool.llama_cpp_names(LLAMA_ARCH) == ["gpt-oss", "llama"]
    assert tool.go_engine_names(GO_MODEL) == ["gpt-oss", "gptoss"]
    with pytest.raises(ValueError, match="no LLM_ARCH_NAMES table"):
        tool.llama_cpp_names("")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_each_release_tag_is_read(tmp_path):
    work = tmp_path / "ollama"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"

    def git(*args):
        subprocess.run(["git", "-C", str(work), *args], check=True, capture_output=True, env=env)

    (work / "llama/llama.cpp/src").mkdir(parents=True)
    (work / "model/models/gptoss").mkdir(parents=True)
    (work / "llama/llama.cpp/src/llama-arch.cpp").write_text(LLAMA_ARCH)
    (work / "model/models/gptoss/model.go").write_text(GO_MODEL)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "vendored")
    git("tag", "v0.12.11")
    (work / "LLAMA_CPP_VERSION").write_text("b9452\n")
    git("add", "-A")
    git("commit", "-qm", "upstream llama-server")
    git("tag", "v0.30.0")
    records = tmp_path / "releases.json"
    records.write_text(json.dumps({"releases": {"0.30.0": {}, "0.9.7": {}, "0.12.11": {}}}))
    out = tmp_path / "architectures.json"
    assert tool.main([str(work / ".git"), str(out), "--releases-of", str(records)]) == 0
    data = json.loads(out.read_text())
    assert data["not_tagged"] == ["0.9.7"]
    old, new = data["releases"]["0.12.11"], data["releases"]["0.30.0"]
    assert old["architectures"] == ["gpt-oss", "gptoss", "llama"]
    assert (old["llama_cpp_names"], old["go_engine_names"], old["tag"], len(old["commit"])) == (2, 2, "v0.12.11", 40)
    assert (new["llama_cpp"], new["architectures"]) == ("b9452", None)
