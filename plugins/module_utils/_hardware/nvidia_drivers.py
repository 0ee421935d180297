# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""NVIDIA driver facts: GPU generations, kernel module flavours, minimum drivers and apt packages.

The one table of driver requirements in the collection: the ``nvidia_driver`` role and the
``driver-version`` plan check both read it. The facts are data, ``nvidia_drivers.json`` beside this
file (loaded once, on import), each section with its source; this module holds the rules that read them.

Sources (each section of nvidia_drivers.json names its own; docs/nvidia_driver.md has the details):

* GPU generations and open kernel modules (``generations``, ``open_modules_required_device_ids``):
  NVIDIA, "NVIDIA Transitions Fully Towards Open-Source GPU Kernel Modules" (R560): open modules run on
  Turing and newer, are required on Blackwell and Grace Hopper, and do not run on Maxwell, Pascal and
  Volta; mixed old/new hosts keep the proprietary flavour. R580 is the last branch for Maxwell, Pascal
  and Volta; R470 was the last for Kepler.
* Generation of a compute capability (``compute_capability_generations``): NVIDIA's compute capability per
  generation.
* PCI device id ranges (``pci_device_ranges``): the PCI ID repository (pci.ids) chip families.
* Minimum driver per CUDA release (``cuda_minimum_driver``): CUDA Toolkit release notes, Table 3
  (Linux x86_64, GA release); CUDA minor version compatibility (``cuda_minor_compat_driver``, Table 2):
  11.x >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580.65.06; the first CUDA release of each compute
  capability (``cuda_introducing``).
* CUDA of vLLM's default PyPI wheel: read from each published wheel (``vllm/_C.abi3.so``: nvcc release
  string, PTX ISA version and the libcudart soname it links), see the ``wheel_cuda`` field of the
  release records (``_engines/vllm/releases.json``).
* Packages: NVIDIA's CUDA repository meta-packages (``nvidia-open`` open, ``cuda-drivers`` proprietary;
  branch-named ``*-<branch>`` variants before R590: ``branches``), Debian's non-free/contrib packages
  (``nvidia-kernel-dkms`` / ``nvidia-open-kernel-dkms``, ``nvidia-smi``, ``libcuda1``...) and Ubuntu's
  restricted packages (``nvidia-headless-<branch>[-server][-open]``); the branch each distribution's
  archive carries (``distribution_branch``).
* The key of each release's directory of NVIDIA's CUDA repository and its fingerprint (``cuda_repo_keys``):
  NVIDIA's driver installation guide and github.com/NVIDIA/cuda-repo-management; the role checks the
  downloaded key against it before apt trusts it (``_core/openpgp.py``); the same for the container toolkit
  repository's key (``container_toolkit_key``).

Public API (plain types in, plain types out; ``ValueError`` messages name the variable to fix):

``driver_version_tuple(text) -> tuple``: ``"575.51.03"`` -> ``(575, 51, 3)``.
``driver_at_least(installed, minimum) -> bool``.
``branch_of(version) -> str``: ``"580.95.05"`` -> ``"580"``.
``generation_from_compute_capability(cc) -> str | None``: ``"12.0"`` -> ``"blackwell"``.
``generation_from_pci_device_id(device_id) -> str | None``: ``"0x2b85"`` -> ``"blackwell"``.
``gpu_generation(gpu) -> str | None``: an ``inferops_gpus`` entry (compute capability first, then PCI id).
``GENERATIONS``: name -> ``{"label", "open_modules", "last_branch", "compute_capabilities", "first_cuda"}``.
``DRIVER_DATA``: nvidia_drivers.json as loaded.
``minimum_driver_for_cuda(cuda_version, minor_version_compatibility=False) -> str``.
``minimum_driver_for_compute_capability(cc) -> str``.
``minimum_driver_for(compute_capabilities=(), cuda_version=None, cuda_source='', gpus=()) -> dict``:
    ``{"minimum_driver": "580.65.06" | None, "cuda_version": "13.0" | None, "reasons": [str, ...]}``.
