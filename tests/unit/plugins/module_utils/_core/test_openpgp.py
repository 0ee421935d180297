"""_core.openpgp: fingerprints of repository key files and the check against pinned ones (case table:
openpgp_cases.yml; the key files in openpgp_keys/, their fingerprints as gpg --show-keys printed them)."""

from __future__ import annotations

import base64
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.filter.apt_key import apt_key_error
from ansible_collections.inferops.llm.plugins.module_utils._core import openpgp

HERE = pathlib.Path(__file__).parent
KEYS = HERE / "openpgp_keys"
CASES = yaml.safe_load((HERE / "openpgp_cases.yml").read_text())
VARIABLE = "nvidia_driver_cuda_repo_key_fingerprints"


def _nvidia_binary() -> bytes:
    text = (KEYS / "nvidia-cuda-3bf863cc.asc").read_text()
    lines = text.split("\n\n", 1)[1].splitlines()
    return base64.b64decode("".join(line for line in lines if line and not line.startswith(("=", "-----"))))


def _armor(data: bytes) -> str:
    encoded = base64.b64encode(data).decode()
    body = "\n".join(encoded[i : i + 64] for i in range(0, len(encoded), 64))
    return f"{openpgp.ARMOR_BEGIN}\n\n{body}\n{openpgp.ARMOR_END}\n"


def _tampered_modulus() -> str:
    data = bytearray(_nvidia_binary())
    data[20] ^= 0x01  # inside the RSA modulus of the public key packet (its body starts at octet 3)
    return _armor(bytes(data))


def _secret_key_tag() -> str:
    data = bytearray(_nvidia_binary())
    assert data[0] == 0x99  # old format, tag 6 (public key), two-octet length
    data[0] = 0x80 | (5 << 2) | 1  # the same packet tagged as a secret key
    return _armor(bytes(data))


DERIVED = {
    "tampered-modulus": _tampered_modulus,
    "secret-key-tag": _secret_key_tag,
    "truncated": lambda: _armor(_nvidia_binary()[:300]),
    "html": lambda: "<html><body>404 Not Found</body></html>\n",
    "no-end-line": lambda: (KEYS / "nvidia-cuda-3bf863cc.asc").read_text().replace(openpgp.ARMOR_END, ""),
}


def content(case):
    if "bytes" in case:
        return DERIVED[case["bytes"]]()
    path = KEYS / case["key"]
    return path.read_bytes() if path.suffix == ".gpg" else path.read_text()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_key_check(case):
    found = openpgp.key_error(content(case), case["expected"], "at http://example.invalid/key.pub", VARIABLE)
    if "error" in case:
        assert case["error"] in found
        assert VARIABLE in found  # the variable that sets what is expected, in every refusal
    else:
        assert found == ""
    # The filter the role calls gives the same answer.
    assert apt_key_error(content(case), case["expected"], "at http://example.invalid/key.pub", VARIABLE) == found


@pytest.mark.parametrize("case", [case for case in CASES if "fingerprints" in case], ids=lambda case: case["id"])
def test_fingerprints_are_gpgs(case):
    assert openpgp.primary_fingerprints(content(case)) == case["fingerprints"]


@pytest.mark.skipif(shutil.which("gpg") is None, reason="gpg is not installed")
@pytest.mark.parametrize("name", sorted(path.name for path in KEYS.iterdir()))
def test_fingerprints_match_gpg_here(name, tmp_path):
    """Where gpg is installed, it computes the same fingerprints from every key file."""
    listed = subprocess.run(
        ["gpg", "--homedir", str(tmp_path), "--show-keys", "--with-colons", str(KEYS / name)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # The first fpr line after each pub line is the primary key's.
    gpg = re.findall(r"^pub:.*\n(?:.*\n)*?fpr:+([0-9A-F]+):", listed, flags=re.MULTILINE)
    path = KEYS / name
    assert openpgp.primary_fingerprints(path.read_bytes() if path.suffix == ".gpg" else path.read_text()) == gpg


def test_the_pinned_nvidia_fingerprint_is_the_published_key_files():
    from ansible_collections.inferops.llm.plugins.module_utils._hardware import nvidia_drivers

    pinned = nvidia_drivers.cuda_repo_key("Debian", "12")["fingerprints"]
    assert openpgp.key_error((KEYS / "nvidia-cuda-3bf863cc.asc").read_text(), pinned, "here", VARIABLE) == ""


def test_the_fingerprint_of_a_version_6_key_is_sha256_of_the_packet():
    body = bytes([6]) + bytes(40)
    packet = bytes([0xC0 | 6, len(body)]) + body  # new format, tag 6
    import hashlib

    expected = hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    assert openpgp.primary_fingerprints(packet) == [expected]
    assert openpgp.normal_fingerprint(expected.lower()) == expected
