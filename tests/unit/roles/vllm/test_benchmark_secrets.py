"""roles/vllm benchmark: the API key comes from secrets.env read as data, never evaluated by a shell (issue 28).

Runs the task's own `python -c` program (from tasks/benchmark.yml) with a stub `vllm.benchmarks.serve` that
records OPENAI_API_KEY and the arguments it was given, against a secrets file whose values hold shell syntax.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROLE = Path(__file__).resolve().parents[4] / "roles" / "vllm"
TASK = next(
    task for task in yaml.safe_load((ROLE / "tasks" / "benchmark.yml").read_text())
    if task.get("name") == "Run vLLM's serving benchmark"
)  # fmt: skip
ARGV = TASK["ansible.builtin.command"]["argv"]

STUB = {
    "vllm/__init__.py": "",
    "vllm/benchmarks/__init__.py": "",
    "vllm/utils/__init__.py": "",
    "vllm/utils/argparse_utils.py": (
        "import argparse\n"
        "class FlexibleArgumentParser(argparse.ArgumentParser):\n"
        "    pass\n"
    ),
    "vllm/benchmarks/serve.py": (
        "import json, os, sys\n"
        "def add_cli_args(parser):\n"
        "    parser.add_argument('--backend')\n"
        "def main(args):\n"
        "    print(json.dumps({'key': os.environ.get('OPENAI_API_KEY'), 'backend': args.backend,"
        " 'hf': os.environ.get('HF_TOKEN')}))\n"
        "    return {}\n"
    ),
}  # fmt: skip


def test_the_task_runs_python_directly_with_the_secrets_file_as_data():
    assert ARGV[0].endswith("/bin/python") and ARGV[1:3] == ["-I", "-c"]
    assert "sh" not in {Path(str(part)).name for part in ARGV[:3]}
    assert ARGV[4] == "{{ _vllm_secrets_file }}"


def test_values_with_shell_syntax_are_read_not_run(tmp_path):
    for name, text in STUB.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    marker = tmp_path / "ran"
    secrets = tmp_path / "secrets.env"
    key = f"k3y$(touch {marker});`touch {marker}`&x"
    secrets.write_text(f"# managed\nVLLM_API_KEY={key}\nHF_TOKEN=hf-not-for-the-client\n")
    code = ARGV[3]
    result = subprocess.run(
        [sys.executable, "-c", code, str(secrets), "--backend", "openai"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(result.stdout) == {"key": key, "backend": "openai", "hf": None}
    assert not marker.exists()
