"""Parsers of nvidia-smi output and sysfs, against the captured samples in tests/unit/fixtures/topology."""

from __future__ import annotations

import re

import pytest

from ansible_collections.inferops.llm.plugins.module_utils._hardware.topology import (
    QUERY_FIELDS,
    empty_topology,
    gpu_from_query,
    merge_sysfs,
    normalize_pci_bus_id,
    parse_cuda_version,
    parse_p2p,
    parse_query_gpu,
    parse_topology,
    pci_device_id,
    pcie_gen,
    read_nvidia_module,
    read_pci_gpus,
)

TAB_EXACT = [
    "01_2x_rtx5090_pcie_phb.txt",
    "07_8x_b300_nv18_ansi_header.txt",
    "08_3x_a6000_nv4_pair_plus_node_nvlink_status.txt",
    "09_4x_h100_vm_empty_cpu_affinity.txt",
    "14_8x_p40_pcie_switch_pix_pxb_soc.txt",
]


def symmetric(matrix):
    return all(matrix[i][j] == matrix[j][i] for i in range(len(matrix)) for j in range(len(matrix)))


# ------------------------------------------------------------------------------------ topo -m samples


def test_01_two_5090_phb_tab_exact(topology_sample):
    topology = parse_topology(topology_sample("01_2x_rtx5090_pcie_phb.txt"))
    assert topology["gpus"] == ["GPU0", "GPU1"]
    assert topology["matrix"] == [["X", "PHB"], ["PHB", "X"]]
    assert topology["cpu_affinity"] == ["0-63", "0-63"]
    assert topology["numa_affinity"] == ["0", "0"]
    assert topology["gpu_numa_id"] == [None, None]  # "N/A" after the "\t\t"
    assert topology["nvlink"] == []
    assert topology["nics"] == []
    assert topology["p2p"] == []


def test_01b_p2p_grid_is_not_a_topology_but_parses_as_p2p(topology_sample):
    text = topology_sample("01b_2x_rtx5090_topo_p2p_rw.txt")
    with pytest.raises(ValueError, match=r"only `nvidia-smi topo -p2p` grids"):
        parse_topology(text)
    assert parse_p2p(text) == [["X", "GNS"], ["GNS", "X"]]


def test_02_space_padded_dual_numa(topology_sample):
    topology = parse_topology(topology_sample("02_5gpu_dual_numa_sys_phb_node.txt"))
    matrix = topology["matrix"]
    assert len(matrix) == 5
    assert matrix[0] == ["X", "SYS", "SYS", "SYS", "SYS"]
    assert matrix[1][2] == "PHB"
    assert matrix[1][3] == "NODE"
    assert matrix[3][4] == "PHB"
    assert symmetric(matrix)
    assert topology["cpu_affinity"] == ["8-15,24-31"] + ["0-7,16-23"] * 4
    assert topology["numa_affinity"] == ["1", "0", "0", "0", "0"]
    assert topology["gpu_numa_id"] == [None] * 5
    assert topology["nvlink"] == []


def test_04_nvlink_pairs_nic_row_and_legend(topology_sample):
    topology = parse_topology(topology_sample("04_4x_a30_nv4_pairs_dual_numa_nic.txt"))
    assert topology["matrix"][0] == ["X", "NV4", "SYS", "SYS"]
    assert topology["matrix"][2][3] == "NV4"
    assert topology["nvlink"] == [{"gpus": [0, 1], "links": 4}, {"gpus": [2, 3], "links": 4}]
    assert topology["nics"] == [{"label": "NIC0", "name": "mlx5_0"}]
    assert topology["nic_matrix"] == [["SYS"], ["SYS"], ["PXB"], ["PIX"]]
    assert topology["cpu_affinity"] == ["0-23,48-71", "0-23,48-71", "24-47,72-95", "24-47,72-95"]
    assert topology["numa_affinity"] == ["0", "0", "1", "1"]


def test_05_bridged_non_adjacent_pairs_without_affinity_columns_and_p2p_grid(topology_sample):
    topology = parse_topology(topology_sample("05_4gpu_nv4_bridge_pairs_phb_p2p_cns.txt"))
    assert topology["nvlink"] == [{"gpus": [0, 3], "links": 4}, {"gpus": [1, 2], "links": 4}]
    assert topology["matrix"][0] == ["X", "PHB", "PHB", "NV4"]
    assert topology["matrix"][1][2] == "NV4"
    assert topology["cpu_affinity"] == [None] * 4
    assert topology["numa_affinity"] == [None] * 4
    # The `topo -p2p rw` grid printed before the matrix is kept as p2p.
    assert topology["p2p"][0] == ["X", "CNS", "CNS", "OK"]
    assert topology["p2p"][2][1] == "OK"


