"""tests/bin/vllm-architectures: the registry tables it reads, the release spans it writes, and one zip member
read through range requests (here from bytes in memory: the tests have no network)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[3]
tool = load_script(ROOT / "tests" / "bin" / "vllm-architectures", "vllm_architectures")

REGISTRY = b"""
_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "MistralForCausalLM": ("llama", "LlamaForCausalLM"),
    "Qwen2ForCausalLM": ("qwen2", "Qwen2ForCausalLM"),
}
_EMBEDDING_MODELS: dict[str, tuple[str, str]] = {
    **{k: (mod, arch) for k, (mod, arch) in _TEXT_GENERATION_MODELS.items() if arch == "LlamaForCausalLM"},
    "BertModel": ("bert", "BertEmbeddingModel"),
}
_VLLM_MODELS = {**_TEXT_GENERATION_MODELS, **_EMBEDDING_MODELS}
_SUBPROCESS_COMMAND = ["python"]
_lower_models = {"Ignored": ("x", "y")}
"""


def test_the_registry_tables_are_evaluated_without_running_vllm():
    tables = tool.registry_tables(REGISTRY, "registry.py")
    assert list(tables) == ["_TEXT_GENERATION_MODELS", "_EMBEDDING_MODELS", "_VLLM_MODELS"]
    assert sorted(tables["_EMBEDDING_MODELS"]) == ["BertModel", "LlamaForCausalLM", "MistralForCausalLM"]
    assert len(tables["_VLLM_MODELS"]) == 4


def test_a_table_that_calls_anything_is_refused():
    with pytest.raises(NameError):
        tool.registry_tables(b'_X_MODELS = {"A": open("/etc/passwd")}\n_VLLM_MODELS = {}\n', "registry.py")
    with pytest.raises(ValueError, match="no _VLLM_MODELS"):
        tool.registry_tables(b'_X_MODELS = {"A": ("a", "A")}\n', "registry.py")


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        ([True, True, True, True], [["a", None]]),
        ([True, True, False, True], [["a", "b"], ["d", None]]),
        ([False, True, True, False], [["b", "c"]]),
        ([True, False, False, False], [["a", "a"]]),
        ([False, False, False, True], [["d", None]]),
    ],
)
def test_spans(present, expected):
    assert tool.spans(present, ["a", "b", "c", "d"]) == expected


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_one_member_is_read_through_the_zip_directory(monkeypatch, method):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        archive.writestr("vllm/__init__.py", b"x" * 5000)
        archive.writestr(tool.REGISTRY, REGISTRY)
        archive.writestr("vllm/other.py", b"y" * 5000)
    data = buffer.getvalue()
    reads = []

    def ranged(url, start, end):
        reads.append((start, end))
        return data[start : end + 1]

    monkeypatch.setattr(tool, "_range", ranged)
    assert tool.zip_member("https://example.invalid/vllm.whl", len(data), tool.REGISTRY) == REGISTRY
    assert len(reads) == 4  # the tail, the directory, the local header, the member
    with pytest.raises(KeyError):
        tool.zip_member("https://example.invalid/vllm.whl", len(data), "vllm/missing.py")
