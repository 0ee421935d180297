# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Parsers for NVIDIA GPU discovery: ``nvidia-smi`` output and the Linux sysfs PCI tree.

Plain Python without Ansible imports: the ``gpu_facts`` module runs it on the managed host and
the ``gpu_topology`` filter runs it on the controller for declared hardware. Python 3.9 syntax.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import typing as t

# Cells of `nvidia-smi topo -m` between two GPUs, besides NV<k>. Old drivers printed SOC for SYS.
LINK_CELLS = frozenset(("X", "PIX", "PXB", "PHB", "NODE", "SYS"))
LEGACY_CELLS = {"SOC": "SYS"}
# Cells of `nvidia-smi topo -p2p r|w|n|a|p`: OK, or why peer-to-peer is refused (chipset, GPU,
# topology not supported, not supported, disabled by regkey, unknown).
P2P_CELLS = frozenset(("X", "OK", "CNS", "GNS", "TNS", "NS", "DR", "U"))
AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")

# The fields gpu_facts asks `nvidia-smi --query-gpu` for, in this order.
QUERY_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "pci.device_id",
    "memory.total",
    "compute_cap",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "driver_version",
)
# Rejected by drivers older than R510; the query is repeated without it.
OPTIONAL_QUERY_FIELDS = ("compute_cap",)

NVIDIA_VENDOR_ID = 0x10DE
DISPLAY_CLASS = 0x03  # PCI base class "display controller" (VGA 0x0300, 3D 0x0302)
# PCIe transfer rate per lane (GT/s) -> generation.
_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6, 128.0: 7}