def test_07_ansi_header_eight_b300_nine_nics(topology_sample):
    text = topology_sample("07_8x_b300_nv18_ansi_header.txt")
    topology = parse_topology(text)
    assert topology["gpus"] == [f"GPU{index}" for index in range(8)]
    assert all(cell == "NV18" for i, row in enumerate(topology["matrix"]) for j, cell in enumerate(row) if i != j)
    assert len(topology["nvlink"]) == 28
    assert {pair["links"] for pair in topology["nvlink"]} == {18}
    assert [nic["name"] for nic in topology["nics"]][-1] == "mlx5_bond_0"
    assert topology["nics"][0] == {"label": "NIC0", "name": "mlx5_10"}
    assert topology["nic_matrix"][0][:5] == ["PXB", "NODE", "NODE", "NODE", "SYS"]
    assert topology["nic_matrix"][4][4] == "PXB"
    assert topology["cpu_affinity"] == ["0-63,128-191"] * 4 + ["64-127,192-255"] * 4
    assert topology["numa_affinity"] == ["0"] * 4 + ["1"] * 4
    assert topology["gpu_numa_id"] == [None] * 8
    # The same header with the ESC bytes a terminal really prints.
    escaped = text.replace("[4m", "\x1b[4m").replace("[0m", "\x1b[0m")
    assert "\x1b" in escaped
    assert parse_topology(escaped) == topology


def test_08_older_columns_and_nvlink_status_around_the_matrix(topology_sample):
    topology = parse_topology(topology_sample("08_3x_a6000_nv4_pair_plus_node_nvlink_status.txt"))
    assert topology["matrix"] == [["X", "NV4", "NODE"], ["NV4", "X", "NODE"], ["NODE", "NODE", "X"]]
    assert topology["nvlink"] == [{"gpus": [0, 1], "links": 4}]
    assert topology["numa_affinity"] == ["0", "0", "0"]
    assert topology["gpu_numa_id"] == [None, None, None]  # column not printed by this driver


def test_09_vm_empty_cpu_affinity(topology_sample):
    topology = parse_topology(topology_sample("09_4x_h100_vm_empty_cpu_affinity.txt"))
    assert topology["cpu_affinity"] == ["44-51,148-155", None, None, None]
    assert topology["numa_affinity"] == ["0", "1", "1", "1"]
    assert topology["gpu_numa_id"] == [None] * 4
    assert len(topology["nvlink"]) == 6


def test_10_legacy_k80_two_variants(topology_sample):
    text = topology_sample("10_legacy_k80_soc_mlx4_no_numa.txt")
    with pytest.raises(ValueError, match="2 different"):
        parse_topology(text)
    first, second = text.split("# Second legacy variant")
    single = parse_topology(first)
    assert single["matrix"][0] == ["X", "PIX", "PHB", "PHB"]
    assert single["matrix"][2][3] == "PIX"
    assert single["nics"] == [{"label": "mlx4_0", "name": "mlx4_0"}]
    assert single["nic_matrix"] == [["PHB"]] * 4
    assert single["cpu_affinity"] == ["0-11"] * 4
    assert single["numa_affinity"] == [None] * 4
    dual = parse_topology(second)
    assert dual["matrix"][0] == ["X", "PIX", "SYS", "SYS"]  # SOC reported as SYS
    assert dual["nic_matrix"] == [["SYS"], ["SYS"], ["PHB"], ["PHB"]]
    assert dual["cpu_affinity"] == ["0-3"] * 4


def test_14_pcie_switch_trees_with_soc_nic(topology_sample):
    topology = parse_topology(topology_sample("14_8x_p40_pcie_switch_pix_pxb_soc.txt"))
    matrix = topology["matrix"]
    assert matrix[0] == ["X", "PIX", "PIX", "PIX", "PXB", "PXB", "PXB", "PXB"]
    assert matrix[5][4] == "PIX"
    assert matrix[7][3] == "PXB"
    assert symmetric(matrix)
    assert topology["nics"] == [{"label": "mlx5_0", "name": "mlx5_0"}]
    assert topology["nic_matrix"] == [["SYS"]] * 8
    assert topology["cpu_affinity"] == ["0-13"] * 8
    assert topology["numa_affinity"] == [None] * 8


