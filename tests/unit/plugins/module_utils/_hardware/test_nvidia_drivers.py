# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.releases import engine_cuda, vllm_wheel_cuda
from ansible_collections.inferops.llm.plugins.module_utils._hardware import nvidia_drivers as nd


def for_vllm(version, cuda=None):
    """The CUDA arguments for vLLM's default wheel (the engine's release facts, not the driver table)."""
    cuda_version, source = engine_cuda(version, cuda)
    return {"cuda_version": cuda_version, "cuda_source": source}


CASES = yaml.safe_load((Path(__file__).parent / "nvidia_driver_cases.yml").read_text(encoding="utf-8"))


def gpu(index=0, cc=None, device=None, name=None):
    return {"index": index, "name": name, "compute_capability": cc, "pci_device_id": device}


# GPUs of the topology samples and the issue, as nvidia-smi (compute capability) and sysfs (device id) see them.
KNOWN_GPUS = [
    ("RTX 5090", "12.0", "0x2b85", "blackwell"),
    ("RTX 5060 Ti", "12.0", "0x2d04", "blackwell"),
    ("RTX PRO 6000 Blackwell", "12.0", "0x2bb1", "blackwell"),
    ("B200", "10.0", "0x2901", "blackwell"),
    ("B300", "10.3", "0x3182", "blackwell"),
    ("H100 SXM", "9.0", "0x2330", "hopper"),
    ("H200", "9.0", "0x2335", "hopper"),
    ("A100 SXM4 80GB", "8.0", "0x20b2", "ampere"),
    ("A30", "8.0", "0x20b7", "ampere"),
    ("RTX A6000", "8.6", "0x2230", "ampere"),
    ("RTX 3090", "8.6", "0x2204", "ampere"),
    ("RTX 4090", "8.9", "0x2684", "ada"),
    ("L4", "8.9", "0x27b8", "ada"),
    ("T4", "7.5", "0x1eb8", "turing"),
    ("V100", "7.0", "0x1db1", "volta"),
    ("Tesla P40", "6.1", "0x1b38", "pascal"),
    ("Tesla M10", "5.0", "0x13bd", "maxwell"),
    ("Tesla K80", "3.7", "0x102d", "kepler"),
]


@pytest.mark.parametrize(("label", "cc", "device", "generation"), KNOWN_GPUS)
def test_generation_from_compute_capability_and_pci_id_agree(label, cc, device, generation):
    assert nd.generation_from_compute_capability(cc) == generation, label
    assert nd.generation_from_pci_device_id(device) == generation, label


def test_gpu_generation_prefers_compute_capability_and_falls_back_to_pci_id():
    # Before a driver exists gpu_facts reports no compute capability, only the sysfs device id.
    assert nd.gpu_generation(gpu(device="0x2B85")) == "blackwell"
    assert nd.gpu_generation(gpu(cc="8.9", device="0x2b85")) == "ada"
    assert nd.gpu_generation(gpu(device=0x1B38)) == "pascal"
    assert nd.gpu_generation(gpu(device="0x0000")) is None
    assert nd.gpu_generation(gpu()) is None


def test_malformed_identifiers_are_refused():
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        nd.generation_from_compute_capability("sm_90")
    with pytest.raises(ValueError, match="hexadecimal"):
        nd.generation_from_pci_device_id("RTX")


@pytest.mark.parametrize(
    ("cuda", "driver"),
    [
        ("12.8", "570.26"),
        ("cu128", "570.26"),
        ("12.8.1", "570.26"),
        ("12.9", "575.51.03"),
        ("13.0", "580.65.06"),
        ("12.4", "550.54.14"),
    ],
)
def test_minimum_driver_for_cuda(cuda, driver):
    assert nd.minimum_driver_for_cuda(cuda) == driver


def test_minor_version_compatibility_floor():
    assert nd.minimum_driver_for_cuda("12.9", minor_version_compatibility=True) == "525.60.13"
    assert nd.minimum_driver_for_cuda("13.2", minor_version_compatibility=True) == "580.65.06"
    with pytest.raises(ValueError, match="not in the driver table"):
        nd.minimum_driver_for_cuda("12.7")


