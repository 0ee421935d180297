# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What a drain of a vLLM engine waits for (docs/rollback.md): the requests its /metrics says it runs or queues.

The rest of the drain is the engines' shared one (_core/drain.py, roles/_common/tasks/drain.yml).
"""

from __future__ import annotations

from ansible_collections.inferops.llm.plugins.module_utils._core.drain import gauge_sum

# The two gauges of vLLM's /metrics (V1 engine, 0.8 and later; one sample per engine and model_name label set):
# requests in the running batch and requests in the queue.
IN_FLIGHT_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def requests_in_flight(metrics: str) -> int | None:
    """Running plus waiting requests in vLLM's /metrics; None when neither gauge is there."""
    return gauge_sum(metrics, IN_FLIGHT_GAUGES)
