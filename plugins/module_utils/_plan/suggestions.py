# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Every value the plan suggests is verified before it is shown: the host is planned again with it.

A finding that names a variable and a value that passes (``plan_findings`` keeps them as ``suggestion``)
is planned again with that value set. The value is offered only when the re-plan no longer reports the
finding (the same id about the same variable, at the same severity or worse), fits the GPUs and raises no
error the plan did not already have. Otherwise the re-plan's own suggestion for what is left is tried with
it, and the message gives both values together when that pair passes; else it says that the value alone
does not clear the finding and what the re-plan still reports, so no value that fails is shown as a fix.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError

# A re-plan: the host's checks with these variables set ({name or dotted name: value}), or PlanInputError.
Replan = Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]]

_RANK = {"info": 0, "warning": 1, "error": 2}
# How much of a blocking finding's message the explanation quotes.
_QUOTE = 120


def with_values(variables: Mapping[str, Any], values: Mapping[str, Any]) -> Dict[str, Any]:
    """``variables`` with ``values`` set; a dotted name (``inferops_model.quantization``) sets a key of a mapping."""
    result = dict(variables)
    for name, value in values.items():
        top, _dot, key = str(name).partition(".")
        if key:
            nested = result.get(top)
            result[top] = dict(nested) if isinstance(nested, Mapping) else {}
            result[top][key] = value
        else:
            result[top] = value
    return result


def _suggestion(check: Mapping[str, Any]) -> Optional[Mapping[str, Any]]:
    suggestion = check.get("suggestion")
    return suggestion if isinstance(suggestion, Mapping) and suggestion.get("variable") else None


def _variable(check: Mapping[str, Any]) -> Optional[str]:
    suggestion = _suggestion(check)
    return str(suggestion["variable"]) if suggestion else check.get("variable")


def _blocking(
    check: Mapping[str, Any], before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> Optional[Mapping[str, Any]]:
    """The re-plan's finding that keeps the suggestion from passing, or None when it passes."""
    rank, variable = _RANK.get(str(check["severity"]), 2), _variable(check)
    errors_before = {c["id"] for c in before if c["severity"] == "error"}
    for other in after:
        same = other["id"] == check["id"] and _variable(other) in (variable, None)
        if same and _RANK.get(str(other["severity"]), 2) >= rank:
            return other
    for other in after:
        if other["severity"] != "error":
            continue
        # A new error; or, for a memory-fit finding, any memory-fit error (whichever variable it names).
        if other["id"] not in errors_before or other["id"] == check["id"] == "memory-fit":
            return other
    return None


def _try(replan: Replan, values: Mapping[str, Any]) -> Tuple[Optional[Sequence[Mapping[str, Any]]], str]:
    try:
        return replan(values), ""
    except PlanInputError as exc:
        return None, "; ".join(exc.errors)


def _shown(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}: {json.dumps(value)}" for name, value in values.items())


def _quote(message: str) -> str:
    return message if len(message) <= _QUOTE else message[: _QUOTE - 3].rstrip() + "..."


def verify_check(check: Mapping[str, Any], before: Sequence[Mapping[str, Any]], replan: Replan) -> Dict[str, Any]:
    """The check with its message as shown: the suggestion kept when it passes, else explained (module doc)."""
    suggestion = _suggestion(check)
    if suggestion is None:
        return dict(check)
    values = {str(suggestion["variable"]): suggestion["value"]}
    after, refused = _try(replan, values)
    blocking = _blocking(check, before, after) if after is not None else None
    if after is not None and blocking is None:
        return dict(check)  # the message already offers the value (plan_findings)
    next_step = _suggestion(blocking) if blocking is not None else None
    if next_step is not None and str(next_step["variable"]) not in values:
        pair = dict(values, **{str(next_step["variable"]): next_step["value"]})
        again, _refused = _try(replan, pair)
        if again is not None and _blocking(check, before, again) is None:
            message = f"{suggestion['message']} (values that pass together: {_shown(pair)})"
            return dict(check, message=message)
    if blocking is not None:
        why = f"{_shown(values)} alone does not clear this: with it the plan still reports {blocking['id']}"
        if blocking["id"] != check["id"] or _variable(blocking) != _variable(check):
            # Quoted without its own offer: a cut "(a value that passes: ..." inside this one reads as a value.
            bare = (_suggestion(blocking) or {}).get("message") or blocking["message"]
            why += f" ({_quote(str(bare))})"
    else:
        why = f"it would take {_shown(values)}, which the plan refuses ({_quote(refused)})"
    return dict(check, message=f"{suggestion['message']} (no value that passes: {why})")


def verify_suggestions(checks: Sequence[Mapping[str, Any]], replan: Replan) -> List[Dict[str, Any]]:
    """``checks`` with every suggestion verified by a re-plan (``verify_check``)."""
    return [verify_check(check, checks, replan) for check in checks]