``kernel_module_flavour(gpus, requested="auto", branch=None) -> str``: ``"open"`` or ``"proprietary"``.
``default_branch(distribution, release, source) -> str``.
``driver_packages(distribution, release, source, branch, flavour, ...) -> dict``: apt packages.
``APT_PIN_PACKAGES`` and ``UNATTENDED_BLACKLIST``: the apt preferences and unattended-upgrades patterns.
``apt_version_for(madison, version) -> str | None``: the archive version of an upstream driver version.
``cuda_repo_key(distribution, release) -> dict``: ``{"file": "3bf863cc.pub", "fingerprints": [...]}``.
``CONTAINER_TOOLKIT_KEY_FINGERPRINTS``: the pinned fingerprints of the container toolkit repository's key.
``driver_plan(...) -> dict``: everything the role needs, with ``errors`` naming the variables to fix.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._core.versions import VersionError, release_tuple

# --------------------------------------------------------------------------- the data

DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nvidia_drivers.json")
with open(DATA_FILE, encoding="utf-8") as _handle:
    DRIVER_DATA: Dict[str, Any] = json.load(_handle)


def _capability_key(text: str) -> Tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


# name -> {"label", "open_modules" ("unsupported", "supported", "required"), "last_branch", ...}.
GENERATIONS: Dict[str, Dict[str, Any]] = DRIVER_DATA["generations"]["names"]
_CAPABILITY_GENERATIONS: Tuple[Mapping[str, Any], ...] = tuple(DRIVER_DATA["compute_capability_generations"]["rows"])
_OPEN_REQUIRED_DEVICE_IDS = frozenset(int(i, 16) for i in DRIVER_DATA["open_modules_required_device_ids"]["ids"])
_PCI_RANGES: Tuple[Tuple[int, int, str], ...] = tuple(
    (int(row["first"], 16), int(row["last"], 16), row["generation"])
    for row in DRIVER_DATA["pci_device_ranges"]["ranges"]
)
CUDA_MINIMUM_DRIVER: Dict[str, str] = DRIVER_DATA["cuda_minimum_driver"]["drivers"]
CUDA_MINOR_COMPAT_DRIVER: Dict[int, str] = {
    int(major): driver for major, driver in DRIVER_DATA["cuda_minor_compat_driver"]["drivers"].items()
}
_CUDA_INTRODUCING: Dict[Tuple[int, int], str] = {
    _capability_key(cc): cuda for cc, cuda in DRIVER_DATA["cuda_introducing"]["compute_capabilities"].items()
}
# Lowest driver of a generation's first compute capability (what a PCI id alone can tell).
_GENERATION_MINIMUM: Dict[str, str] = {
    name: CUDA_MINIMUM_DRIVER[row["first_cuda"]] for name, row in GENERATIONS.items()
}
# What each distribution's own archive carries; its releases are the ones the role supports.
DISTRIBUTION_BRANCH: Dict[Tuple[str, str], str] = {
    (name, release): branch
    for name, releases in DRIVER_DATA["distribution_branch"]["releases"].items()
    for release, branch in releases.items()
}
SUPPORTED_RELEASES: Dict[str, Tuple[str, ...]] = {
    name: tuple(releases) for name, releases in DRIVER_DATA["distribution_branch"]["releases"].items()
}
_CUDA_REPO_KEYS: Dict[Tuple[str, str], Dict[str, Any]] = {
    (name, release): key
    for name, releases in DRIVER_DATA["cuda_repo_keys"]["releases"].items()
    for release, key in releases.items()
}
CONTAINER_TOOLKIT_KEY_FINGERPRINTS: Tuple[str, ...] = tuple(DRIVER_DATA["container_toolkit_key"]["fingerprints"])
_BRANCHES: Dict[str, str] = DRIVER_DATA["branches"]
NVIDIA_DEFAULT_BRANCH: str = _BRANCHES["nvidia_default"]
_OPEN_DEFAULT_FROM_BRANCH = int(_BRANCHES["open_default_from"])
_UNVERSIONED_NAMES_FROM_BRANCH = int(_BRANCHES["unversioned_names_from"])
_UNVERSIONED_FABRICMANAGER_FROM_BRANCH = int(_BRANCHES["unversioned_fabricmanager_from"])

