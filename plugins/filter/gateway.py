# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.gateway_key_errors, gateway_key_table and gateway_retry_policy filters (see their .yml)."""

from __future__ import annotations

import typing as t

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._plan.gateway import key_errors, key_table, retry_policy


def gateway_key_errors(keys: t.Any, master_key: t.Any = "") -> list[str]:
    """Why gateway_keys or gateway_master_key cannot be used (names only, never a key)."""
    return key_errors(keys, master_key)


def gateway_key_table(keys: t.Any) -> dict[str, t.Any]:
    """The key table the gateway's auth hook reads: names, SHA-256 digests, models."""
    errors = key_errors(keys, "sk-" + "x" * 16)
    if errors:
        raise AnsibleFilterError("gateway_key_table: " + "; ".join(errors))
    return key_table(keys)


def gateway_retry_policy(model_list: t.Any) -> dict[str, t.Any]:
    """LiteLLM's model_group_retry_policy for a model_list: no retry where a name has one replica."""
    if not isinstance(model_list, list):
        raise AnsibleFilterError(
            f"gateway_retry_policy expects LiteLLM's model_list, not a {type(model_list).__name__}"
        )
    return retry_policy(model_list)


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {
            "gateway_key_errors": gateway_key_errors,
            "gateway_key_table": gateway_key_table,
            "gateway_retry_policy": gateway_retry_policy,
        }
