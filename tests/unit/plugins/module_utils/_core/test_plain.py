"""_core.plain: plain containers from what Ansible passes to plugins."""

from __future__ import annotations

from collections import OrderedDict, UserList

from ansible_collections.inferops.llm.plugins.module_utils._core.plain import plain


def test_nested_mappings_and_sequences_become_dicts_and_lists_with_string_keys():
    value = OrderedDict([(1, UserList([OrderedDict(a=(1, 2))]))])
    assert plain(value) == {"1": [{"a": [1, 2]}]}
    assert isinstance(plain(value)["1"], list)


def test_strings_and_bytes_stay_as_they_are():
    assert plain("abc") == "abc"
    assert plain(b"abc") == b"abc"
    assert plain(None) is None


def test_the_input_is_not_mutated():
    value = {"a": [1]}
    copy = plain(value)
    copy["a"].append(2)
    assert value == {"a": [1]}