# --------------------------------------------------------------------------- generations


def _compute_capability(value: Any) -> Optional[Tuple[int, int]]:
    if value is None or value == "":
        return None
    match = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(value))
    if not match:
        raise ValueError(f"compute capability {value!r} is not of the form MAJOR.MINOR, for example '8.9'")
    return int(match.group(1)), int(match.group(2))


def generation_from_compute_capability(cc: Any) -> Optional[str]:
    """GPU generation of a CUDA compute capability ("8.9" -> "ada"); None when unknown."""
    parsed = _compute_capability(cc)
    if parsed is None:
        return None
    major, minor = parsed
    for row in _CAPABILITY_GENERATIONS:
        if row["major"] == major and row.get("minor", minor) == minor and minor >= row.get("minor_from", 0):
            return str(row["generation"])
    return None


def _device_id(value: Any) -> Optional[int]:
    if value is None or value == "":
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip().lower()
    try:
        return int(text, 16)
    except ValueError as error:
        raise ValueError(f"PCI device id {value!r} is not hexadecimal, for example '0x2b85'") from error


def generation_from_pci_device_id(device_id: Any) -> Optional[str]:
    """GPU generation of an NVIDIA PCI device id ("0x2b85" -> "blackwell"); None when unknown."""
    number = _device_id(device_id)
    if number is None:
        return None
    for low, high, generation in _PCI_RANGES:
        if low <= number <= high:
            return generation
    return None


def gpu_generation(gpu: Mapping[str, Any]) -> Optional[str]:
    """Generation of an ``inferops_gpus`` entry: compute capability when known, else its PCI device id."""
    return generation_from_compute_capability(gpu.get("compute_capability")) or generation_from_pci_device_id(
        gpu.get("pci_device_id")
    )


def _open_modules(gpu: Mapping[str, Any], generation: str) -> str:
    number = _device_id(gpu.get("pci_device_id"))
    if number in _OPEN_REQUIRED_DEVICE_IDS:
        return "required"
    return str(GENERATIONS[generation]["open_modules"])


def _gpu_label(gpu: Mapping[str, Any]) -> str:
    name = gpu.get("name") or (f"PCI device {gpu['pci_device_id']}" if gpu.get("pci_device_id") else "unnamed")
    return f"GPU {gpu.get('index', '?')} ({name})"


# --------------------------------------------------------------------------- driver versions


def driver_version_tuple(text: Any) -> Tuple[int, ...]:
    """ "575.51.03" -> (575, 51, 3); a Debian revision ("-1", "-0ubuntu1") is ignored."""
    try:
        return release_tuple(text, variable="driver version", example="'580.95.05'", parts=(1, 2, 3), suffix="-")
    except VersionError as error:
        raise ValueError(
            f"driver version {text!r} is not of the form BRANCH[.MINOR[.PATCH]], for example '580.95.05'"
        ) from error


def driver_at_least(installed: Any, minimum: Any) -> bool:
    return driver_version_tuple(installed) >= driver_version_tuple(minimum)


def branch_of(version: Any) -> str:
    return str(driver_version_tuple(version)[0])


def driver_shortfall(installed: Any, minimum: Any) -> Optional[str]:
    """None when the installed driver is at least ``minimum``, else the branch of ``minimum`` (branch_of): each
    version parsed once (driver_at_least and branch_of would parse ``minimum`` twice)."""
    needed = driver_version_tuple(minimum)
    if driver_version_tuple(installed) >= needed:
        return None
    return str(needed[0])


def _cuda_key(cuda_version: Any) -> str:
    match = re.fullmatch(r"\s*(?:cu)?(\d+)\.?(\d+)(?:\.\d+)*\s*", str(cuda_version))
    if not match:
        raise ValueError(f"CUDA version {cuda_version!r} is not of the form MAJOR.MINOR, for example '12.8'")
    return f"{int(match.group(1))}.{int(match.group(2))}"


