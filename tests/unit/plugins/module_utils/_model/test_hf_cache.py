from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._model.hf_cache import (
    CacheLayout,
    DiskSpaceError,
    Manifest,
    ManifestError,
    RepoFile,
    VerificationError,
    bytes_to_fetch,
    check_disk_space,
    fetch_blob,
    file_hashes,
    free_bytes,
    is_commit,
    load_manifest,
    manifest_from_directory,
    mirror_file_url,
    mirror_manifest_url,
    parse_manifest,
    repo_folder_name,
    select_files,
    snapshot_commit,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
CONFIG = b'{"model_type": "llama"}\n'
WEIGHTS = bytes(range(256)) * 64


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def config_file(data: bytes = CONFIG) -> RepoFile:
    return RepoFile("config.json", len(data), git_blob_id(data), sha256(data))


def weights_file(data: bytes = WEIGHTS, path: str = "model.safetensors") -> RepoFile:
    return RepoFile(path, len(data), sha256(data), sha256(data))


def manifest_dict(**overrides):
    data = {
        "format": 1,
        "repo": "tiny/model",
        "commit": COMMIT,
        "revision": "main",
        "files": [config_file().to_dict(), weights_file().to_dict()],
    }
    data.update(overrides)
    return data


class FakeResponse:
    def __init__(self, body: bytes, status: int) -> None:
        self.status = status
        self._body = io.BytesIO(body)

    def read(self, size: int = -1) -> bytes:
        return self._body.read(size)


class RangeServer:
    """Serves one body, honouring 'Range: bytes=N-' like nginx, and records the requests."""

    def __init__(self, body: bytes, honour_range: bool = True) -> None:
        self.body = body
        self.honour_range = honour_range
        self.requests: list[dict] = []

    def __call__(self, url, headers):
        self.requests.append(dict(headers))
        if self.honour_range and "Range" in headers:
            start = int(headers["Range"].split("=")[1].rstrip("-"))
            return FakeResponse(self.body[start:], 206)
        return FakeResponse(self.body, 200)


def test_commit_ids_and_repo_folder():
    assert is_commit(COMMIT)
    assert not is_commit("main")
    assert not is_commit(COMMIT.upper())
    assert repo_folder_name("Qwen/Qwen3-0.6B") == "models--Qwen--Qwen3-0.6B"
    for bad in ("noslash", "a/b/c", "../x", "a/..", "a/b.git", "a/b--c"):
        with pytest.raises(ManifestError, match="org/name"):
            repo_folder_name(bad)


def test_layout_paths_follow_the_hf_cache(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    repo = tmp_path / "hub" / "models--tiny--model"
    assert layout.snapshot_path(COMMIT, "sub/a.json") == str(repo / "snapshots" / COMMIT / "sub" / "a.json")
    assert layout.blob_path("ab") == str(repo / "blobs" / "ab")
    assert layout.ref_path("main") == str(repo / "refs" / "main")
    # download records stay out of hub/, which huggingface_hub's cache scan reads
    assert not layout.record_path(COMMIT).startswith(layout.hub_cache)


def test_parse_manifest_fills_sha256_of_lfs_files_from_blob():
    data = manifest_dict()
    data["files"][1]["sha256"] = None
    manifest = parse_manifest(data)
    assert manifest.commit == COMMIT
    assert {f.path: f.sha256 for f in manifest.files}["model.safetensors"] == sha256(WEIGHTS)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": 2}, "'format' must be 1"),
        ({"commit": "main"}, "'commit' must be a 40-character"),
        ({"repo": "no-slash"}, "org/name"),
        ({"files": []}, "non-empty list"),
        ({"files": [{"path": "../etc/passwd", "size": 1, "blob": COMMIT}]}, "relative"),
        ({"files": [{"path": "a", "size": -1, "blob": COMMIT}]}, "'size' must be"),
        ({"files": [{"path": "a", "size": 1, "blob": "xyz"}]}, "'blob' must be"),
        ({"files": [{"path": "a", "size": 1, "blob": COMMIT}] * 2}, "duplicate path"),
        (
            {"files": [{"path": "a", "size": 1, "blob": sha256(b"a"), "sha256": sha256(b"b")}]},
            "must equal its 'sha256'",
        ),
    ],
)
def test_parse_manifest_rejects_bad_fields(change, message):
    with pytest.raises(ManifestError, match=message):
        parse_manifest(manifest_dict(**change), "http://mirror/m.json")


def test_load_manifest_names_the_source_of_invalid_json():
    with pytest.raises(ManifestError, match=r"http://mirror/m\.json: not valid JSON"):
        load_manifest("{", "http://mirror/m.json")


def test_manifest_json_round_trip():
    manifest = parse_manifest(manifest_dict())
    assert load_manifest(manifest.to_json()) == Manifest(
        manifest.repo, manifest.commit, tuple(sorted(manifest.files, key=lambda f: f.path)), "main"
    )


