# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.nvidia_driver_* filters: the role's view of module_utils/nvidia_drivers."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.filter.nvidia_driver import (
    FilterModule,
    nvidia_driver_apt_version,
    nvidia_driver_plan,
    nvidia_driver_versioned_packages,
)


class LazyList(Sequence):
    """Stands in for ansible-core's lazy list proxy: a Sequence that is not a list."""

    def __init__(self, items):
        self._items = items

    def __getitem__(self, index):
        return self._items[index]

    def __len__(self):
        return len(self._items)


def test_registered_under_their_names():
    filters = FilterModule().filters()
    assert filters["nvidia_driver_plan"] is nvidia_driver_plan
    assert filters["nvidia_driver_apt_version"] is nvidia_driver_apt_version
    assert filters["nvidia_driver_versioned_packages"] is nvidia_driver_versioned_packages


def test_plan_accepts_mapping_proxies_and_returns_plain_types():
    gpus = LazyList([MappingProxyType({"index": 0, "pci_device_id": "0x2b85", "compute_capability": None})])
    plan = nvidia_driver_plan(gpus, "Debian", "13", "x86_64", source="nvidia", vllm_version="0.33.0")
    assert plan.__class__ is dict
    assert plan["errors"] == []
    assert plan["flavour"] == "open"
    assert plan["packages"] == ["nvidia-open"]
    assert plan["minimum_driver"] == "580.65.06"
    assert gpus[0]["compute_capability"] is None  # the input is not modified


def test_plan_reports_input_errors_without_raising():
    plan = nvidia_driver_plan(
        [{"compute_capability": "6.1", "name": "Tesla P40"}], "Debian", "12", "x86_64", branch="590"
    )
    assert plan["errors"] == ["GPU ? (Tesla P40) is Pascal, supported up to R580: set nvidia_driver_branch: '580'"]


def test_plan_null_inputs_mean_defaults():
    plan = nvidia_driver_plan(None, "Debian", "12", "x86_64", source="distribution", branch=None, version=None)
    assert (plan["branch"], plan["flavour"], plan["errors"]) == ("535", "proprietary", [])


def test_plan_refuses_a_gpu_list_that_is_not_a_list():
    with pytest.raises(AnsibleFilterError, match="list of inferops_gpus entries"):
        nvidia_driver_plan("RTX 5090", "Debian", "12", "x86_64")
    with pytest.raises(AnsibleFilterError, match="each GPU must be a mapping"):
        nvidia_driver_plan(["RTX 5090"], "Debian", "12", "x86_64")


def test_apt_version_and_versioned_packages():
    madison = "nvidia-smi | 550.163.01-4~bpo13+1 | trixie-backports\nnvidia-smi | 550.163.01-2 | trixie\n"
    assert nvidia_driver_apt_version(madison, "550.163.01") == "550.163.01-4~bpo13+1"
    assert nvidia_driver_apt_version(madison, "550.163.01-2") == "550.163.01-2"
    assert nvidia_driver_apt_version(None, "550") is None
    dpkg = "nvidia-smi 550.163.01-2\nlibcuda1 550.163.01-2\nnvidia-modprobe 550.54.14-1\n"
    assert nvidia_driver_versioned_packages(dpkg, "550.163.01-2") == ["libcuda1", "nvidia-smi"]