def minimum_driver_for_cuda(cuda_version: Any, minor_version_compatibility: bool = False) -> str:
    """Lowest Linux driver for a CUDA release ("12.8" -> "570.26"; also "cu128", "12.8.1").

    With ``minor_version_compatibility`` the floor of the CUDA major (12.x -> 525.60.13) instead.
    """
    key = _cuda_key(cuda_version)
    if minor_version_compatibility:
        major = int(key.split(".", maxsplit=1)[0])
        if major not in CUDA_MINOR_COMPAT_DRIVER:
            raise ValueError(f"CUDA {key} has no minor version compatibility floor in the driver table")
        return CUDA_MINOR_COMPAT_DRIVER[major]
    if key not in CUDA_MINIMUM_DRIVER:
        raise ValueError(
            f"CUDA {key} is not in the driver table (known: {', '.join(CUDA_MINIMUM_DRIVER)}); "
            "use a released CUDA version such as 12.8 or 13.0"
        )
    return CUDA_MINIMUM_DRIVER[key]


def minimum_driver_for_compute_capability(cc: Any) -> str:
    """Lowest driver of the first CUDA release that supports a compute capability ("12.0" -> "570.26")."""
    parsed = _compute_capability(cc)
    if parsed is None:
        raise ValueError("compute capability is empty")
    if parsed in _CUDA_INTRODUCING:
        return CUDA_MINIMUM_DRIVER[_CUDA_INTRODUCING[parsed]]
    # An unlisted minor of a known major (a future 12.2 part): the newest entry of that major.
    same_major = sorted(key for key in _CUDA_INTRODUCING if key[0] == parsed[0] and key <= parsed)
    if not same_major:
        raise ValueError(f"compute capability {cc} is not in the driver table")
    return CUDA_MINIMUM_DRIVER[_CUDA_INTRODUCING[same_major[-1]]]


def minimum_driver_for(
    compute_capabilities: Iterable[Any] = (),
    cuda_version: Any = None,
    cuda_source: str = "",
    gpus: Iterable[Mapping[str, Any]] = (),
) -> Dict[str, Any]:
    """The lowest driver that runs the GPUs and the engine's CUDA, with the reason for each bound.

    ``cuda_version``: the CUDA release the engine is built with; ``cuda_source`` says where it comes from
    in the reason (e.g. "vLLM 0.33.0's PyPI wheel", from the engine's release facts); ``gpus`` are
    ``inferops_gpus`` entries (their compute capability, or generation from the PCI id, is used).
    Returns ``{"minimum_driver": str | None, "cuda_version": str | None, "reasons": [str]}``; the
    highest bound wins and ``reasons`` lists every bound that applies, highest first.
    """
    bounds: List[Tuple[Tuple[int, ...], str, str]] = []
    for cc in compute_capabilities:
        if cc in (None, ""):
            continue
        need = minimum_driver_for_compute_capability(cc)
        bounds.append((driver_version_tuple(need), need, f"compute capability {cc} needs driver >= {need}"))
    for gpu in gpus:
        cc = gpu.get("compute_capability")
        if cc not in (None, ""):
            need = minimum_driver_for_compute_capability(cc)
            bounds.append(
                (
                    driver_version_tuple(need),
                    need,
                    f"{_gpu_label(gpu)}, compute capability {cc}, needs driver >= {need}",
                )
            )
            continue
        generation = generation_from_pci_device_id(gpu.get("pci_device_id"))
        if generation is not None:
            need = _GENERATION_MINIMUM[generation]
            label = GENERATIONS[generation]["label"]
            bounds.append(
                (driver_version_tuple(need), need, f"{_gpu_label(gpu)} is {label}, which needs driver >= {need}")
            )
    cuda: Optional[str] = None
    if cuda_version not in (None, ""):
        cuda = _cuda_key(cuda_version)
        need = minimum_driver_for_cuda(cuda)
        what = f"{cuda_source} is built with CUDA {cuda}, which" if cuda_source else f"CUDA {cuda}"
        bounds.append((driver_version_tuple(need), need, f"{what} needs driver >= {need}"))
    bounds.sort(key=lambda bound: bound[0], reverse=True)
    return {
        "minimum_driver": bounds[0][1] if bounds else None,
        "cuda_version": cuda,
        "reasons": [bound[2] for bound in bounds],
    }


