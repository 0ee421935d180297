# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The fingerprints of an OpenPGP key file, and the check of an apt repository key against pinned ones
(issue 28, docs/security.md "Apt repository keys").

A repository key is fetched by the host and must be checked before apt trusts it: every primary key the
file holds must have one of the fingerprints the collection pins (data with its source, for example
``_hardware/nvidia_drivers.json``), or the user's override. The fingerprint is computed here from the key
packets as RFC 4880 and RFC 9580 define it (what ``gpg --show-keys --with-colons`` prints as ``fpr``), so
the host needs no GnuPG (Debian's apt ships only gpgv, which cannot list keys):

- version 4: SHA-1 of 0x99, the two-octet length of the key packet's body, and the body;
- version 6 (RFC 9580): SHA-256 of 0x9B, the four-octet length and the body; version 5 (the LibrePGP
  draft) the same with 0x9A.

Plain typed Python without Ansible; the inferops.llm.apt_key_error filter calls it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from typing import Iterator, List, Sequence, Tuple, Union

ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
ARMOR_END = "-----END PGP PUBLIC KEY BLOCK-----"
_PUBLIC_KEY = 6
_SECRET_KEY = 5
_SECRET_SUBKEY = 7
_FINGERPRINT = re.compile(r"[0-9A-F]{40}|[0-9A-F]{64}")


class OpenPGPError(ValueError):
    """A key file that cannot be read as OpenPGP public keys."""


def _dearmor(text: str) -> List[bytes]:
    """The binary of each ASCII-armored public key block in ``text`` (RFC 4880 section 6.2)."""
    blocks: List[bytes] = []
    lines = iter(text.splitlines())
    for line in lines:
        if line.strip() != ARMOR_BEGIN:
            continue
        # Armor headers ("Version: ...", "Comment: ...") end at the first empty line.
        for header in lines:
            if not header.strip():
                break
        data: List[str] = []
        for body in lines:
            stripped = body.strip()
            if stripped == ARMOR_END:
                break
            if stripped.startswith("=") and len(stripped) == 5:  # the CRC-24 line
                continue
            data.append(stripped)
        else:
            raise OpenPGPError(f"an armored key block has no '{ARMOR_END}' line")
        try:
            blocks.append(base64.b64decode("".join(data), validate=True))
        except (binascii.Error, ValueError) as error:
            raise OpenPGPError(f"an armored key block is not valid base64 ({error})") from None
    return blocks


def _packets(data: bytes) -> Iterator[Tuple[int, bytes]]:
    """(tag, body) of each OpenPGP packet (RFC 4880 section 4.2: old and new packet formats)."""
    position = 0
    while position < len(data):
        first = data[position]
        if not first & 0x80:
            raise OpenPGPError(f"octet {position} is not the start of an OpenPGP packet")
        position += 1
        if first & 0x40:  # new format
            tag = first & 0x3F
            if position >= len(data):
                raise OpenPGPError("a packet ends inside its length")
            octet = data[position]
            if octet < 192:
                length, position = octet, position + 1
            elif octet < 224:
                if position + 1 >= len(data):
                    raise OpenPGPError("a packet ends inside its length")
                length, position = ((octet - 192) << 8) + data[position + 1] + 192, position + 2
            elif octet == 255:
                length, position = int.from_bytes(data[position + 1 : position + 5], "big"), position + 5
            else:  # partial body lengths: only for data packets, never for keys
                raise OpenPGPError(f"packet of tag {tag} has a partial body length, which keys do not use")
        else:  # old format
            tag = (first >> 2) & 0x0F
            kind = first & 0x03
            if kind == 3:
                length = len(data) - position
            else:
                size = (1, 2, 4)[kind]
                length, position = int.from_bytes(data[position : position + size], "big"), position + size
        body = data[position : position + length]
        if len(body) != length:
            raise OpenPGPError(f"a packet of tag {tag} is cut short ({len(body)} of {length} octets)")
        position += length
        yield tag, body


def _fingerprint(body: bytes) -> str:
    version = body[0] if body else 0
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()
    if version in (5, 6):
        prefix = b"\x9a" if version == 5 else b"\x9b"
        return hashlib.sha256(prefix + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise OpenPGPError(f"a version {version} key: only version 4, 5 and 6 keys have the fingerprints apt checks")


def primary_fingerprints(content: Union[str, bytes]) -> List[str]:
    """The fingerprint of every primary public key in a key file, armored or binary, in file order."""
    if isinstance(content, str):
        if ARMOR_BEGIN not in content:
            raise OpenPGPError("the file is not an ASCII-armored OpenPGP public key block")
        blocks = _dearmor(content)
    elif ARMOR_BEGIN.encode() in content:
        blocks = _dearmor(content.decode("ascii", errors="replace"))
    else:
        blocks = [content]
    found: List[str] = []
    for block in blocks:
        for tag, body in _packets(block):
            if tag in (_SECRET_KEY, _SECRET_SUBKEY):
                raise OpenPGPError("the file holds a secret key, never a repository key")
            if tag == _PUBLIC_KEY:
                found.append(_fingerprint(body))
    return found


def normal_fingerprint(value: object) -> str:
    """``"EB69 3B30 ..."`` or ``"0xeb693b..."`` as 40 (or 64) upper-case hex digits; '' when it is none."""
    text = re.sub(r"\s+", "", str(value)).upper()
    text = text[2:] if text.startswith("0X") else text
    return text if _FINGERPRINT.fullmatch(text) else ""


def key_error(content: Union[str, bytes], expected: Sequence[object], where: str, variable: str) -> str:
    """'' when the key file holds only keys of the ``expected`` fingerprints (at least one), else the
    message: what was found, what was expected, and the variable that sets it."""
    wanted = [normal_fingerprint(item) for item in expected]
    bad = [str(item) for item, normal in zip(expected, wanted) if not normal]
    if bad or not wanted:
        shown = ", ".join(repr(item[:60]) for item in bad) or "none"
        return (
            f"{variable}: {shown} is not a full key fingerprint: set the 40 hexadecimal digits (64 for a "
            f"version 6 key) the repository's owner publishes, for example EB693B3035CD5710E231E123A4B469963BF863CC"
        )
    expected_text = ", ".join(wanted)
    try:
        found = primary_fingerprints(content)
    except OpenPGPError as error:
        return f"The repository key {where} cannot be read ({error}): expected a key of {expected_text} ({variable})."
    if not found:
        return f"The repository key {where} holds no OpenPGP public key: expected {expected_text} ({variable})."
    unexpected = [fingerprint for fingerprint in found if fingerprint not in wanted]
    if unexpected:
        return (
            f"The repository key {where} has the fingerprint {', '.join(unexpected)}, not the pinned "
            f"{expected_text}: it is not installed. If the repository's owner rotated its key, set {variable} "
            f"to the new fingerprint from the owner's own documentation (never from the downloaded file)."
        )
    return ""