@pytest.mark.parametrize(
    "name",
    ["11_query_gpu_csv_samples.txt", "15_nvidia_smi_nvlink_status_samples.txt", "12_nvidia_smi_q_x_xml_excerpt.xml"],
)
def test_other_outputs_are_not_a_topology(topology_sample, name):
    with pytest.raises(ValueError, match=r"no `nvidia-smi topo -m` matrix"):
        parse_topology(topology_sample(name))


@pytest.mark.parametrize("name", TAB_EXACT)
def test_pasted_with_tabs_turned_into_spaces_parses_the_same(topology_sample, name):
    text = topology_sample(name)
    assert "\t" in text
    # A terminal expands TABs by visible column: the ANSI codes take no room.
    pasted = re.sub(r"\[[0-9;]*m", "", text).expandtabs(8)
    assert parse_topology(pasted) == parse_topology(text)


def test_single_gpu_header_is_told_from_its_row():
    topology = parse_topology("GPU0  CPU Affinity  NUMA Affinity\nGPU0   X    0-15    0\n")
    assert topology["matrix"] == [["X"]]
    assert topology["cpu_affinity"] == ["0-15"]


def test_single_gpu_p2p_grid():
    assert parse_p2p(" \tGPU0\t\n GPU0\tX\t\n") == [["X"]]


def test_empty_text_is_a_host_without_gpus():
    assert parse_topology(" \n\n") == empty_topology()


def test_broken_diagonal_is_rejected():
    with pytest.raises(ValueError, match="breaks the X diagonal"):
        parse_topology("\tGPU0\tGPU1\nGPU0\tPHB\t X \nGPU1\t X \tPHB\n")


def test_missing_gpu_row_is_rejected():
    with pytest.raises(ValueError, match="no GPU1 row"):
        parse_topology("\tGPU0\tGPU1\nGPU0\t X \tPHB\n")


def test_truncated_row_is_rejected():
    with pytest.raises(ValueError, match="row GPU1 has 1 cells"):
        parse_topology("\tGPU0\tGPU1\nGPU0\t X \tPHB\nGPU1\tPHB\n")


def test_header_out_of_order_is_rejected():
    with pytest.raises(ValueError, match="names GPU2 where GPU1 belongs"):
        parse_topology("\tGPU0\tGPU2\nGPU0\t X \tPHB\nGPU2\tPHB\t X \n")


def test_empty_numa_affinity_keeps_gpu_numa_id_in_its_column():
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tNV2\t0-7\t\t\t3\n"
        "GPU1\tNV2\t X \t0-7\t\t\t3\n"
    )
    topology = parse_topology(text)
    assert topology["numa_affinity"] == [None, None]
    assert topology["gpu_numa_id"] == ["3", "3"]
    assert topology["nvlink"] == [{"gpus": [0, 1], "links": 2}]


# ----------------------------------------------------------------------------------- query-gpu CSV


def query_tables(text):
    """(fields, value lines) per header line of sample 11; field names lose their " [unit]"."""
    tables = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("#", "$")):
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if all(re.fullmatch(r"[a-z_][a-z0-9_.]*( \[[^\]]+\])?", cell) for cell in cells):
            tables.append(([cell.split(" [")[0] for cell in cells], []))
        else:
            tables[-1][1].append(line)
    return tables