# --------------------------------------------------------------------------- kernel module flavour

FLAVOURS = ("open", "proprietary")


def kernel_module_flavour(gpus: Sequence[Mapping[str, Any]], requested: str = "auto", branch: Any = None) -> str:
    """ "open" or "proprietary" for these GPUs; ``requested`` is the inventory's nvidia_driver_flavour.

    auto: open when every GPU takes it (Turing and newer), proprietary when any GPU is Maxwell, Pascal
    or Volta (NVIDIA's advice for mixed hosts); without known GPUs, the default of the branch (open
    from R560). Raises ValueError for a combination no flavour can drive.
    """
    if requested not in ("auto", *FLAVOURS):
        raise ValueError(f"nvidia_driver_flavour {requested!r} is not one of auto, open, proprietary")
    needs_open: List[str] = []
    needs_proprietary: List[str] = []
    for gpu in gpus:
        generation = gpu_generation(gpu)
        if generation is None:
            continue
        support = _open_modules(gpu, generation)
        label = f"{_gpu_label(gpu)}, {GENERATIONS[generation]['label']}"
        if support == "required":
            needs_open.append(label)
        elif support == "unsupported":
            needs_proprietary.append(label)
    if needs_open and needs_proprietary:
        raise ValueError(
            f"no kernel module flavour drives both {', '.join(needs_open)} (open modules only) and "
            f"{', '.join(needs_proprietary)} (proprietary modules only): split these GPUs across hosts"
        )
    if requested == "proprietary" and needs_open:
        raise ValueError(
            f"nvidia_driver_flavour 'proprietary' cannot drive {', '.join(needs_open)}: "
            "set nvidia_driver_flavour: open (or auto)"
        )
    if requested == "open" and needs_proprietary:
        raise ValueError(
            f"nvidia_driver_flavour 'open' cannot drive {', '.join(needs_proprietary)}: "
            "set nvidia_driver_flavour: proprietary (or auto)"
        )
    if requested != "auto":
        return requested
    if needs_open:
        return "open"
    if needs_proprietary:
        return "proprietary"
    if any(gpu_generation(gpu) is not None for gpu in gpus):
        return "open"
    if branch not in (None, "") and int(branch_of(branch)) < _OPEN_DEFAULT_FROM_BRANCH:
        return "proprietary"
    return "open"


# --------------------------------------------------------------------------- packages

SOURCES = ("nvidia", "distribution")
CUDA_REPO_URL = "https://developer.download.nvidia.com/compute/cuda/repos"
_REPO_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "sbsa", "arm64": "sbsa"}

# Package field of the apt preferences stanza: every package of the driver's source packages. Only
# versions that match the pin get its priority, so the container toolkit (1.x) and Debian's
# glx-alternative helpers are unaffected. Glob patterns (apt_preferences(5)), not /regular expressions/:
# apt matches each pattern against every package of the archive at every cache open, and the six regular
# expressions this field had (/nvidia/ /^libcuda/ ...) made each apt command on the host take 9 to 12 s of CPU
# more, against about 1 s with these globs (apt-cache policy on Debian 12 with contrib and non-free, the same
# candidates either way; issue 24, measured in the nvidia_driver scenario).
APT_PIN_PACKAGES = "*nvidia* libcuda* cuda-drivers* libxnvctrl* libnvsdm* nvlink*"
# unattended-upgrades Package-Blacklist entries (regular expressions).
UNATTENDED_BLACKLIST = (
    "^nvidia-",
    "^libnvidia-",
    "^libcuda",
    "^cuda-drivers",
    "^firmware-nvidia-",
    "^libxnvctrl",
    "^xserver-xorg-video-nvidia",
)


