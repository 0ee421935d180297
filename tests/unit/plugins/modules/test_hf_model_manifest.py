from __future__ import annotations

import hashlib
import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import CacheLayout, RepoFile, load_manifest
from ansible_collections.inferops.llm.plugins.modules import hf_model_manifest

REPO = "tiny/model"
COMMIT = "c" * 40


def run_module(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        hf_model_manifest.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def snapshot(tmp_path):
    """A cache snapshot whose weights blob is named by sha256, as huggingface_hub stores it."""
    layout = CacheLayout(str(tmp_path / "hf"), REPO)
    weights = os.urandom(4096)
    file = RepoFile("model.safetensors", len(weights), hashlib.sha256(weights).hexdigest())
    os.makedirs(layout.blobs_dir)
    with open(layout.blob_path(file.blob), "wb") as handle:
        handle.write(weights)
    layout.link_snapshot(COMMIT, file)
    return layout.snapshot_dir(COMMIT), file


def test_publishes_a_snapshot_once(snapshot, tmp_path, capsys):
    src, weights = snapshot
    root = tmp_path / "mirror"
    args = {"src": src, "repo": REPO, "revision": "main", "mirror_root": str(root)}
    first = run_module(capsys, **args)
    assert first["changed"] is True
    assert first["files_path"] == str(root / "tiny" / "model" / COMMIT)
    assert os.path.realpath(first["files_path"]) == os.path.realpath(src)
    for name in (COMMIT, "main"):
        manifest = load_manifest((root / "tiny" / "model" / "manifests" / f"{name}.json").read_text())
        assert manifest.commit == COMMIT  # commit taken from the snapshot directory name
        assert manifest.files == (RepoFile(weights.path, weights.size, weights.blob, weights.blob),)
    assert run_module(capsys, **args)["changed"] is False


def test_check_mode_writes_nothing(snapshot, tmp_path, capsys):
    root = tmp_path / "mirror"
    result = run_module(capsys, src=snapshot[0], repo=REPO, mirror_root=str(root), _ansible_check_mode=True)
    assert result["changed"] is True
    assert not root.exists()


def test_plain_directory_needs_the_commit(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{}")
    result = run_module(capsys, src=str(tmp_path), repo=REPO, mirror_root=str(tmp_path / "m"))
    assert result["failed"] is True
    assert "commit is required" in result["msg"]


def test_refuses_to_replace_a_directory_on_the_mirror(snapshot, tmp_path, capsys):
    root = tmp_path / "mirror"
    (root / "tiny" / "model" / COMMIT).mkdir(parents=True)
    result = run_module(capsys, src=snapshot[0], repo=REPO, mirror_root=str(root))
    assert result["failed"] is True
    assert "exists and is not a link" in result["msg"]
