# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._core.systemd import UnitValueError, environment_lines


def test_environment_lines_are_quoted_in_order():
    lines = environment_lines({"OLLAMA_HOST": "127.0.0.1:11434", "X": 'a "b" 100% c\\d'})
    assert lines == ['"OLLAMA_HOST=127.0.0.1:11434"', '"X=a \\"b\\" 100%% c\\\\d"']


@pytest.mark.parametrize("text", ["a\nb", "a\rExecStartPre=+/bin/sh", "a\x00b"])
def test_line_breaks_and_nul_are_refused_naming_the_variable(text):
    with pytest.raises(UnitValueError, match="X contains a line break"):
        environment_lines({"X": text})