def _release_key(distribution: str, release: Any) -> Tuple[str, str]:
    name = str(distribution).strip().lower()
    version = str(release).strip()
    if name == "debian":
        version = version.split(".", 1)[0]
    if name not in SUPPORTED_RELEASES or version not in SUPPORTED_RELEASES[name]:
        supported = ", ".join(f"{d.capitalize()} {r}" for d, rs in SUPPORTED_RELEASES.items() for r in rs)
        raise ValueError(
            f"{distribution} {release} is not supported by the nvidia_driver role (supported: {supported})"
        )
    return name, version


def default_branch(distribution: str, release: Any, source: str) -> str:
    """Branch used when nvidia_driver_branch is empty: R580 from NVIDIA, else what the archive has."""
    key = _release_key(distribution, release)
    if source == "nvidia":
        return NVIDIA_DEFAULT_BRANCH
    return DISTRIBUTION_BRANCH[key]


def cuda_repo_dir(distribution: str, release: Any, architecture: str) -> str:
    """Directory of NVIDIA's CUDA repository: "debian12/x86_64", "ubuntu2404/sbsa"."""
    name, version = _release_key(distribution, release)
    arch = _REPO_ARCH.get(str(architecture))
    if arch is None:
        raise ValueError(f"architecture {architecture!r} has no NVIDIA CUDA repository (x86_64 and aarch64 do)")
    return f"{name}{version.replace('.', '')}/{arch}"


def cuda_repo_key(distribution: str, release: Any) -> Dict[str, Any]:
    """The key file of the release's directory of NVIDIA's CUDA repository and its pinned fingerprints."""
    key = _CUDA_REPO_KEYS[_release_key(distribution, release)]
    return {"file": key["file"], "fingerprints": list(key["fingerprints"])}


def driver_packages(
    distribution: str,
    release: Any,
    source: str,
    branch: Any,
    flavour: str,
    ubuntu_server: bool = True,
) -> Dict[str, Any]:
    """The apt packages of a driver: ``{"packages", "companions", "anchor", "fabricmanager"}``.

    ``packages`` are installed at the driver version; ``companions`` at whatever version the source
    has (their versions do not follow the driver's); ``anchor`` is the package whose archive versions
    decide the driver version (its kernel module package or meta-package); ``fabricmanager`` is
    None where the source has no Fabric Manager package.
    """
    name, _release = _release_key(distribution, release)
    if source not in SOURCES:
        raise ValueError(f"nvidia_driver_source {source!r} is not one of {', '.join(SOURCES)}")
    if flavour not in FLAVOURS:
        raise ValueError(f"kernel module flavour {flavour!r} is not one of {', '.join(FLAVOURS)}")
    br = branch_of(branch)
    if source == "nvidia":
        unversioned = int(br) >= _UNVERSIONED_NAMES_FROM_BRANCH
        meta = "nvidia-open" if flavour == "open" else "cuda-drivers"
        if name == "ubuntu" and not unversioned:
            meta = f"{meta}-{br}"
        fabricmanager = (
            "nvidia-fabricmanager"
            if int(br) >= _UNVERSIONED_FABRICMANAGER_FROM_BRANCH
            else f"nvidia-fabricmanager-{br}"
        )
        return {"packages": [meta], "companions": [], "anchor": meta, "fabricmanager": fabricmanager}
    if name == "debian":
        module = "nvidia-open-kernel-dkms" if flavour == "open" else "nvidia-kernel-dkms"
        # Compute only: no X server driver, GLX or Vulkan libraries. nvidia-persistenced and
        # nvidia-modprobe are packaged on their own release cycle (535.171.04 next to 535.309.01).
        return {
            "packages": [module, "nvidia-smi", "libcuda1", "libnvidia-ml1"],
            "companions": ["nvidia-persistenced", "nvidia-modprobe"],
            "anchor": module,
            "fabricmanager": None,
        }
    suffix = "-server" if ubuntu_server else ""
    open_suffix = "-open" if flavour == "open" else ""
    headless = f"nvidia-headless-{br}{suffix}{open_suffix}"
    return {
        "packages": [headless, f"nvidia-utils-{br}{suffix}"],
        "companions": [],
        "anchor": headless,
        "fabricmanager": f"nvidia-fabricmanager-{br}",
    }


