# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What a value may not carry into a plan, a unit, an environment file or an argv: the one place that says so.

``looks_like_secret`` recognises token-shaped strings (credentials must travel through the engine roles'
vaulted secret variables, never through a plan); ``control_characters`` finds CR, LF and NUL, which end a
line of a unit or an environment file; ``shown`` is how a refusal message quotes a value: never a
credential, never a raw line break. docs/security.md lists where each check runs.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

# Credential shapes, each with its source. A 40-hex commit sha and a sha256 digest are not among them.
SECRET_PATTERNS: Tuple[Tuple[str, str], ...] = (
    # Hugging Face user access tokens: "hf_" + 34 letters (huggingface.co/docs/hub/security-tokens)
    ("a Hugging Face token", r"hf_[A-Za-z0-9]{20,}"),
    # OpenAI-style API keys ("sk-", "sk-proj-"), also used by vLLM/LiteLLM deployments
    ("an API key (sk-...)", r"sk-[A-Za-z0-9_-]{16,}"),
    # GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)
    ("a GitHub token", r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    # AWS access key ids
    ("an AWS access key", r"(?:AKIA|ASIA)[0-9A-Z]{16}"),
    # An HTTP Authorization value
    ("a bearer token", r"[Bb]earer\s+[A-Za-z0-9._~+/=-]{8,}"),
    # JSON Web Tokens (header.payload.signature, base64url of '{"')
    ("a JSON web token", r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    # A URL with user information (https://user:password@host/)
    ("a URL with a user name or password", r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]+@"),
    # A long random-looking word: 32+ letters and digits, mixing upper case, lower case and digits
    ("a long random string", r"(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{32,}"),
)
_SECRET_RE = re.compile("|".join(f"(?<![A-Za-z0-9]){pattern}" for _what, pattern in SECRET_PATTERNS))
_CONTROL_RE = re.compile(r"[\r\n\x00]")
_CONTROL_NAMES = {"\r": "a carriage return (CR)", "\n": "a line feed (LF)", "\x00": "a NUL byte"}
# Names that carry credentials wherever they appear (environment variables, mapping keys, flags).
SECRET_NAME_RE = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL", re.IGNORECASE)


def secret_kind(text: Any) -> Optional[str]:
    """What credential a string looks like (``"a Hugging Face token"``), or None."""
    if not isinstance(text, str):
        return None
    match = _SECRET_RE.search(text)
    if match is None:
        return None
    for what, pattern in SECRET_PATTERNS:
        if re.fullmatch(pattern, match.group(0)):
            return what
    return "a credential"  # pragma: no cover - every alternative is listed above


def looks_like_secret(text: Any) -> bool:
    return secret_kind(text) is not None


def redact(text: str) -> str:
    """The text with every token-shaped part replaced by ``<redacted>``."""
    return _SECRET_RE.sub("<redacted>", text)


def control_characters(text: Any) -> List[str]:
    """The line-ending characters (CR, LF, NUL) a string holds, in words; empty when none."""
    if not isinstance(text, str):
        return []
    return [_CONTROL_NAMES[c] for c in sorted(set(_CONTROL_RE.findall(text)))]


# What a refusal may quote in full: one short plain word. Anything longer, or with spaces, quotes or other
# syntax, is quoted as its first plain characters at most (a key smuggled after a space or "=" never shows).
_SHOWN_WORD_RE = re.compile(r"[A-Za-z0-9._/+:@-]{1,20}")
_SHOWN_PREFIX_RE = re.compile(r"[A-Za-z0-9._/+-]{1,12}")
# Words that say a credential follows (--api-key, token=, Authorization: ...): such a value is never quoted.
_CREDENTIAL_WORD_RE = re.compile(r"token|secret|passw|api[-_]?key|auth|bearer|credential|private", re.IGNORECASE)
_SHOWN_CONTAINER_MAX = 60


def shown(value: Any, var: Optional[str] = None) -> str:
    """A value as a refusal message may quote it: never a credential, never more than a short harmless part.

    Nothing of the value when ``var`` names a credential (``SECRET_NAME_RE``) or the value looks like one or
    names one (``--api-key ...``, ``token=...``); a short plain word (numbers, names, choices) in full with
    ``repr()``; anything else as its first plain characters (at most 12, up to the first space or syntax
    character) and its length. docs/security.md, "Messages never repeat a secret".
    """
    if var is not None and SECRET_NAME_RE.search(var):
        return "a value (not shown: the variable carries a secret)"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    text = value if isinstance(value, str) else repr(value)
    what = secret_kind(text)
    if what:
        if isinstance(value, str):
            return f"a value that looks like {what} (not shown)"
        return "a value with a part that looks like a secret (not shown)"
    if _CREDENTIAL_WORD_RE.search(text) or (not isinstance(value, str) and SECRET_NAME_RE.search(text)):
        return "a value that names a credential (not shown)"
    if isinstance(value, str):
        if _SHOWN_WORD_RE.fullmatch(value):
            return repr(value)
    elif len(text) <= _SHOWN_CONTAINER_MAX and not control_characters(text):
        return text
    prefix = _SHOWN_PREFIX_RE.match(text)
    if prefix is None:
        return f"a value of {len(text)} characters (not shown)"
    return f"{prefix.group(0)!r}... ({len(text)} characters, the rest not shown)"


def strings(path: str, value: Any) -> Iterator[Tuple[str, str]]:
    """Every string in a value with its path (``var.key[0]``): mapping keys (at their own path), values, items."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield f"{path}.{key}", str(key)
            yield from strings(f"{path}.{key}", item)
    elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        for index, item in enumerate(value):
            yield from strings(f"{path}[{index}]", item)


def unsafe_text_errors(path: str, value: Any, secrets_allowed: bool = False) -> List[str]:
    """Refusals for CR/LF/NUL (and, unless ``secrets_allowed``, token-shaped strings) anywhere in a value.

    Each message names the path and never repeats the value.
    """
    errors: List[str] = []
    for where, text in strings(path, value):
        found = control_characters(text)
        if found:
            errors.append(
                f"{where} contains {' and '.join(found)}: a line break would end the line of the unit, environment "
                "file or serve.yaml it is written to; write the value on one line"
            )
        what = None if secrets_allowed else secret_kind(text)
        if what:
            errors.append(
                f"{where} looks like a secret ({what}; value not shown): credentials never go into a plan, "
                "a unit or an argv; give them through the engine role's vaulted secret variables "
                "(vllm_api_key, vllm_hf_token, model_download_hf_token)"
            )
    return list(dict.fromkeys(errors))