@pytest.mark.parametrize(
    ("cc", "driver"),
    [
        ("12.0", "570.26"),
        ("10.0", "570.26"),
        ("10.3", "575.51.03"),
        ("12.1", "575.51.03"),
        ("9.0", "520.61.05"),
        ("8.6", "455.23"),
        ("7.5", "410.48"),
    ],
)
def test_minimum_driver_for_compute_capability(cc, driver):
    assert nd.minimum_driver_for_compute_capability(cc) == driver


@pytest.mark.parametrize(
    ("version", "cuda"),
    [
        ("0.8.5", "12.4"),
        ("0.9.0", "12.8"),
        ("0.11.2", "12.8"),
        ("0.12.0", "12.9"),
        ("0.19.1", "12.9"),
        ("0.20.0", "13.0"),
        ("0.33.0", "13.0"),
    ],
)
def test_vllm_wheel_cuda(version, cuda):
    assert vllm_wheel_cuda(version) == cuda


def test_vllm_wheel_cuda_refuses_unknown_and_pre_release_versions():
    with pytest.raises(ValueError, match="predates"):
        vllm_wheel_cuda("0.7.3")
    with pytest.raises(ValueError, match="vllm_version"):
        vllm_wheel_cuda("0.20.0rc1")


def test_minimum_driver_for_takes_the_highest_bound_and_explains_all():
    result = nd.minimum_driver_for(gpus=[gpu(cc="8.6", name="NVIDIA RTX A6000")], **for_vllm("0.33.0"))
    assert result["minimum_driver"] == "580.65.06"
    assert result["cuda_version"] == "13.0"
    assert result["reasons"][0].startswith("vLLM 0.33.0's PyPI wheel is built with CUDA 13.0")
    assert "RTX A6000" in result["reasons"][1]


def test_minimum_driver_for_blackwell_before_the_driver_is_loaded():
    result = nd.minimum_driver_for(gpus=[gpu(device="0x2b85")], **for_vllm("0.11.0"))
    # sysfs only: the generation's floor (CUDA 12.8, 570.26) equals the wheel's CUDA 12.8 floor.
    assert result["minimum_driver"] == "570.26"
    assert result["cuda_version"] == "12.8"
    assert "GPU 0 (PCI device 0x2b85) is Blackwell, which needs driver >= 570.26" in result["reasons"]


def test_minimum_driver_for_explicit_cuda_wins_over_vllm_version():
    result = nd.minimum_driver_for(compute_capabilities=["9.0"], **for_vllm("0.33.0", "12.8"))
    assert result == {
        "minimum_driver": "570.26",
        "cuda_version": "12.8",
        "reasons": ["CUDA 12.8 needs driver >= 570.26", "compute capability 9.0 needs driver >= 520.61.05"],
    }
    assert nd.minimum_driver_for() == {"minimum_driver": None, "cuda_version": None, "reasons": []}


def test_driver_versions_compare_numerically():
    assert nd.driver_at_least("580.95.05", "580.65.06")
    assert not nd.driver_at_least("575.64.05", "580.65.06")
    assert nd.driver_at_least("570.124.06", "570.26")
    assert nd.driver_version_tuple("550.163.01-4~bpo13+1") == (550, 163, 1)
    assert nd.branch_of("535.261.03-1") == "535"
    with pytest.raises(ValueError, match="BRANCH"):
        nd.driver_version_tuple("latest")


# --------------------------------------------------------------------------- flavour


def test_flavour_auto_follows_the_gpus():
    assert nd.kernel_module_flavour([gpu(cc="12.0")]) == "open"
    assert nd.kernel_module_flavour([gpu(device="0x2b85")], branch="535") == "open"
    assert nd.kernel_module_flavour([gpu(cc="8.0"), gpu(1, cc="8.6")]) == "open"
    assert nd.kernel_module_flavour([gpu(cc="6.1", name="Tesla P40")]) == "proprietary"
    # NVIDIA's advice for mixed hosts: Volta next to Ampere stays proprietary.
    assert nd.kernel_module_flavour([gpu(cc="7.0"), gpu(1, cc="8.0")]) == "proprietary"