def apt_version_for(madison: Any, version: Any) -> Optional[str]:
    """Archive version of ``version`` in ``apt-cache madison`` output (newest first); None when absent.

    ``version`` is an upstream version ("535.261.03"), a full archive version ("550.163.01-2") or a
    branch ("580": the newest of the branch).
    """
    wanted = str(version).strip()
    for line in str(madison).splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) < 2 or not fields[1]:
            continue
        candidate = fields[1]
        if "-" in wanted:
            if candidate == wanted:
                return candidate
        elif "." in wanted:
            if candidate.split("-", 1)[0] == wanted:
                return candidate
        elif candidate.split(".", 1)[0] == wanted:
            return candidate
    return None


def _upstream(version: str) -> str:
    return version.split("-", 1)[0]


def driver_versioned_packages(dpkg_query: Any, driver_version: Any) -> List[str]:
    """Installed packages at the driver's upstream version, from ``dpkg-query -W -f '${Package} ${Version}\\n'``."""
    upstream = _upstream(str(driver_version))
    names = []
    for line in str(dpkg_query).splitlines():
        fields = line.split()
        if len(fields) == 2 and _upstream(fields[1]) == upstream:
            names.append(fields[0])
    return sorted(set(names))


# --------------------------------------------------------------------------- the role's plan


def _pinned_branch(distribution: str, release: Any, source: str, branch: Any, version: Any) -> Tuple[str, str, str]:
    """``(error, version_text, branch_text)`` of the inventory's pin; ``error`` is "" when it is consistent."""
    version_text = str(version or "").strip()
    branch_text = str(branch or "").strip()
    if version_text:
        try:
            driver_version_tuple(version_text)
        except ValueError as error:
            return f"nvidia_driver_version: {error}", version_text, branch_text
        if branch_text and branch_of(version_text) != branch_text:
            return (
                f"nvidia_driver_version {version_text} is not on nvidia_driver_branch {branch_text}: "
                f"set nvidia_driver_branch: '{branch_of(version_text)}' or leave it empty",
                version_text,
                branch_text,
            )
        return "", version_text, branch_of(version_text)
    if branch_text:
        if not re.fullmatch(r"\d{3}", branch_text):
            return (
                f"nvidia_driver_branch {branch_text!r} is not a driver branch: use its number, for example '580'",
                version_text,
                branch_text,
            )
        return "", version_text, branch_text
    return "", version_text, default_branch(distribution, release, source)


def _generations_and_errors(gpus: Sequence[Mapping[str, Any]], branch_text: str) -> Tuple[List[str], List[str]]:
    """The GPUs' generations, and an error for each GPU that the branch no longer drives."""
    generations: List[str] = []
    errors: List[str] = []
    for gpu in gpus:
        generation = gpu_generation(gpu)
        if generation is not None and generation not in generations:
            generations.append(generation)
        if generation is None:
            continue
        last = GENERATIONS[generation]["last_branch"]
        label = f"{_gpu_label(gpu)} is {GENERATIONS[generation]['label']}"
        if generation == "kepler":
            errors.append(
                f"{label}: its last driver is R470, which this role does not install; "
                "remove the card from this host or manage its driver by hand"
            )
        elif last is not None and int(branch_text) > int(last):
            errors.append(f"{label}, supported up to R{last}: set nvidia_driver_branch: '{last}'")
    return generations, errors


