"""The checkpoint files the plan reads beside inferops_model.config_file (common.py)."""

from __future__ import annotations

import json

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._plan.common import load_image_max_pixels
from ansible_collections.inferops.llm.plugins.module_utils._plan.inputs import PlanInputError

SIZE = {"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16, "merge_size": 2}
# (files beside config.json, pixel limit read). The published layouts: Qwen/Qwen3.6-35B-A3B-FP8 ships
# preprocessor_config.json; unsloth/Qwen3.6-27B-NVFP4 ships processor_config.json with image_processor and
# video_processor sections; older Qwen2-VL processors say max_pixels.
PIXEL_CASES = [
    ({}, None),
    ({"preprocessor_config.json": SIZE}, 16777216),
    ({"processor_config.json": {"image_processor": SIZE, "video_processor": {"size": {"longest_edge": 25165824}}}},
     16777216),
    ({"processor_config.json": {"video_processor": {"size": {"longest_edge": 25165824}}}}, None),
    ({"preprocessor_config.json": {"size": {"longest_edge": 4194304}},
      "processor_config.json": {"image_processor": SIZE}}, 4194304),
    ({"preprocessor_config.json": {"max_pixels": 12845056}}, 12845056),
    ({"preprocessor_config.json": {"size": {"height": 896, "width": 896}}}, None),
]  # fmt: skip


@pytest.mark.parametrize(("files", "pixels"), PIXEL_CASES)
def test_image_processor_pixel_limit_beside_config_json(tmp_path, files, pixels):
    (tmp_path / "config.json").write_text("{}")
    for name, content in files.items():
        (tmp_path / name).write_text(json.dumps(content))
    assert load_image_max_pixels({"config_file": str(tmp_path / "config.json")}) == pixels


def test_no_files_read_without_config_file_or_with_an_inline_config(tmp_path):
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(SIZE))
    assert load_image_max_pixels({"repo": "Qwen/Qwen3.6-35B-A3B"}) is None
    inline = {"config": {}, "config_file": str(tmp_path / "config.json")}
    assert load_image_max_pixels(inline) is None


def test_unreadable_processor_file_names_the_variable(tmp_path):
    (tmp_path / "preprocessor_config.json").write_text("{not json")
    with pytest.raises(PlanInputError, match=r"inferops_model\.config_file: .*preprocessor_config\.json"):
        load_image_max_pixels({"config_file": str(tmp_path / "config.json")})