def test_flavour_auto_without_gpus_is_the_branch_default():
    assert nd.kernel_module_flavour([], branch="580") == "open"
    assert nd.kernel_module_flavour([], branch="535") == "proprietary"
    assert nd.kernel_module_flavour([], branch="550") == "proprietary"
    assert nd.kernel_module_flavour([]) == "open"


def test_flavour_conflicts_name_the_variable_and_the_fix():
    with pytest.raises(
        ValueError,
        match=r"nvidia_driver_flavour 'proprietary' cannot drive GPU 0 .*Blackwell.*set nvidia_driver_flavour: open",
    ):
        nd.kernel_module_flavour([gpu(cc="12.0", name="NVIDIA GeForce RTX 5090")], "proprietary")
    with pytest.raises(ValueError, match=r"'open' cannot drive .*Pascal"):
        nd.kernel_module_flavour([gpu(cc="6.1")], "open")
    with pytest.raises(ValueError, match="no kernel module flavour drives both"):
        nd.kernel_module_flavour([gpu(cc="6.1"), gpu(1, cc="12.0")])
    with pytest.raises(ValueError, match="not one of auto, open, proprietary"):
        nd.kernel_module_flavour([], "closed")


def test_grace_hopper_requires_open_modules():
    with pytest.raises(ValueError, match="cannot drive"):
        nd.kernel_module_flavour([gpu(cc="9.0", device="0x2342", name="NVIDIA GH200 480GB")], "proprietary")
    assert nd.kernel_module_flavour([gpu(cc="9.0", device="0x2330")], "proprietary") == "proprietary"


# --------------------------------------------------------------------------- packages


@pytest.mark.parametrize(
    ("distribution", "release", "source", "branch", "flavour", "packages", "anchor", "fabricmanager"),
    [
        ("Debian", "12", "nvidia", "580", "open", ["nvidia-open"], "nvidia-open", "nvidia-fabricmanager"),
        ("Debian", "13", "nvidia", "580", "proprietary", ["cuda-drivers"], "cuda-drivers", "nvidia-fabricmanager"),
        ("Ubuntu", "24.04", "nvidia", "580", "open", ["nvidia-open-580"], "nvidia-open-580", "nvidia-fabricmanager"),
        (
            "Ubuntu",
            "22.04",
            "nvidia",
            "570",
            "proprietary",
            ["cuda-drivers-570"],
            "cuda-drivers-570",
            "nvidia-fabricmanager-570",
        ),
        ("Ubuntu", "24.04", "nvidia", "590", "open", ["nvidia-open"], "nvidia-open", "nvidia-fabricmanager"),
        (
            "Debian",
            "12",
            "distribution",
            "535",
            "proprietary",
            ["nvidia-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1"],
            "nvidia-kernel-dkms",
            None,
        ),
        (
            "Debian",
            "13.1",
            "distribution",
            "550",
            "open",
            ["nvidia-open-kernel-dkms", "nvidia-smi", "libcuda1", "libnvidia-ml1"],
            "nvidia-open-kernel-dkms",
            None,
        ),
        (
            "Ubuntu",
            "24.04",
            "distribution",
            "580",
            "open",
            ["nvidia-headless-580-server-open", "nvidia-utils-580-server"],
            "nvidia-headless-580-server-open",
            "nvidia-fabricmanager-580",
        ),
        (
            "Ubuntu",
            "22.04",
            "distribution",
            "580",
            "proprietary",
            ["nvidia-headless-580-server", "nvidia-utils-580-server"],
            "nvidia-headless-580-server",
            "nvidia-fabricmanager-580",
        ),
    ],
)
def test_driver_packages(distribution, release, source, branch, flavour, packages, anchor, fabricmanager):
    selection = nd.driver_packages(distribution, release, source, branch, flavour)
    assert selection["packages"] == packages
    assert selection["anchor"] == anchor
    assert selection["fabricmanager"] == fabricmanager


