"""Every unit test plans without the controller's Hugging Face cache or the Hub: the plan's model resolver
(_model/hub.py, used by the plan_fleet action and the host_plan filter) reads an empty cache, offline.
Tests of the resolver build their own (tests/unit/plugins/module_utils/_model/test_hub.py).

tests/unit is on sys.path, so that every test module imports the shared helpers here (script_loader.py)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))

_EMPTY_HF_HOME = tempfile.mkdtemp(prefix="inferops-hf-home-")
os.environ["HF_HOME"] = _EMPTY_HF_HOME
os.environ["HF_HUB_OFFLINE"] = "1"
for _name in ("HF_HUB_CACHE", "HF_ENDPOINT", "HF_TOKEN"):
    os.environ.pop(_name, None)