def test_11_query_captures(topology_sample):
    tables = query_tables(topology_sample("11_query_gpu_csv_samples.txt"))
    rows = [parse_query_gpu("\n".join(lines), fields) for fields, lines in tables]
    gpus = [[gpu_from_query(row) for row in table] for table in rows]
    # A) mixed x4/x8 links
    assert [gpu["pcie_width_current"] for gpu in gpus[0]] == [4, 4, 8, 8]
    assert [gpu["pcie_width_max"] for gpu in gpus[0]] == [8, 8, 8, 8]
    assert [gpu["index"] for gpu in gpus[0]] == [0, 1, 2, 3]
    # B) idle Gen1, then Gen4 under load; width.max 16 on an x8 card
    assert (gpus[1][0]["pcie_gen_current"], gpus[2][0]["pcie_gen_current"]) == (1, 4)
    assert gpus[1][0]["pcie_width_max"] == 16
    # C) Gen3 x4 slot
    assert rows[3][0]["driver_version"] == "595.71.05"
    assert (gpus[3][1]["pcie_gen_max"], gpus[3][1]["pcie_width_current"]) == (3, 4)
    # D) eight idle L40S
    assert [gpu["index"] for gpu in gpus[4]] == [0, 1]
    # E) VM bus id, memory with its unit, compute capability
    assert gpus[5][0]["pci_bus_id"] == "0000:06:10.0"
    assert gpus[5][0]["memory_mib"] == 16303
    assert gpus[5][0]["compute_capability"] == "12.0"
    assert gpus[5][0]["uuid"] == "GPU-49dacec4-c9d8-7109-cffc-9ff262186fe6"
    # F) an extra field does not disturb the others
    assert gpus[6][0]["name"] == "NVIDIA RTX PRO 5000 Blackwell"
    assert rows[6][0]["ecc.mode.current"] == "Disabled"
    # G) A100 and L4; [N/A] becomes None
    assert (gpus[7][0]["memory_mib"], gpus[7][0]["compute_capability"]) == (81920, "8.0")
    assert rows[8][0]["mig.mode.current"] is None
    assert gpus[8][0]["memory_mib"] == 23034
    # I) H200 and RTX 4090
    assert [(gpu["memory_mib"], gpu["pcie_gen_max"]) for gpu in gpus[9]] == [(143771, 5), (24564, 4)]


def test_11_brief_query_shape(topology_sample):
    text = topology_sample("11_query_gpu_csv_samples.txt")
    fields = re.search(r"--query-gpu=(\S+) --format=csv,noheader,nounits", text).group(1).split(",")
    line = re.search(r"^# (0, NVIDIA GeForce RTX 3090, .*)$", text, re.MULTILINE).group(1)
    (row,) = parse_query_gpu(line, fields)
    gpu = gpu_from_query(row)
    assert gpu["pci_bus_id"] == "0000:01:00.0"
    assert gpu["memory_mib"] == 24576
    assert gpu["compute_capability"] == "8.6"
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"], gpu["pcie_width_current"], gpu["pcie_width_max"]) == (
        4,
        4,
        16,
        16,
    )
    assert gpu["pci_device_id"] is None  # not queried here
    assert row["driver_version"] == "595.71.05"


def test_query_unavailable_values_and_comma_in_name():
    line = "0, NVIDIA GB10, GPU-1, 0000000F:01:00.0, 0x2E1210DE, [N/A], 12.1, [Not Supported], 5, 1, 16, 580.142"
    (row,) = parse_query_gpu(line.replace("NVIDIA GB10", "NVIDIA GB10, rev 2"))
    gpu = gpu_from_query(row)
    assert gpu["name"] == "NVIDIA GB10, rev 2"
    assert gpu["memory_mib"] is None
    assert gpu["pcie_gen_current"] is None
    assert gpu["pci_bus_id"] == "000f:01:00.0"
    assert gpu["pci_device_id"] == "0x2e12"
    assert row["driver_version"] == "580.142"


def test_query_field_count_mismatch_is_rejected():
    with pytest.raises(ValueError, match="line 1 has 3 values for 12 fields"):
        parse_query_gpu("0, 1, 2", QUERY_FIELDS)


@pytest.mark.parametrize(
    ("bus_id", "normalized"),
    [("00000000:01:00.0", "0000:01:00.0"), ("00000000:1A:00.0", "0000:1a:00.0"), ("01:00.0", "0000:01:00.0")],
)
def test_normalize_pci_bus_id(bus_id, normalized):
    assert normalize_pci_bus_id(bus_id) == normalized


def test_normalize_pci_bus_id_rejects_garbage():
    with pytest.raises(ValueError, match="not a PCI bus id"):
        normalize_pci_bus_id("GPU-0")


def test_12_xml_device_id_and_cuda_version(topology_sample):
    xml = topology_sample("12_nvidia_smi_q_x_xml_excerpt.xml")
    assert pci_device_id(re.search(r"<pci_device_id>(\w+)</", xml).group(1)) == "0x13bd"
    assert normalize_pci_bus_id(re.search(r"<pci_bus_id>([^<]+)</", xml).group(1)) == "0000:1a:00.0"
    assert parse_cuda_version(xml) is None  # driver 390 predates <cuda_version>
    newer = xml.replace("<attached_gpus>", "<cuda_version>12.2</cuda_version>\n\t<attached_gpus>")
    assert parse_cuda_version(newer) == "12.2"