def test_debian_companions_follow_their_own_versions():
    selection = nd.driver_packages("Debian", "12", "distribution", "535", "proprietary")
    assert selection["companions"] == ["nvidia-persistenced", "nvidia-modprobe"]
    assert nd.driver_packages("Debian", "12", "nvidia", "580", "open")["companions"] == []


def test_ubuntu_desktop_branch_packages_without_server_suffix():
    selection = nd.driver_packages("Ubuntu", "24.04", "distribution", "580", "open", ubuntu_server=False)
    assert selection["packages"] == ["nvidia-headless-580-open", "nvidia-utils-580"]


def test_unsupported_distribution_is_refused():
    with pytest.raises(
        ValueError, match=r"Ubuntu 20\.04 is not supported .*Debian 12, Debian 13, Ubuntu 22\.04, Ubuntu 24\.04"
    ):
        nd.driver_packages("Ubuntu", "20.04", "nvidia", "580", "open")


@pytest.mark.parametrize(
    ("distribution", "release", "arch", "directory"),
    [
        ("Debian", "12", "x86_64", "debian12/x86_64"),
        ("Debian", "13", "aarch64", "debian13/sbsa"),
        ("Ubuntu", "24.04", "x86_64", "ubuntu2404/x86_64"),
    ],
)
def test_cuda_repo_dir(distribution, release, arch, directory):
    assert nd.cuda_repo_dir(distribution, release, arch) == directory