def test_select_files_uses_huggingface_hub_pattern_rules():
    files = [RepoFile(p, 1, COMMIT) for p in ("config.json", "onnx/model.onnx", "onnx/sub/x.json", "model.gguf")]
    assert [f.path for f in select_files(files, ["*.json"])] == ["config.json", "onnx/sub/x.json"]
    assert [f.path for f in select_files(files, ["onnx/"])] == ["onnx/model.onnx", "onnx/sub/x.json"]
    assert [f.path for f in select_files(files, None, ["onnx/*", "*.gguf"])] == ["config.json"]
    assert [f.path for f in select_files(files, ["*"], None, file="model.gguf")] == ["model.gguf"]


def test_select_files_refuses_empty_selection_and_unknown_file():
    files = [RepoFile("config.json", 1, COMMIT)]
    with pytest.raises(ManifestError, match="select no file"):
        select_files(files, ["*.safetensors"])
    with pytest.raises(ManifestError, match=r"'missing\.gguf' is not in the repository"):
        select_files(files, file="missing.gguf")


def test_file_hashes_match_git_and_sha256(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(CONFIG)
    assert file_hashes(str(path)) == (sha256(CONFIG), git_blob_id(CONFIG))


@pytest.mark.parametrize(
    ("served", "expected", "message"),
    [
        (WEIGHTS[:-1] + b"X", weights_file(), "sha256 .*manifest says"),
        (WEIGHTS[:-1], weights_file(), "size 16383 bytes, manifest says 16384"),
        (b'{"model_type": "llamb"}\n', dataclasses.replace(config_file(), sha256=None), "git blob id .*manifest says"),
    ],
)
def test_fetch_blob_rejects_content_that_differs_from_the_manifest(tmp_path, served, expected, message):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    with pytest.raises(VerificationError, match=f"'{expected.path}' from http://m/x: {message}"):
        fetch_blob(layout, expected, "http://m/x", RangeServer(served))
    assert not os.path.exists(layout.blob_path(expected.blob))
    assert not os.path.exists(layout.incomplete_path(expected.blob)), "a bad partial must not be resumed"


def test_fetch_blob_resumes_an_incomplete_blob_with_a_range_request(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    file = weights_file()
    os.makedirs(layout.blobs_dir)
    with open(layout.incomplete_path(file.blob), "wb") as handle:
        handle.write(WEIGHTS[:1000])
    server = RangeServer(WEIGHTS)
    assert fetch_blob(layout, file, "http://m/x", server) == len(WEIGHTS) - 1000
    assert server.requests == [{"Range": "bytes=1000-"}]
    with open(layout.blob_path(file.blob), "rb") as handle:
        assert handle.read() == WEIGHTS


def test_fetch_blob_starts_over_when_the_server_ignores_range(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    file = weights_file()
    os.makedirs(layout.blobs_dir)
    with open(layout.incomplete_path(file.blob), "wb") as handle:
        handle.write(WEIGHTS[:1000])
    assert fetch_blob(layout, file, "http://m/x", RangeServer(WEIGHTS, honour_range=False)) == len(WEIGHTS)
    assert layout.blob_present(file)


def test_fetch_blob_transfers_nothing_for_a_blob_already_cached(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    file = weights_file()
    assert fetch_blob(layout, file, "http://m/x", RangeServer(WEIGHTS)) == len(WEIGHTS)
    server = RangeServer(WEIGHTS)
    assert fetch_blob(layout, file, "http://m/x", server) == 0
    assert server.requests == []


def test_snapshot_links_are_relative_and_shared_between_revisions(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    file = RepoFile("sub/model.safetensors", len(WEIGHTS), sha256(WEIGHTS), sha256(WEIGHTS))
    fetch_blob(layout, file, "http://m/x", RangeServer(WEIGHTS))
    assert layout.link_snapshot(COMMIT, file) is True
    assert layout.link_snapshot(COMMIT, file) is False
    assert layout.link_snapshot(OTHER_COMMIT, file) is True
    link = layout.snapshot_path(COMMIT, file.path)
    assert os.readlink(link) == os.path.join("..", "..", "..", "blobs", file.blob)
    assert os.path.samefile(link, layout.snapshot_path(OTHER_COMMIT, file.path))
    assert layout.missing_files(COMMIT, [file]) == []
    assert len(os.listdir(layout.blobs_dir)) == 1


def test_missing_files_detects_a_truncated_blob_and_a_wrong_link(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    weights, config = weights_file(), config_file()
    for file, body in ((weights, WEIGHTS), (config, CONFIG)):
        fetch_blob(layout, file, "http://m/x", RangeServer(body))
        layout.link_snapshot(COMMIT, file)
    assert layout.missing_files(COMMIT, [weights, config]) == []
    with open(layout.blob_path(weights.blob), "r+b") as handle:
        handle.truncate(10)
    os.unlink(layout.snapshot_path(COMMIT, "config.json"))
    os.symlink(os.path.join("..", "..", "blobs", weights.blob), layout.snapshot_path(COMMIT, "config.json"))
    assert layout.missing_files(COMMIT, [weights, config]) == [weights, config]
    assert layout.missing_files(OTHER_COMMIT, [config]) == [config]


def test_refs_and_records(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    assert layout.read_ref("main") is None
    assert layout.write_ref("main", COMMIT) is True
    assert layout.write_ref("main", COMMIT) is False
    with open(layout.ref_path("main")) as handle:
        assert handle.read() == COMMIT, "huggingface_hub writes the bare commit, no newline"
    manifest = parse_manifest(manifest_dict())
    assert layout.read_record(COMMIT) is None
    assert layout.write_record(manifest) is True
    assert layout.write_record(manifest) is False
    assert set(layout.read_record(COMMIT).files) == set(manifest.files)
    assert layout.read_record(OTHER_COMMIT) is None
    with open(layout.record_path(COMMIT), "w") as handle:
        handle.write("{broken")
    assert layout.read_record(COMMIT) is None, "a damaged record means 'ask the source again'"


def test_bytes_to_fetch_counts_shared_blobs_once_and_partials_as_remainder(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    weights, config = weights_file(), config_file()
    copy = weights_file(path="copy.safetensors")
    assert bytes_to_fetch(layout, [weights, copy, config]) == len(WEIGHTS) + len(CONFIG)
    os.makedirs(layout.blobs_dir)
    with open(layout.incomplete_path(weights.blob), "wb") as handle:
        handle.write(WEIGHTS[:100])
    assert bytes_to_fetch(layout, [weights, config]) == len(WEIGHTS) - 100 + len(CONFIG)
    fetch_blob(layout, weights, "http://m/x", RangeServer(WEIGHTS))
    assert bytes_to_fetch(layout, [weights, config]) == len(CONFIG)


def test_disk_precheck_names_numbers_and_the_variable(tmp_path):
    check_disk_space(needed=10, free=100, reserve=90, where="/c")
    with pytest.raises(DiskSpaceError, match=r"/c has 100 bytes free; the download needs 11 bytes.*reserve of 90"):
        check_disk_space(needed=11, free=100, reserve=90, where="/c")
    with pytest.raises(DiskSpaceError, match="model_download_hf_home"):
        check_disk_space(needed=11, free=100, reserve=90, where="/c")
    # a cache directory that does not exist yet is measured on its nearest existing parent
    assert free_bytes(str(tmp_path / "not" / "yet")) == free_bytes(str(tmp_path))


def test_mirror_urls():
    assert (
        mirror_file_url("http://m/hf/", "tiny/model", COMMIT, "a b/c.json")
        == f"http://m/hf/tiny/model/{COMMIT}/a%20b/c.json"
    )
    assert mirror_manifest_url("http://m/hf", "tiny/model", "main") == "http://m/hf/tiny/model/manifests/main.json"


def test_manifest_from_a_cache_snapshot_keeps_blob_names(tmp_path):
    layout = CacheLayout(str(tmp_path), "tiny/model")
    for file, body in ((weights_file(), WEIGHTS), (config_file(), CONFIG)):
        fetch_blob(layout, file, "http://m/x", RangeServer(body))
        layout.link_snapshot(COMMIT, file)
    src = layout.snapshot_dir(COMMIT)
    assert snapshot_commit(src) == COMMIT
    manifest = manifest_from_directory(src, "tiny/model", COMMIT, "main")
    assert set(manifest.files) == {weights_file(), config_file()}
    assert json.loads(manifest.to_json())["revision"] == "main"


def test_manifest_from_a_plain_tree_names_blobs_like_the_hub(tmp_path):
    (tmp_path / "config.json").write_bytes(CONFIG)
    (tmp_path / "model.safetensors").write_bytes(WEIGHTS)
    (tmp_path / "notes.txt").write_bytes(WEIGHTS)
    assert snapshot_commit(str(tmp_path)) is None
    manifest = manifest_from_directory(str(tmp_path), "tiny/model", COMMIT)
    blobs = {f.path: f.blob for f in manifest.files}
    assert blobs == {
        "config.json": git_blob_id(CONFIG),
        "model.safetensors": sha256(WEIGHTS),  # *.safetensors is LFS
        "notes.txt": git_blob_id(WEIGHTS),  # small, not an LFS pattern
    }
    assert all(f.sha256 for f in manifest.files)


def test_manifest_from_directory_refuses_bad_input(tmp_path):
    with pytest.raises(ManifestError, match="40-character"):
        manifest_from_directory(str(tmp_path), "tiny/model", "main")
    with pytest.raises(ManifestError, match="holds no files"):
        manifest_from_directory(str(tmp_path), "tiny/model", COMMIT)
    os.symlink("nowhere", tmp_path / "dangling")
    with pytest.raises(ManifestError, match="dangling"):
        manifest_from_directory(str(tmp_path), "tiny/model", COMMIT)


@pytest.mark.parametrize("repo", ["Qwen/Qwen3-8B", "org/name.v1", "x/y_z", "a/b.git", "a/b--c", "a/..", "noslash"])
def test_the_plan_and_the_download_agree_on_repo_ids(repo):
    from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import repo_error

    try:
        repo_folder_name(repo)
        downloadable = True
    except ManifestError:
        downloadable = False
    assert (repo_error(repo) == "") is downloadable