@pytest.mark.parametrize(
    ("output", "version"),
    [
        # `nvidia-smi --version` as R5xx drivers print it
        ("NVIDIA-SMI version  : 590.48.01\nNVML version        : 590.48\nDRIVER version      : 590.48.01\n"
         "CUDA Version        : 13.1\n", "13.1"),
        # R610+ renamed the line
        ('NVIDIA-SMI version  : 610.88\nDRIVER version      : Deprecated, see "KMD version" instead\n'
         "CUDA UMD version    : 13.3\n", "13.3"),
        ("Invalid combination of input arguments.\n", None),
    ],
)  # fmt: skip
def test_cuda_version_from_version_output(output, version):
    assert parse_cuda_version(output) == version


# ----------------------------------------------------------------------------------------- sysfs


def test_sysfs_root_port_and_switch(sysfs_tree):
    root = sysfs_tree("two_gpus_root_port_and_switch")
    gpus = read_pci_gpus(root)
    assert [gpu["pci_bus_id"] for gpu in gpus] == ["0000:01:00.0", "0000:83:00.0"]  # audio functions left out
    assert [gpu["pci_device_id"] for gpu in gpus] == ["0x2b85", "0x2b85"]
    assert [gpu["numa_node"] for gpu in gpus] == [0, 1]
    assert [gpu["pcie_gen_current"] for gpu in gpus] == [1, 5]
    assert [(gpu["pcie_gen_max"], gpu["pcie_width_max"]) for gpu in gpus] == [(5, 16), (5, 16)]
    assert read_nvidia_module(root) == {"loaded": True, "version": "580.95.05"}


def test_sysfs_narrow_slot_caps_the_maximum_link(sysfs_tree):
    root = sysfs_tree("narrow_x4_chipset_slot")
    (gpu,) = read_pci_gpus(root)
    assert gpu == {
        "pci_bus_id": "0000:07:00.0",
        "pci_device_id": "0x2d04",
        "numa_node": None,
        "pcie_gen_current": 1,
        "pcie_gen_max": 3,  # Gen5 card, Gen3 port
        "pcie_width_current": 4,
        "pcie_width_max": 4,  # x8 card, x4 port
    }
    assert read_nvidia_module(root) == {"loaded": False, "version": None}


def test_nvidia_smi_width_max_is_narrowed_by_sysfs(sysfs_tree):
    (device,) = read_pci_gpus(sysfs_tree("narrow_x4_chipset_slot"))
    # nvidia-smi on such a slot: gen.current 1, gen.max 3, width.current 4, width.max 16 (sample 11C)
    row = dict.fromkeys(QUERY_FIELDS)
    row.update({"index": "0", "pci.bus_id": "00000000:07:00.0", "pcie.link.gen.current": "1"})
    row.update({"pcie.link.gen.max": "3", "pcie.link.width.current": "4", "pcie.link.width.max": "16"})
    merged = merge_sysfs(gpu_from_query(row), device)
    assert (merged["pcie_gen_max"], merged["pcie_width_max"]) == (3, 4)
    assert merged["pci_device_id"] == "0x2d04"


def test_sysfs_vm_bridge_without_link_attributes(sysfs_tree):
    (gpu,) = read_pci_gpus(sysfs_tree("vm_conventional_bridge"))
    assert gpu["pci_bus_id"] == "0000:06:10.0"
    assert (gpu["pcie_gen_max"], gpu["pcie_width_max"]) == (4, 16)
    assert gpu["numa_node"] is None


def test_sysfs_without_nvidia_functions(sysfs_tree):
    assert read_pci_gpus(sysfs_tree("no_gpu_virtio")) == []


def test_sysfs_missing(tmp_path):
    assert read_pci_gpus(str(tmp_path / "absent")) == []
    assert read_nvidia_module(str(tmp_path / "absent")) == {"loaded": False, "version": None}


@pytest.mark.parametrize(
    ("speed", "gen"),
    [
        ("2.5 GT/s PCIe", 1),
        ("8 GT/s", 3),
        ("16.0 GT/s PCIe", 4),
        ("64.0 GT/s PCIe", 6),
        ("Unknown", None),
        (None, None),
    ],
)
def test_pcie_gen(speed, gen):
    assert pcie_gen(speed) == gen