@pytest.mark.parametrize(
    ("distribution", "release", "file", "fingerprint"),
    [
        ("Debian", "12", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
        ("Debian", "13.1", "8793F200.pub", "02182E60104FCDC26EAE1B8597A5D4CB8793F200"),
        ("Ubuntu", "22.04", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
        ("Ubuntu", "24.04", "3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    ],
)
def test_cuda_repo_key_per_release(distribution, release, file, fingerprint):
    key = nd.cuda_repo_key(distribution, release)
    assert key == {"file": file, "fingerprints": [fingerprint]}
    # NVIDIA's short key id is the end of the fingerprint and the file's name.
    assert fingerprint.endswith(file.split(".")[0].upper())


def test_the_container_toolkit_key_is_pinned_in_every_plan():
    (fingerprint,) = nd.CONTAINER_TOOLKIT_KEY_FINGERPRINTS
    assert re.fullmatch(r"[0-9A-F]{40}", fingerprint)
    for source in ("nvidia", "distribution"):
        assert nd.driver_plan([], "Debian", "12", "x86_64", source)["container_toolkit_key_fingerprints"] == [
            fingerprint
        ]


def test_every_supported_release_has_a_cuda_repo_key():
    for name, releases in nd.SUPPORTED_RELEASES.items():
        for release in releases:
            assert nd.cuda_repo_key(name, release)["fingerprints"]


def test_default_branch_per_source():
    assert nd.default_branch("Debian", "12", "nvidia") == "580"
    assert nd.default_branch("Debian", "12", "distribution") == "535"
    assert nd.default_branch("Debian", "13", "distribution") == "550"
    assert nd.default_branch("Ubuntu", "22.04", "distribution") == "580"


# apt-cache madison on Debian 12 with bookworm, -security and -backports non-free (Nov 2026).
MADISON_BOOKWORM = "\n".join(
    [
        "nvidia-kernel-dkms | 535.309.01-0+deb12u1 | http://deb.debian.org/debian-security bookworm-security/non-free",
        "nvidia-kernel-dkms | 535.261.03-1 | http://deb.debian.org/debian bookworm/non-free amd64 Packages",
        "nvidia-kernel-dkms | 535.216.03-2~bpo12+1 | http://deb.debian.org/debian bookworm-backports/non-free amd64",
    ]
)


def test_apt_version_for_resolves_upstream_full_and_branch_versions():
    assert nd.apt_version_for(MADISON_BOOKWORM, "535.261.03") == "535.261.03-1"
    assert nd.apt_version_for(MADISON_BOOKWORM, "535.216.03-2~bpo12+1") == "535.216.03-2~bpo12+1"
    assert nd.apt_version_for(MADISON_BOOKWORM, "535") == "535.309.01-0+deb12u1"
    assert nd.apt_version_for(MADISON_BOOKWORM, "580") is None
    assert nd.apt_version_for(MADISON_BOOKWORM, "535.261") is None
    assert nd.apt_version_for("", "535") is None


def test_driver_versioned_packages():
    dpkg = (
        "libcuda1 535.261.03-1\nnvidia-smi 535.261.03-1\n"
        "nvidia-persistenced 535.171.04-1~deb12u1\nnvidia-modprobe 535.161.07-1\ndkms 3.0.10-8\n"
    )
    assert nd.driver_versioned_packages(dpkg, "535.261.03-1") == ["libcuda1", "nvidia-smi"]
    assert nd.driver_versioned_packages(dpkg, "535.261.03") == ["libcuda1", "nvidia-smi"]


# --------------------------------------------------------------------------- the role's plan


def plan(**overrides):
    arguments = {
        "gpus": [],
        "distribution": "Debian",
        "release": "12",
        "architecture": "x86_64",
        "source": "nvidia",
    }
    if "vllm_version" in overrides:
        overrides.update(for_vllm(overrides.pop("vllm_version"), overrides.pop("cuda_version", None)))
    arguments.update(overrides)
    return nd.driver_plan(**arguments)


def test_plan_for_a_blackwell_host_from_nvidia():
    result = plan(gpus=[gpu(device="0x2b85"), gpu(1, device="0x2b85")], release="13", vllm_version="0.33.0")
    assert result["errors"] == []
    assert result["branch"] == "580"
    assert result["flavour"] == "open"
    assert result["generations"] == ["blackwell"]
    assert result["packages"] == ["nvidia-open"]
    assert result["cuda_repo_dir"] == "debian13/x86_64"
    assert result["cuda_repo_key"] == nd.cuda_repo_key("Debian", "13")
    assert result["cuda_repo_key"]["file"] == "8793F200.pub"
    assert result["minimum_driver"] == "580.65.06"


def test_plan_without_gpus_on_debian_archive():
    result = plan(source="distribution")
    assert result["errors"] == []
    assert (result["branch"], result["flavour"], result["anchor"]) == ("535", "proprietary", "nvidia-kernel-dkms")
    assert result["cuda_repo_dir"] is None
    assert result["cuda_repo_key"] is None


def test_plan_refuses_a_branch_too_new_for_pascal():
    result = plan(gpus=[gpu(cc="6.1", name="Tesla P40")], branch="590")
    assert result["errors"] == ["GPU 0 (Tesla P40) is Pascal, supported up to R580: set nvidia_driver_branch: '580'"]


def test_plan_refuses_a_branch_too_old_for_the_engine_cuda():
    result = plan(branch="570", vllm_version="0.33.0")
    assert len(result["errors"]) == 1
    assert result["errors"][0].startswith(
        "branch R570 is older than 580.65.06 (vLLM 0.33.0's PyPI wheel is built with CUDA 13.0"
    )
    assert result["errors"][0].endswith("set nvidia_driver_branch to '580' or newer")


def test_plan_refuses_blackwell_on_debian_archive_with_the_fix():
    result = plan(source="distribution", release="13", gpus=[gpu(device="0x2b85")])
    assert len(result["errors"]) == 1
    assert "branch R550 is older than 570.26" in result["errors"][0]
    assert "nvidia_driver_source: nvidia" in result["errors"][0]


def test_plan_checks_an_exact_version_against_the_minimum():
    result = plan(version="575.64.05", gpus=[gpu(cc="12.0")], vllm_version="0.33.0")
    assert result["branch"] == "575"
    assert result["errors"][0].startswith("nvidia_driver_version 575.64.05 is older than 580.65.06")


def test_plan_input_errors():
    assert plan(version="580.95.05", branch="575")["errors"] == [
        "nvidia_driver_version 580.95.05 is not on nvidia_driver_branch 575: "
        "set nvidia_driver_branch: '580' or leave it empty"
    ]
    assert "is not a driver branch" in plan(branch="R580")["errors"][0]
    assert "nvidia_driver_version" in plan(version="newest")["errors"][0]
    assert "not one of nvidia, distribution" in plan(source="ppa")["errors"][0]
    assert "Debian 11 is not supported" in plan(release="11")["errors"][0]
    assert "its last driver is R470" in plan(gpus=[gpu(cc="3.7", name="Tesla K80")])["errors"][0]


# ----------------------------------------------------------------------------- the data file


def test_driver_data_is_loaded_once_from_the_json_beside_the_module():
    with open(nd.DATA_FILE, encoding="utf-8") as handle:
        assert json.load(handle) == nd.DRIVER_DATA
    assert nd.GENERATIONS is nd.DRIVER_DATA["generations"]["names"]


def test_every_section_of_the_driver_data_names_its_source():
    sections = {key: value for key, value in nd.DRIVER_DATA.items() if key != "about"}
    assert set(sections) == {
        "generations",
        "compute_capability_generations",
        "open_modules_required_device_ids",
        "pci_device_ranges",
        "cuda_minimum_driver",
        "cuda_minor_compat_driver",
        "cuda_introducing",
        "distribution_branch",
        "branches",
        "cuda_repo_keys",
        "container_toolkit_key",
    }
    for name, section in sections.items():
        assert isinstance(section.get("source"), str) and len(section["source"]) > 40, name


def test_generation_rows_have_every_field_and_valid_values():
    fields = nd.DRIVER_DATA["generations"]["fields"]
    for name, row in nd.GENERATIONS.items():
        assert set(row) == set(fields), name
        assert row["open_modules"] in ("unsupported", "supported", "required"), name
        assert row["last_branch"] is None or re.fullmatch(r"\d{3}", row["last_branch"]), name
        assert row["first_cuda"] in nd.CUDA_MINIMUM_DRIVER, name


def test_compute_capability_rows_name_a_generation_and_cover_every_generation():
    rows = nd.DRIVER_DATA["compute_capability_generations"]["rows"]
    for row in rows:
        assert set(row) <= {"major", "minor", "minor_from", "generation"} and row["generation"] in nd.GENERATIONS, row
    assert {row["generation"] for row in rows} == set(nd.GENERATIONS)


def test_pci_ranges_are_ordered_disjoint_and_name_a_generation():
    ranges = sorted(nd.DRIVER_DATA["pci_device_ranges"]["ranges"], key=lambda row: int(row["first"], 16))
    previous_last = -1
    for row in ranges:
        assert re.fullmatch(r"0x[0-9a-f]{4}", row["first"]) and re.fullmatch(r"0x[0-9a-f]{4}", row["last"]), row
        first, last = int(row["first"], 16), int(row["last"], 16)
        assert previous_last < first <= last, row
        assert row["generation"] in nd.GENERATIONS and row["chips"], row
        previous_last = last
    for device in nd.DRIVER_DATA["open_modules_required_device_ids"]["ids"]:
        assert nd.generation_from_pci_device_id(device) == "hopper", device


def test_cuda_tables_use_known_releases_and_driver_versions():
    for cuda, driver in nd.CUDA_MINIMUM_DRIVER.items():
        assert re.fullmatch(r"\d+\.\d", cuda) and nd.driver_version_tuple(driver), cuda
    versions = [nd.driver_version_tuple(driver) for driver in nd.CUDA_MINIMUM_DRIVER.values()]
    assert versions == sorted(versions), "a newer CUDA release never needs an older driver"
    for cc, cuda in nd.DRIVER_DATA["cuda_introducing"]["compute_capabilities"].items():
        assert nd.generation_from_compute_capability(cc) is not None, cc
        assert cuda in nd.CUDA_MINIMUM_DRIVER, cc
    for major, driver in nd.CUDA_MINOR_COMPAT_DRIVER.items():
        assert nd.driver_version_tuple(driver) <= nd.driver_version_tuple(nd.CUDA_MINIMUM_DRIVER[f"{major}.0"]) or (
            major == 11
        ), major


def test_distribution_branches_and_branch_facts_are_branches():
    for (distribution, release), branch in nd.DISTRIBUTION_BRANCH.items():
        assert release in nd.SUPPORTED_RELEASES[distribution]
        assert re.fullmatch(r"\d{3}", branch), (distribution, release)
    for key, value in nd.DRIVER_DATA["branches"].items():
        assert key == "source" or re.fullmatch(r"\d{3}", value), key


# Answers recorded before the tables became data (nvidia_driver_cases.yml).


@pytest.mark.parametrize(("device", "generation"), sorted(CASES["pci_generation"].items()))
def test_pci_generation_answers_are_unchanged(device, generation):
    assert nd.generation_from_pci_device_id(device) == generation


@pytest.mark.parametrize(("cc", "generation"), sorted(CASES["capability_generation"].items()))
def test_capability_generation_answers_are_unchanged(cc, generation):
    assert nd.generation_from_compute_capability(cc) == generation


@pytest.mark.parametrize(("cc", "driver"), sorted(CASES["compute_capability_minimum"].items()))
def test_compute_capability_minimum_answers_are_unchanged(cc, driver):
    assert nd.minimum_driver_for_compute_capability(cc) == driver


@pytest.mark.parametrize(("generation", "driver"), sorted(CASES["generation_minimum"].items()))
def test_generation_minimum_answers_are_unchanged(generation, driver):
    device = next(
        row["first"] for row in nd.DRIVER_DATA["pci_device_ranges"]["ranges"] if row["generation"] == generation
    )
    assert nd.minimum_driver_for(gpus=[gpu(device=device)])["minimum_driver"] == driver


@pytest.mark.parametrize(("cuda", "drivers"), sorted(CASES["cuda_minimum"].items()))
def test_cuda_minimum_answers_are_unchanged(cuda, drivers):
    assert [nd.minimum_driver_for_cuda(cuda), nd.minimum_driver_for_cuda(cuda, True)] == drivers


@pytest.mark.parametrize(("release", "branches"), sorted(CASES["default_branch"].items()))
def test_default_branch_answers_are_unchanged(release, branches):
    distribution, version = release.split()
    assert [nd.default_branch(distribution, version, source) for source in nd.SOURCES] == branches


def test_the_apt_pin_names_its_packages_by_glob_not_by_regular_expression():
    """apt matches each Package pattern of a preferences stanza against every package at every cache open: the
    regular expressions the pin had cost every apt command on the host 9 to 12 s (issue 24); globs about 1 s.
    The globs match what the expressions matched (only versions of the pinned driver get the priority)."""
    patterns = nd.APT_PIN_PACKAGES.split()
    assert patterns and not [p for p in patterns if p.startswith("/") or p.endswith("/")]
    before = [re.compile(r) for r in ("nvidia", "^libcuda", "^cuda-drivers", "^libxnvctrl", "^libnvsdm", "^nvlink")]
    names = [
        "nvidia-smi",
        "libnvidia-ml1",
        "firmware-nvidia-gsp",
        "nvidia-kernel-dkms",
        "nvidia-open-kernel-dkms",
        "libcuda1",
        "libcudart12",
        "cuda-drivers-535",
        "libxnvctrl0",
        "libnvsdm-570",
        "nvlink5-570",
        "nvidia-container-toolkit",
        "glx-alternative-mesa",
        "cuda-toolkit-12-8",
        "xserver-xorg-video-nouveau",
        "dkms",
    ]
    for name in names:
        globbed = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        assert globbed == any(r.search(name) for r in before), name
