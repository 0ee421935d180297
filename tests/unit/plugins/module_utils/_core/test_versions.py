"""The one version parser: full matches only, per-caller grammar by arguments."""

from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.versions import VersionError, release_tuple

ACCEPTED = [
    ("0.33.0", {}, (0, 33, 0)),
    ("v0.10.1.1", {"parts": (3, 4)}, (0, 10, 1, 1)),
    ("0.33.0+cu130", {"suffix": "+"}, (0, 33, 0)),
    ("v0.30.0-rc2", {"suffix": "-"}, (0, 30, 0)),
    ("580.95.05-1", {"parts": (1, 2, 3), "suffix": "-"}, (580, 95, 5)),
    ("580", {"parts": (1, 2, 3)}, (580,)),
]
REFUSED = [
    ("0.33.0\n", {}),
    ("0.33", {}),
    ("0.33.0+cu130", {}),
    (">=0.33.0", {}),
    ("0.33.0rc1", {}),
    ("v0.33.0", {"tag_prefix": False}),
    ("0.33.0+cu 130", {"suffix": "+"}),
    ("", {}),
    (None, {}),
]


@pytest.mark.parametrize(("text", "kwargs", "expected"), ACCEPTED)
def test_accepted(text, kwargs, expected):
    assert release_tuple(text, **kwargs) == expected


@pytest.mark.parametrize(("text", "kwargs"), REFUSED)
def test_refused_with_the_variable_and_an_example(text, kwargs):
    with pytest.raises(VersionError, match=r"^vllm_version .* is not an exact release: pin one such as 0\.33\.0"):
        release_tuple(text, variable="vllm_version", example="0.33.0", **kwargs)