# ESC[4m ... ESC[0m around the header on some drivers; pastes often lose the ESC byte.
_ANSI_RE = re.compile(r"\x1b?\[[0-9;]*m")
_GPU_LABEL_RE = re.compile(r"GPU(\d+)")
_NVLINK_RE = re.compile(r"NV(\d+)")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_BUS_ID_RE = re.compile(
    r"(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<device>[0-9a-fA-F]{1,2})\.(?P<function>[0-7])"
)
_LEADING_NUMBER_RE = re.compile(r"^\s*(\d+)")
_CUDA_VERSION_RE = re.compile(r"^\s*CUDA (?:UMD )?Version\s*:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
_XML_CUDA_VERSION_RE = re.compile(r"<cuda_version>\s*([^<\s]+)\s*</cuda_version>")


def empty_topology() -> dict[str, t.Any]:
    """The topology of a host without GPUs (or whose topology is unknown)."""
    return {
        "gpus": [],
        "matrix": [],
        "cpu_affinity": [],
        "numa_affinity": [],
        "gpu_numa_id": [],
        "nics": [],
        "nic_matrix": [],
        "nvlink": [],
        "p2p": [],
    }


class _OtherMatrix(Exception):
    """A GPU matrix whose cells belong to another kind of matrix."""


class _Line:
    """One line of a matrix split into fields: on TABs when it has any (empty fields kept, they
    stand for empty affinities), otherwise on runs of two or more spaces (a paste)."""

    def __init__(self, text: str) -> None:
        self.tabbed = "\t" in text
        if self.tabbed:
            self.fields = [field.strip() for field in text.split("\t")]
        else:
            self.fields = [field.strip() for field in re.split(r" {2,}", text.strip())]


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def _header_of(text: str) -> list[str] | None:
    """The column names when `text` is the header of a GPU matrix (`GPU0` first, and no `X` after
    it: the `GPU0` row starts the same way but has its diagonal `X` there)."""
    if text.lstrip().startswith("#"):
        return None
    names = [name for name in _Line(text).fields if name]
    if not names or names[0] != "GPU0" or names[1:2] == ["X"]:
        return None
    return names


class _Matrices:
    """The GPU matrices of a text: distinct `topo -m` link matrices, distinct `topo -p2p` grids,
    single-GPU ones that could be either (their only cell is X), and a count of unknown ones."""

    def __init__(self, text: str) -> None:
        self.links: list[dict[str, t.Any]] = []
        self.grids: list[list[list[str]]] = []
        self.single_gpu: list[dict[str, t.Any]] = []
        self.unknown = 0
        lines = [strip_ansi(line) for line in text.splitlines()]
        position = 0
        while position < len(lines):
            header = _header_of(lines[position])
            if header is None:
                position += 1
                continue
            end = position + 1
            while end < len(lines) and lines[end].strip() and not lines[end].strip().startswith("Legend"):
                end += 1
            following = end
            while following < len(lines) and _header_of(lines[following]) is None:
                following += 1
            self._add(header, lines[position + 1 : end], lines[end:following])
            position = end

    def _add(self, header: list[str], rows: list[str], after: list[str]) -> None:
        link = grid = None
        with contextlib.suppress(_OtherMatrix):
            link = _parse_matrix(header, rows, _link_cell)
            _name_nics(link, after)
        with contextlib.suppress(_OtherMatrix):
            grid = _parse_matrix(header, rows, _p2p_cell)["matrix"]
        if link is not None and grid is not None:
            self.single_gpu.append(link)
        elif link is not None and link not in self.links:
            self.links.append(link)
        elif grid is not None and grid not in self.grids:
            self.grids.append(grid)
        elif link is None and grid is None:
            self.unknown += 1


def parse_topology(text: str) -> dict[str, t.Any]:
    """Parse the output of `nvidia-smi topo -m` (also `--matrix`).

    Accepts TAB-separated output or pastes with the TABs turned into spaces, ANSI codes around the
    header, comment lines starting with '#', NIC rows, legends and other command output around the
    matrix. A `nvidia-smi topo -p2p` grid in the same text becomes `p2p`. Empty text gives the
    empty topology. Raises ValueError when no matrix (or more than one different matrix) is found,
    or when a matrix is inconsistent.
    """
    if not text.strip():
        return empty_topology()
    matrices = _Matrices(text)
    links = matrices.links or matrices.single_gpu[:1]
    if not links:
        found = ""
        if matrices.grids:
            found = " (only `nvidia-smi topo -p2p` grids)"
        elif matrices.unknown:
            found = " (only unknown GPU matrices)"
        raise ValueError(f"no `nvidia-smi topo -m` matrix found in the text{found}")
    if len(links) > 1:
        raise ValueError(
            f"the text holds {len(links)} different `nvidia-smi topo -m` matrices; give the output of one run"
        )
    topology = links[0]
    topology["p2p"] = _one_p2p_grid(matrices.grids, len(topology["gpus"]))
    return topology


def parse_p2p(text: str) -> list[list[str]]:
    """Parse the output of `nvidia-smi topo -p2p r` (or w, n, a, p) into the grid of cells."""
    matrices = _Matrices(text)
    grids = matrices.grids or [single["matrix"] for single in matrices.single_gpu[:1]]
    if not grids:
        raise ValueError("no `nvidia-smi topo -p2p` grid found in the text")
    return _one_p2p_grid(grids, len(grids[0]))


def _one_p2p_grid(grids: list[list[list[str]]], gpu_count: int) -> list[list[str]]:
    if not grids:
        return []
    if len(grids) > 1:
        raise ValueError(f"the text holds {len(grids)} different `nvidia-smi topo -p2p` grids; give one")
    if len(grids[0]) != gpu_count:
        raise ValueError(f"the `topo -p2p` grid has {len(grids[0])} GPUs, the `topo -m` matrix {gpu_count}")
    return grids[0]


def _parse_matrix(names: list[str], rows: list[str], cell_of: t.Callable[[str], str]) -> dict[str, t.Any]:
    gpu_count = 0
    while gpu_count < len(names) and _GPU_LABEL_RE.fullmatch(names[gpu_count]):
        if names[gpu_count] != f"GPU{gpu_count}":
            raise ValueError(f"matrix header names {names[gpu_count]} where GPU{gpu_count} belongs")
        gpu_count += 1
    # Link columns after the GPUs are NICs (NIC<n>, or mlx5_0 style names on old drivers); the
    # affinity columns follow. Their names have spaces, NIC names do not.
    nic_count = 0
    while gpu_count + nic_count < len(names) and " " not in names[gpu_count + nic_count]:
        nic_count += 1
    info_columns = names[gpu_count + nic_count :]
    link_count = gpu_count + nic_count

    gpu_rows: dict[str, _Line] = {}
    for row_text in rows:
        row = _Line(row_text)
        if row.fields and _GPU_LABEL_RE.fullmatch(row.fields[0]):
            gpu_rows[row.fields[0]] = row

    result = empty_topology()
    result["gpus"] = [f"GPU{index}" for index in range(gpu_count)]
    result["nics"] = [{"label": name, "name": name} for name in names[gpu_count:link_count]]
    for index, label in enumerate(result["gpus"]):
        row = gpu_rows.get(label)
        if row is None:
            raise ValueError(f"the matrix has a {label} column but no {label} row")
        fields = row.fields[1:]
        if len(fields) < link_count:
            raise ValueError(f"row {label} has {len(fields)} cells where {link_count} link columns are named")
        cells = [cell_of(cell) for cell in fields[:link_count]]
        for column, cell in enumerate(cells[:gpu_count]):
            if (cell == "X") != (column == index):
                raise ValueError(f"row {label}, column GPU{column}: '{cell}' breaks the X diagonal")
        result["matrix"].append(cells[:gpu_count])
        result["nic_matrix"].append(cells[gpu_count:])
        info = _info_values(row, link_count, info_columns)
        result["cpu_affinity"].append(info.get("CPU Affinity"))
        result["numa_affinity"].append(info.get("NUMA Affinity"))
        result["gpu_numa_id"].append(info.get("GPU NUMA ID"))
    for first in range(gpu_count):
        for second in range(first + 1, gpu_count):
            match = _NVLINK_RE.fullmatch(result["matrix"][first][second])
            if match:
                result["nvlink"].append({"gpus": [first, second], "links": int(match.group(1))})
    return result


def _link_cell(cell: str) -> str:
    cell = LEGACY_CELLS.get(cell, cell)
    if cell in LINK_CELLS or _NVLINK_RE.fullmatch(cell):
        return cell
    raise _OtherMatrix(cell)


def _p2p_cell(cell: str) -> str:
    if cell in P2P_CELLS:
        return cell
    raise _OtherMatrix(cell)


def _info_values(row: _Line, link_count: int, info_columns: list[str]) -> dict[str, str | None]:
    """Map the fields after the link cells to the affinity columns of the header."""
    values = row.fields[1 + link_count :]
    if row.tabbed:
        # nvidia-smi puts an extra empty field before some columns ("\t\t" before GPU NUMA ID).
        # The first value keeps its place (CPU Affinity may be empty); surplus empty fields
        # after it are dropped, leftmost first.
        position = 1
        while len(values) > len(info_columns) and position < len(values):
            if values[position]:
                position += 1
            else:
                del values[position]
        mapped = dict(zip(info_columns, values))
    else:
        # A paste lost the empty fields. Only the leading ones are ever empty (CPU Affinity in
        # VMs), and GPU NUMA ID always prints (N/A at least): align the values to the right.
        mapped = dict(zip(info_columns[max(0, len(info_columns) - len(values)) :], values))
    return {name: (value if value and value != "N/A" else None) for name, value in mapped.items()}


def _name_nics(result: dict[str, t.Any], lines: list[str]) -> None:
    """Fill NIC names from the "NIC Legend" that follows the matrix."""
    legend = {}
    for line in lines:
        match = _NIC_LEGEND_RE.match(line)
        if match:
            legend[match.group(1)] = match.group(2)
    for nic in result["nics"]:
        nic["name"] = legend.get(nic["label"], nic["label"])


def _none_if_unavailable(value: str) -> str | None:
    value = value.strip()
    # nvidia-smi prints [N/A], [Not Supported], [Unknown Error], [Insufficient Permissions] ...
    if not value or value == "N/A" or (value.startswith("[") and value.endswith("]")):
        return None
    return value


def parse_query_gpu(text: str, fields: t.Sequence[str] = QUERY_FIELDS) -> list[dict[str, str | None]]:
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader[,nounits]` into one mapping per GPU.

    Values are strings with unavailable ones as None. Raises ValueError on a line whose field
    count does not match (a comma inside a GPU name is joined back into `name`).
    """
    fields = list(fields)
    gpus = []
    for number, row in enumerate(csv.reader(text.splitlines(), skipinitialspace=True), start=1):
        if not row or not "".join(row).strip():
            continue
        surplus = len(row) - len(fields)
        if surplus > 0 and "name" in fields:
            at = fields.index("name")
            row = [*row[:at], ", ".join(row[at : at + surplus + 1]), *row[at + surplus + 1 :]]
        if len(row) != len(fields):
            raise ValueError(f"nvidia-smi --query-gpu line {number} has {len(row)} values for {len(fields)} fields")
        gpus.append({field: _none_if_unavailable(value) for field, value in zip(fields, row)})
    return gpus


def _leading_int(value: str | None) -> int | None:
    """`"16303 MiB"` -> 16303, `"16x"` -> 16; None stays None."""
    if value is None:
        return None
    match = _LEADING_NUMBER_RE.match(value)
    return int(match.group(1)) if match else None


def normalize_pci_bus_id(bus_id: str) -> str:
    """`00000000:01:00.0` (nvidia-smi) -> `0000:01:00.0` (sysfs, lspci); lower case."""
    match = _BUS_ID_RE.fullmatch(bus_id.strip())
    if not match:
        raise ValueError(f"'{bus_id}' is not a PCI bus id (domain:bus:device.function)")
    domain = int(match.group("domain") or "0", 16)
    return "{:04x}:{:02x}:{:02x}.{}".format(
        domain, int(match.group("bus"), 16), int(match.group("device"), 16), match.group("function")
    )


def _pci_sort_key(bus_id: str) -> tuple[int, ...]:
    domain, bus, rest = bus_id.split(":")
    device, function = rest.split(".")
    return (int(domain, 16), int(bus, 16), int(device, 16), int(function, 16))


def pci_device_id(nvml_device_id: str | None) -> str | None:
    """nvidia-smi's `pci.device_id` (`0x2B8510DE`: device id above the vendor id) -> `0x2b85`."""
    if nvml_device_id is None:
        return None
    combined = int(nvml_device_id, 16)
    return f"0x{combined >> 16:04x}" if combined > 0xFFFF else f"0x{combined:04x}"


def gpu_from_query(row: t.Mapping[str, str | None]) -> dict[str, t.Any]:
    """A gpu_facts entry from one parsed `--query-gpu` row (sysfs fields left None)."""
    bus_id = row.get("pci.bus_id")
    return {
        "index": _leading_int(row.get("index")),
        "name": row.get("name"),
        "uuid": row.get("uuid"),
        "pci_bus_id": normalize_pci_bus_id(bus_id) if bus_id else None,
        "pci_device_id": pci_device_id(row.get("pci.device_id")),
        "memory_mib": _leading_int(row.get("memory.total")),
        "compute_capability": row.get("compute_cap"),
        "pcie_gen_current": _leading_int(row.get("pcie.link.gen.current")),
        "pcie_gen_max": _leading_int(row.get("pcie.link.gen.max")),
        "pcie_width_current": _leading_int(row.get("pcie.link.width.current")),
        "pcie_width_max": _leading_int(row.get("pcie.link.width.max")),
        "numa_node": None,
    }


def parse_cuda_version(text: str) -> str | None:
    """The CUDA version from `nvidia-smi --version` (`CUDA Version : 13.0`, R610+ `CUDA UMD version`)
    or from `nvidia-smi -q -x` (`<cuda_version>`); None when absent."""
    match = _CUDA_VERSION_RE.search(text) or _XML_CUDA_VERSION_RE.search(text)
    return match.group(1) if match else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _hex(path: str) -> int | None:
    value = _read(path)
    try:
        return int(value, 16) if value else None
    except ValueError:
        return None


def pcie_gen(speed: str | None) -> int | None:
    """sysfs link speed (`16.0 GT/s PCIe`, `8 GT/s`, `Unknown`) -> PCIe generation."""
    if not speed:
        return None
    match = re.match(r"^\s*([\d.]+)\s*GT/s", speed)
    return _GEN_BY_GTS.get(float(match.group(1))) if match else None


def _link_width(path: str) -> int | None:
    width = _leading_int(_read(path))
    return width or None  # 0 on devices without a PCIe link


def _smallest(*values: int | None) -> int | None:
    known = [value for value in values if value is not None]
    return min(known) if known else None


def read_pci_gpus(sysfs_root: str = "/sys") -> list[dict[str, t.Any]]:
    """NVIDIA display-class PCI functions found in sysfs, in PCI bus order.

    The maximum link gen/width is the smaller of the GPU's and its parent port's: a x16 card in
    a x4 slot has a x4 link (this is what NCCL does; nvidia-smi's `width.max` misreports it).
    """
    devices_dir = os.path.join(sysfs_root, "bus", "pci", "devices")
    try:
        names = os.listdir(devices_dir)
    except OSError:
        return []
    gpus = []
    for name in names:
        path = os.path.join(devices_dir, name)
        pci_class = _hex(os.path.join(path, "class"))
        if _hex(os.path.join(path, "vendor")) != NVIDIA_VENDOR_ID or pci_class is None:
            continue
        if pci_class >> 16 != DISPLAY_CLASS:
            continue
        device_id = _hex(os.path.join(path, "device"))
        numa_node = _leading_int(_read(os.path.join(path, "numa_node")))  # "-1" (no NUMA) -> None
        gen_max = pcie_gen(_read(os.path.join(path, "max_link_speed")))
        width_max = _link_width(os.path.join(path, "max_link_width"))
        parent = os.path.dirname(os.path.realpath(path))
        if _BUS_ID_RE.fullmatch(os.path.basename(parent)):
            gen_max = _smallest(gen_max, pcie_gen(_read(os.path.join(parent, "max_link_speed"))))
            width_max = _smallest(width_max, _link_width(os.path.join(parent, "max_link_width")))
        gpus.append(
            {
                "pci_bus_id": normalize_pci_bus_id(name),
                "pci_device_id": None if device_id is None else f"0x{device_id:04x}",
                "numa_node": numa_node,
                "pcie_gen_current": pcie_gen(_read(os.path.join(path, "current_link_speed"))),
                "pcie_gen_max": gen_max,
                "pcie_width_current": _link_width(os.path.join(path, "current_link_width")),
                "pcie_width_max": width_max,
            }
        )
    return sorted(gpus, key=lambda gpu: _pci_sort_key(gpu["pci_bus_id"]))


def gpu_from_sysfs(index: int, device: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """A gpu_facts entry for a GPU seen only in sysfs (no driver): identity fields are None."""
    return {
        "index": index,
        "name": None,
        "uuid": None,
        "pci_bus_id": device["pci_bus_id"],
        "pci_device_id": device["pci_device_id"],
        "memory_mib": None,
        "compute_capability": None,
        "pcie_gen_current": device["pcie_gen_current"],
        "pcie_gen_max": device["pcie_gen_max"],
        "pcie_width_current": device["pcie_width_current"],
        "pcie_width_max": device["pcie_width_max"],
        "numa_node": device["numa_node"],
    }


def merge_sysfs(gpu: t.Mapping[str, t.Any], device: t.Mapping[str, t.Any] | None) -> dict[str, t.Any]:
    """Complete an nvidia-smi entry with sysfs: NUMA node, device id, and the maximum link
    narrowed to what the GPU and its parent port both support."""
    merged = dict(gpu)
    if device is None:
        return merged
    merged["numa_node"] = device["numa_node"]
    merged["pci_device_id"] = merged["pci_device_id"] or device["pci_device_id"]
    merged["pcie_gen_max"] = _smallest(gpu["pcie_gen_max"], device["pcie_gen_max"])
    merged["pcie_width_max"] = _smallest(gpu["pcie_width_max"], device["pcie_width_max"])
    for key in ("pcie_gen_current", "pcie_width_current"):
        if merged[key] is None:
            merged[key] = device[key]
    return merged


def read_nvidia_module(sysfs_root: str = "/sys") -> dict[str, t.Any]:
    """Whether the nvidia kernel module is loaded, and its version."""
    module_dir = os.path.join(sysfs_root, "module", "nvidia")
    loaded = os.path.isdir(module_dir)
    return {"loaded": loaded, "version": _read(os.path.join(module_dir, "version")) if loaded else None}
