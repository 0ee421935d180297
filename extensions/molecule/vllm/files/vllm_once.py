# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""TEST FIXTURE of the vllm scenario's verify: `vllm --version`, then the role's check_serve_config.py on each file
named, in ONE interpreter, so that vLLM (about 25 CPU-seconds to import on the 2-core CI machine) is imported once
instead of three times (issue 24). Each run gets the argv, stdout and stderr it gets as a process of its own (the
`vllm` command's `main`, the tool as `__main__`), and its exit status from SystemExit. Prints one JSON list, a run an
entry: {"argv", "rc", "stdout", "stderr"}.

Usage: python vllm_once.py TOOL CONFIG...
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys

from vllm.entrypoints.cli.main import main as vllm_main


def run(argv: list[str], call) -> dict:
    out, err = io.StringIO(), io.StringIO()
    sys.argv = argv
    rc = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            call()
        except SystemExit as stop:
            rc = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    return {"argv": argv, "rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    tool, configs = sys.argv[1], sys.argv[2:]
    results = [run(["vllm", "--version"], vllm_main)]
    results += [run([tool, config], lambda: runpy.run_path(tool, run_name="__main__")) for config in configs]
    print(json.dumps(results))


main()