def _below_minimum(
    requirement: Mapping[str, Any], version_text: str, branch_text: str, source: str, distribution: str
) -> Optional[str]:
    """The error when the pinned version (or the branch's newest release) is older than the minimum driver."""
    minimum = requirement["minimum_driver"]
    if minimum is None:
        return None
    # A branch-only pin is checked at the newest release of the branch; the role checks the
    # resolved version again before installing.
    pinned = version_text or f"{branch_text}.999.99"
    if driver_at_least(pinned, minimum):
        return None
    what = f"nvidia_driver_version {version_text}" if version_text else f"branch R{branch_text}"
    fix = (
        "set nvidia_driver_version to a newer release"
        if version_text
        else f"set nvidia_driver_branch to '{branch_of(minimum)}' or newer"
    )
    if source == "distribution" and not version_text and distribution.lower() == "debian":
        fix += " with nvidia_driver_source: nvidia (Debian's archive has no newer branch)"
    return f"{what} is older than {minimum} ({requirement['reasons'][0]}): {fix}"


def driver_plan(
    gpus: Sequence[Mapping[str, Any]],
    distribution: str,
    release: Any,
    architecture: str,
    source: str,
    branch: Any = "",
    version: Any = "",
    flavour: str = "auto",
    cuda_version: Any = "",
    cuda_source: str = "",
    ubuntu_server: bool = True,
) -> Dict[str, Any]:
    """Everything the nvidia_driver role decides before it changes the host; ``errors`` is empty when the
    inputs are consistent, else each entry names the variable and the fix, and the other keys may be None."""
    errors: List[str] = []
    plan: Dict[str, Any] = {
        "branch": None,
        "flavour": None,
        "generations": [],
        "minimum_driver": None,
        "minimum_driver_reasons": [],
        "cuda_version": None,
        "packages": [],
        "companions": [],
        "anchor": None,
        "fabricmanager": None,
        "cuda_repo_dir": None,
        "cuda_repo_key": None,
        "container_toolkit_key_fingerprints": list(CONTAINER_TOOLKIT_KEY_FINGERPRINTS),
        "apt_pin_packages": APT_PIN_PACKAGES,
        "unattended_blacklist": list(UNATTENDED_BLACKLIST),
        "errors": errors,
    }
    try:
        _release_key(distribution, release)
    except ValueError as error:
        errors.append(str(error))
        return plan
    if source not in SOURCES:
        errors.append(
            f"nvidia_driver_source {source!r} is not one of {', '.join(SOURCES)}: set nvidia, or distribution"
        )
        return plan
    pin_error, version_text, branch_text = _pinned_branch(distribution, release, source, branch, version)
    if pin_error:
        errors.append(pin_error)
        return plan
    plan["branch"] = branch_text
    plan["generations"], generation_errors = _generations_and_errors(gpus, branch_text)
    errors.extend(generation_errors)

    try:
        plan["flavour"] = kernel_module_flavour(gpus, flavour, branch_text)
    except ValueError as error:
        errors.append(str(error))

    try:
        requirement = minimum_driver_for(gpus=gpus, cuda_version=cuda_version, cuda_source=cuda_source)
    except ValueError as error:
        errors.append(str(error))
        requirement = {"minimum_driver": None, "reasons": [], "cuda_version": None}
    plan["minimum_driver"] = requirement["minimum_driver"]
    plan["minimum_driver_reasons"] = requirement["reasons"]
    plan["cuda_version"] = requirement["cuda_version"]
    below = _below_minimum(requirement, version_text, branch_text, source, distribution)
    if below:
        errors.append(below)

    if plan["flavour"] is not None:
        selection = driver_packages(distribution, release, source, branch_text, plan["flavour"], ubuntu_server)
        for key in ("packages", "companions", "anchor", "fabricmanager"):
            plan[key] = selection[key]
    if source == "nvidia":
        try:
            plan["cuda_repo_dir"] = cuda_repo_dir(distribution, release, architecture)
            plan["cuda_repo_key"] = cuda_repo_key(distribution, release)
        except ValueError as error:
            errors.append(f"{error}: set nvidia_driver_source: distribution")
    return plan
