# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.systemd_environment filter: plain lists from Mapping input, errors as AnsibleFilterError."""

from __future__ import annotations

from types import MappingProxyType

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.systemd import FilterModule

FILTERS = FilterModule().filters()


def test_filter_is_registered():
    assert set(FILTERS) == {"systemd_environment", "systemd_restart"}


def test_read_only_mapping_and_non_string_values():
    env = MappingProxyType({"HOME": "/var/lib/vllm", "CUDA_VISIBLE_DEVICES": 1})
    assert FILTERS["systemd_environment"](env) == ['"HOME=/var/lib/vllm"', '"CUDA_VISIBLE_DEVICES=1"']
    assert FILTERS["systemd_environment"](None) == []


@pytest.mark.parametrize(
    ("env", "message"), [(["A=1"], "expects a mapping"), ({"A": "x\ny"}, "A contains a line break")]
)
def test_errors_become_filter_errors(env, message):
    with pytest.raises(AnsibleFilterError, match=message):
        FILTERS["systemd_environment"](env)
