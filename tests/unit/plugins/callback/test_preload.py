"""inferops.llm.preload: the collection's filters and actions imported in the controller's main process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ansible_collections.inferops.llm.plugins.callback import preload

ROOT = Path(__file__).resolve().parents[4]
COLLECTIONS = Path(os.environ.get("INFEROPS_COLLECTIONS", ROOT / "build" / "collections"))


def test_every_filter_and_action_is_imported():
    imported, failed = preload.preload()
    assert failed == {}
    on_disk = {
        f"ansible_collections.inferops.llm.plugins.{kind}.{path.stem}"
        for kind in ("filter", "action")
        for path in (ROOT / "plugins" / kind).glob("*.py")
        if path.stem != "__init__"
    }
    assert set(imported) == on_disk
    assert "ansible_collections.inferops.llm.plugins.module_utils._plan.planner" in sys.modules


def test_a_package_or_plugin_that_fails_is_named_not_raised(tmp_path, monkeypatch):
    package = tmp_path / "preload_probe"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "good.py").write_text("VALUE = 1\n")
    (package / "broken.py").write_text("raise RuntimeError('no such dependency')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    imported, failed = preload.preload(["preload_probe", "no_such_package_anywhere"])
    assert imported == ["preload_probe.good"]
    assert failed["preload_probe.broken"] == "RuntimeError: no such dependency"
    assert "no_such_package_anywhere" in failed


def test_a_play_with_the_callback_enabled_runs_the_collection_filters(tmp_path):
    # The forked workers use what the main process imported: the filter still answers, and nothing is printed.
    play = tmp_path / "play.yml"
    play.write_text(
        textwrap.dedent("""\
            - hosts: localhost
              gather_facts: false
              tasks:
                - ansible.builtin.assert:
                    that: "('0.32.0' | inferops.llm.vllm_release_pins) is mapping"
            """)
    )
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_CALLBACKS_ENABLED="inferops.llm.preload",
               ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), NO_COLOR="1")  # fmt: skip
    binary = Path(sys.executable).parent / "ansible-playbook"
    argv = [
        str(binary),
        "-i",
        "localhost,",
        "-c",
        "local",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(play),
    ]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "preload" not in done.stdout + done.stderr
