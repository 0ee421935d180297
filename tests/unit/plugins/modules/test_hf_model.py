"""hf_model against a real HTTP mirror on localhost (the module's own HTTP client, Range requests included)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import sys
import threading
import types
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import CacheLayout, manifest_from_directory
from ansible_collections.inferops.llm.plugins.modules import hf_model

REPO = "tiny/model"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
WEIGHTS = os.urandom(64 * 1024)


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with 'Range: bytes=N-' support, as nginx serves them; counts GETs per path."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.requests.append(self.path)
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        body = path.read_bytes()
        start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        self.wfile.write(body[start:])


@pytest.fixture
def mirror(tmp_path):
    """A mirror with two commits of one repo: config.json differs, the weights are the same."""
    root = tmp_path / "mirror"
    for commit, config, revision in ((COMMIT_A, b'{"v": 1}\n', "main"), (COMMIT_B, b'{"v": 2}\n', None)):
        files = root / REPO / commit
        files.mkdir(parents=True)
        (files / "config.json").write_bytes(config)
        (files / "model.safetensors").write_bytes(WEIGHTS)
        manifest = manifest_from_directory(str(files), REPO, commit, revision)
        for name in (commit, revision):
            if name:
                (root / REPO / "manifests").mkdir(exist_ok=True)
                (root / REPO / "manifests" / f"{name}.json").write_text(manifest.to_json())
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(MirrorHandler, directory=str(root)))
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.root = root
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield server
    server.shutdown()


def run_module(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        hf_model.main()
    return json.loads(capsys.readouterr().out)


def mirror_args(mirror, hf_home, revision=COMMIT_A, **extra):
    return {
        "repo": REPO,
        "revision": revision,
        "hf_home": str(hf_home),
        "source": "mirror",
        "mirror_url": mirror.url,
        "reserve_bytes": 0,
        **extra,
    }


def test_download_then_rerun_transfers_nothing_and_needs_no_network(mirror, tmp_path, capsys):
    hf_home = tmp_path / "hf"
    first = run_module(capsys, **mirror_args(mirror, hf_home))
    assert first["changed"] is True
    assert first["transferred"] == ["config.json", "model.safetensors"]
    assert first["commit"] == COMMIT_A
    snapshot = Path(first["snapshot_path"])
    assert snapshot == hf_home / "hub" / "models--tiny--model" / "snapshots" / COMMIT_A
    assert (snapshot / "model.safetensors").read_bytes() == WEIGHTS
    assert os.readlink(snapshot / "model.safetensors") == "../../blobs/" + hashlib.sha256(WEIGHTS).hexdigest()

    mirror.shutdown()  # the mirror is gone: a commit that is complete locally must not need it
    second = run_module(capsys, **mirror_args(mirror, hf_home))
    assert second["changed"] is False
    assert second["transferred"] == []
    assert second["bytes_to_fetch"] == 0


def test_second_revision_shares_the_weights_blob(mirror, tmp_path, capsys):
    hf_home = tmp_path / "hf"
    run_module(capsys, **mirror_args(mirror, hf_home))
    mirror.requests.clear()
    second = run_module(capsys, **mirror_args(mirror, hf_home, revision=COMMIT_B))
    assert second["changed"] is True
    assert second["transferred"] == ["config.json", "model.safetensors"], "both links are new"
    assert second["bytes_to_fetch"] == len(b'{"v": 2}\n'), "only the changed config crosses the network"
    assert mirror.requests == [f"/{REPO}/manifests/{COMMIT_B}.json", f"/{REPO}/{COMMIT_B}/config.json"]
    layout = CacheLayout(str(hf_home), REPO)
    assert len(os.listdir(layout.blobs_dir)) == 3
    assert os.path.samefile(
        layout.snapshot_path(COMMIT_A, "model.safetensors"), layout.snapshot_path(COMMIT_B, "model.safetensors")
    )


def test_branch_revision_warns_and_writes_the_ref(mirror, tmp_path, capsys):
    hf_home = tmp_path / "hf"
    result = run_module(capsys, **mirror_args(mirror, hf_home, revision="main", file="config.json"))
    assert "'main' of tiny/model is a branch or tag, not a commit" in json.dumps(result["warnings"])
    assert result["file_path"].endswith(f"snapshots/{COMMIT_A}/config.json")
    assert result["files"] == ["config.json"]
    assert CacheLayout(str(hf_home), REPO).read_ref("main") == COMMIT_A
    again = run_module(capsys, **mirror_args(mirror, hf_home, revision="main", file="config.json"))
    assert again["changed"] is False


def test_check_mode_reports_the_transfer_and_writes_nothing(mirror, tmp_path, capsys):
    hf_home = tmp_path / "hf"
    result = run_module(capsys, _ansible_check_mode=True, **mirror_args(mirror, hf_home))
    assert result["changed"] is True
    assert result["bytes_to_fetch"] == len(WEIGHTS) + len(b'{"v": 1}\n')
    assert not hf_home.exists()


def test_checksum_mismatch_fails_clearly_and_keeps_nothing(mirror, tmp_path, capsys):
    hf_home = tmp_path / "hf"
    tampered = bytearray(WEIGHTS)
    tampered[0] ^= 0xFF
    (mirror.root / REPO / COMMIT_A / "model.safetensors").write_bytes(bytes(tampered))
    result = run_module(capsys, **mirror_args(mirror, hf_home))
    assert result["failed"] is True
    assert f"'model.safetensors' from {mirror.url}/{REPO}/{COMMIT_A}/model.safetensors: sha256" in result["msg"]
    layout = CacheLayout(str(hf_home), REPO)
    assert layout.read_record(COMMIT_A) is None, "a failed run must not mark the commit complete"
    assert [n for n in os.listdir(layout.blobs_dir) if n.endswith(".incomplete")] == []


def test_not_enough_space_fails_before_any_transfer(mirror, tmp_path, capsys):
    result = run_module(capsys, **mirror_args(mirror, tmp_path / "hf", reserve_bytes=2**62))
    assert result["failed"] is True
    assert "model_download_reserve_bytes" in result["msg"]
    assert mirror.requests == [f"/{REPO}/manifests/{COMMIT_A}.json"]


def test_unknown_file_and_wrong_manifest_commit_are_named(mirror, tmp_path, capsys):
    result = run_module(capsys, **mirror_args(mirror, tmp_path / "hf", file="model.gguf"))
    assert result["msg"] == "file 'model.gguf' is not in the repository at this commit"
    os.replace(
        mirror.root / REPO / "manifests" / f"{COMMIT_B}.json", mirror.root / REPO / "manifests" / f"{COMMIT_A}.json"
    )
    result = run_module(capsys, **mirror_args(mirror, tmp_path / "hf"))
    assert f"describes commit {COMMIT_B}, not {COMMIT_A}" in result["msg"]


def test_hub_source_maps_lfs_and_git_files_to_hf_blob_names(tmp_path, capsys, monkeypatch):
    """The Hub cannot be reached here: a stand-in huggingface_hub returns model_info metadata in the
    Hub's shape and stores files the way hf_hub_download does (blob named by etag, relative link)."""
    config = b'{"v": 1}\n'
    weights_sha = hashlib.sha256(WEIGHTS).hexdigest()
    config_oid = hashlib.sha1(b"blob %d\0" % len(config) + config).hexdigest()
    calls = {}

    class HfApi:
        def __init__(self, endpoint=None):
            pass

        def model_info(self, repo, revision, files_metadata, token):
            calls["token"] = token
            siblings = [
                types.SimpleNamespace(rfilename="config.json", size=len(config), blob_id=config_oid, lfs=None),
                types.SimpleNamespace(
                    rfilename="model.safetensors",
                    size=len(WEIGHTS),
                    blob_id="f" * 40,  # git oid of the LFS pointer, not the cache blob name
                    lfs={"sha256": weights_sha, "size": len(WEIGHTS), "pointer_size": 134},
                ),
            ]
            return types.SimpleNamespace(sha=COMMIT_A, siblings=siblings)

    def hf_hub_download(repo, filename, revision, cache_dir, token, endpoint):
        layout = CacheLayout(os.path.dirname(cache_dir), repo)
        body, blob = (config, config_oid) if filename == "config.json" else (WEIGHTS, weights_sha)
        os.makedirs(layout.blobs_dir, exist_ok=True)
        Path(layout.blob_path(blob)).write_bytes(body)
        os.makedirs(layout.snapshot_dir(revision), exist_ok=True)
        os.symlink(f"../../blobs/{blob}", layout.snapshot_path(revision, filename))
        return layout.snapshot_path(revision, filename)

    fake = types.SimpleNamespace(HfApi=HfApi, hf_hub_download=hf_hub_download)
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    monkeypatch.setattr(os, "environ", dict(os.environ))
    hf_home = tmp_path / "hf"
    args = {"repo": REPO, "revision": "main", "hf_home": str(hf_home), "reserve_bytes": 0, "token": "hf_secret"}
    result = run_module(capsys, **args)
    assert result["changed"] is True
    assert calls["token"] == "hf_secret"
    assert "hf_secret" not in json.dumps(result)
    assert os.environ["HF_HOME"] == str(hf_home)
    record = CacheLayout(str(hf_home), REPO).read_record(COMMIT_A)
    assert {f.path: f.blob for f in record.files} == {"config.json": config_oid, "model.safetensors": weights_sha}
    assert run_module(capsys, **{**args, "revision": COMMIT_A})["changed"] is False


def test_hub_source_without_huggingface_hub_says_which_interpreter(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    monkeypatch.setattr(os, "environ", dict(os.environ))
    result = run_module(capsys, repo=REPO, revision=COMMIT_A, hf_home=str(tmp_path))
    assert result["failed"] is True
    assert "huggingface_hub" in result["msg"] and "virtual environment" in result["msg"]
