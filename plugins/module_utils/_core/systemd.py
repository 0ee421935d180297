# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""systemd unit text: one quoting of ``Environment=`` values for every service unit of the collection."""

from __future__ import annotations

from typing import Any, List, Mapping


class UnitValueError(ValueError):
    """A value that a unit line cannot carry; the message names the variable."""


def environment_lines(env: Mapping[str, Any]) -> List[str]:
    """``"NAME=value"`` double-quoted for ``Environment=``: backslash and quote escaped, % doubled."""
    lines = []
    for name, value in env.items():
        text = f"{name}={value}".replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
        if any(c in text for c in "\r\n\x00"):
            raise UnitValueError(f"environment variable {name} contains a line break (CR, LF) or a NUL byte")
        lines.append(f'"{text}"')
    return lines


# RestartSteps= and RestartMaxDelaySec= (a restart delay that grows from RestartSec= to a bound) came with
# systemd 254 (systemd.service(5), "Added in version 254"); Debian 12 has 252, Debian 13 257.
RESTART_STEPS_SYSTEMD = 254


def restart_lines(prefix: str, policy: Mapping[str, Any], systemd_version: Any) -> List[str]:
    """``[Service]`` lines that restart a service whatever way it ends, with a bounded delay.

    ``policy``: ``sec`` (the first delay), ``max_delay_sec`` (the bound the delay grows to) and ``steps``
    (restarts until the bound is reached). Where systemd predates RestartSteps= (``systemd_version`` below
    254, or unknown: 0), every restart waits ``sec``. ``prefix`` names the variables in messages
    (``vllm_restart`` -> ``vllm_restart_sec``, ``vllm_restart_max_delay_sec``, ``vllm_restart_steps``).
    The unit's ``[Unit]`` section must also carry ``StartLimitIntervalSec=0`` (never give up).
    """
    sec, max_delay, steps = (_whole(policy.get(key), f"{prefix}_{key}") for key in ("sec", "max_delay_sec", "steps"))
    if sec < 1:
        raise UnitValueError(f"{prefix}_sec is {sec}: at least 1 second between two starts (e.g. 5)")
    if max_delay < sec:
        raise UnitValueError(
            f"{prefix}_max_delay_sec ({max_delay}) is below {prefix}_sec ({sec}): set it to {sec} or more"
        )
    lines = ["Restart=always", f"RestartSec={sec}"]
    try:
        version = int(str(systemd_version or 0).split(".", maxsplit=1)[0])
    except ValueError:
        version = 0
    if version >= RESTART_STEPS_SYSTEMD and max_delay > sec and steps > 0:
        lines += [f"RestartSteps={steps}", f"RestartMaxDelaySec={max_delay}"]
    return lines


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or value is None:
        raise UnitValueError(f"{name} must be a whole number of seconds or steps, not {value!r} (e.g. 30)")
    try:
        return int(str(value))
    except ValueError:
        raise UnitValueError(f"{name} must be a whole number, not {value!r} (e.g. 30)") from None
