#!/usr/bin/python
# Copyright: inferops.llm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# (ansible-test validate-modules requires this header on every module)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: unit_http_wait
short_description: Wait until a service's HTTP endpoint answers, for as long as its systemd unit keeps running
version_added: 0.1.0
description:
  - Polls O(url) every O(interval) seconds until it answers with status 200, for at most O(timeout) seconds.
  - Between two polls reads the state of the systemd unit O(unit) (C(systemctl show)) and fails at once when
    the process it started at the beginning of the wait has exited - the unit is C(failed) or C(inactive),
    waits to be restarted (C(auto-restart)), or was restarted meanwhile (another C(InvocationID) or a higher
    C(NRestarts)) - instead of waiting out the timeout for an engine that has already died.
  - An answer from the URL while the unit is not running does not count (another process may hold the port).
  - Reads only; never changes anything.
author:
  - inferops.llm maintainers (@inferops)
options:
  unit:
    description: The systemd unit, with or without C(.service).
    type: str
    required: true
  url:
    description: The URL that answers 200 once the service is ready (vLLM's C(/health)).
    type: str
    required: true
  timeout:
    description: Seconds to wait at most.
    type: float
    required: true
  interval:
    description: Seconds between two polls.
    type: float
    default: 5
  request_timeout:
    description: Seconds one HTTP request may take.
    type: float
    default: 5
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation
      indicates no change.
    support: full
seealso:
  - module: ansible.builtin.uri
  - module: ansible.builtin.wait_for
"""

EXAMPLES = r"""
---
- name: Wait for vLLM's /health while vllm.service runs
  inferops.llm.unit_http_wait:
    unit: vllm
    url: http://127.0.0.1:8000/health
    timeout: 600
    interval: 5
"""

RETURN = r"""
---
ready:
  description: Whether the URL answered 200 while the unit ran the process it ran when the wait began.
  type: bool
  returned: always
elapsed:
  description: Seconds from the beginning of the wait to the answer, or to the failure.
  type: float
  returned: always
status:
  description: HTTP status of the last poll; -1 when nothing answered.
  type: int
  returned: always
polls:
  description: Number of HTTP polls made.
  type: int
  returned: always
unit_state:
  description: The unit's last state, as C(systemctl show) gave it.
  type: dict
  returned: always
  contains:
    ActiveState:
      description: For example C(active), C(activating) or C(failed).
      type: str
    SubState:
      description: For example C(running) or C(auto-restart).
      type: str
    Result:
      description: For example C(success) or C(exit-code).
      type: str
    ExecMainStatus:
      description: Exit status of the main process; C(0) while it runs.
      type: str
    NRestarts:
      description: Automatic restarts since the unit was last started by hand.
      type: str
    InvocationID:
      description: Identifier of the current start.
      type: str
"""

import time
import urllib.error
from typing import Any, Callable, Dict, Mapping, Optional

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

PROPERTIES = ("ActiveState", "SubState", "Result", "ExecMainStatus", "NRestarts", "InvocationID")


def parse_show(text: str) -> Dict[str, str]:
    """``systemctl show --property=...`` output (``Key=value`` lines) -> dict."""
    state: Dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            state[key.strip()] = value.strip()
    return state


def unit_exited(first: Mapping[str, str], now: Mapping[str, str]) -> Optional[str]:
    """Why the process the unit ran when the wait began is gone, or None while it may still become ready."""
    active = now.get("ActiveState", "")
    sub = now.get("SubState", "")
    ended = f"Result={now.get('Result', '?')}, exit status {now.get('ExecMainStatus', '?')}"
    if active in ("failed", "inactive", "deactivating"):
        return f"the unit is {active} ({ended})"
    if sub == "auto-restart":
        return f"the process exited and the unit waits to restart it ({ended})"
    if first.get("InvocationID") and now.get("InvocationID") and first["InvocationID"] != now["InvocationID"]:
        return f"the unit was started again meanwhile ({ended}, NRestarts={now.get('NRestarts', '?')})"
    if _int(now.get("NRestarts")) > _int(first.get("NRestarts")):
        return f"systemd restarted the process meanwhile ({ended}, NRestarts={now.get('NRestarts')})"
    return None


def _int(text: Optional[str]) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def wait(
    read_unit: Callable[[], Dict[str, str]],
    poll: Callable[[], int],
    timeout: float,
    interval: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Dict[str, Any]:
    """Poll until ``poll()`` gives 200 while the unit runs; the result has ``failed`` and ``msg`` on failure."""
    start = clock()
    first = read_unit()
    state = first
    status = -1
    polls = 0
    while True:
        reason = unit_exited(first, state)
        if reason is not None:
            return _result(start, clock, status, polls, state, f"{reason} before the URL answered 200")
        status = poll()
        polls += 1
        if status == 200:
            # The answer counts only when the unit still runs the same process (not another holder of the port).
            state = read_unit()
            reason = unit_exited(first, state)
            if reason is None:
                return _result(start, clock, status, polls, state, None)
            return _result(start, clock, status, polls, state, f"{reason} (the 200 came from another process)")
        if clock() - start + interval > timeout:
            state = read_unit()
            return _result(
                start, clock, status, polls, state,
                f"no 200 within {timeout:g} s (last status {status}); the unit is {state.get('ActiveState', '?')}"
                f"/{state.get('SubState', '?')}",
            )  # fmt: skip
        sleep(interval)
        state = read_unit()


def _result(start, clock, status, polls, state, failure) -> Dict[str, Any]:
    result: Dict[str, Any] = {
        "changed": False,
        "ready": failure is None,
        "elapsed": round(clock() - start, 1),
        "status": status,
        "polls": polls,
        "unit_state": state,
    }
    if failure is not None:
        result["failed"] = True
        result["msg"] = failure
    return result


def http_status(url: str, request_timeout: float) -> int:
    try:
        with open_url(url, timeout=request_timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError, ValueError):
        return -1


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "unit": {"type": "str", "required": True},
            "url": {"type": "str", "required": True},
            "timeout": {"type": "float", "required": True},
            "interval": {"type": "float", "default": 5},
            "request_timeout": {"type": "float", "default": 5},
        },
        supports_check_mode=True,
    )
    systemctl = module.get_bin_path("systemctl", required=True)
    params = module.params

    def read_unit() -> Dict[str, str]:
        argv = [systemctl, "show", "--property=" + ",".join(PROPERTIES), params["unit"]]
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg=f"systemctl show {params['unit']} failed: {err.strip()}")
        return parse_show(out)

    result = wait(
        read_unit,
        lambda: http_status(params["url"], params["request_timeout"]),
        params["timeout"],
        params["interval"],
    )
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
