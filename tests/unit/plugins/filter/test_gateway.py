"""The gateway_key_errors and gateway_key_table filters: names in messages, digests in the table, never a key."""

from __future__ import annotations

import hashlib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.gateway import gateway_key_errors, gateway_key_table

MASTER = "sk-master-0123456789"
ALICE = {"name": "alice", "key": "sk-alice-0123456789", "models": ["qwen-chat"]}

CASES = [
    # (keys, master, substring of the one expected message or None for no error)
    ([ALICE], MASTER, None),
    ([], "", "gateway_master_key must be set"),
    ([], "master-without-prefix-1234", "gateway_master_key must be set"),
    ([], "sk-short", "gateway_master_key must be set"),
    ([dict(ALICE, key=MASTER)], MASTER, "gateway_keys alice: key is the master key"),
    ([ALICE, dict(ALICE, name="bob")], MASTER, "gateway_keys bob: key is also another entry's key"),
    ([ALICE, dict(ALICE, key="sk-other-0123456789")], MASTER, "the name is given more than once"),
    ([dict(ALICE, key="sk has spaces 0123456")], MASTER, "gateway_keys alice: key must be"),
    ([dict(ALICE, models=[])], MASTER, "models must be a non-empty list"),
    ([dict(ALICE, name="al ice")], MASTER, "name must be 1 to 64"),
    ([dict(ALICE, budget=3)], MASTER, "unknown keys budget"),
    ("alice", MASTER, "gateway_keys must be a list"),
]


@pytest.mark.parametrize(("keys", "master", "expected"), CASES)
def test_key_errors(keys, master, expected):
    errors = gateway_key_errors(keys, master)
    if expected is None:
        assert errors == []
    else:
        assert len(errors) == 1 and expected in errors[0], errors
    for text in errors:  # a key never appears in a message
        assert "0123456789" not in text and "0123456" not in text


def test_key_table_holds_digests_and_models_only():
    table = gateway_key_table([ALICE, {"name": "bob", "key": "sk-bob-0123456789ab", "models": ["*"]}])
    assert table == {
        "keys": [
            {"name": "alice", "sha256": hashlib.sha256(ALICE["key"].encode()).hexdigest(), "models": ["qwen-chat"]},
            {"name": "bob", "sha256": hashlib.sha256(b"sk-bob-0123456789ab").hexdigest(), "models": ["*"]},
        ]
    }
    assert "sk-" not in repr(table)


def test_key_table_refuses_unusable_keys():
    with pytest.raises(AnsibleFilterError, match="models must be"):
        gateway_key_table([dict(ALICE, models="qwen-chat")])


def test_gateway_retry_policy_covers_the_single_replica_names():
    from ansible_collections.inferops.llm.plugins.filter.gateway import gateway_retry_policy

    model_list = [{"model_name": "a"}, {"model_name": "a"}, {"model_name": "b"}]
    assert gateway_retry_policy(model_list) == {"b": {"DefaultRetries": 0}}
    assert gateway_retry_policy([]) == {}
    with pytest.raises(AnsibleFilterError, match="expects LiteLLM's model_list"):
        gateway_retry_policy({"model_name": "a"})
