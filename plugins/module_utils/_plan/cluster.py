# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""One vLLM deployment across several hosts: the hosts that share ``inferops_cluster`` are planned together.

The head host runs the vLLM server; every node (the head too) runs a Ray node (backend ``ray``, the default)
or vLLM's own multi-node launcher (backend ``mp``: ``--nnodes``, ``--node-rank``, ``--master-addr``,
``--headless`` on the other nodes). Tensor parallelism stays inside a node and pipeline stages span the
nodes (the layout search's ``multi_node``), so that only one activation per stage crosses the network.

``plan_cluster(name, members)`` checks the cluster as a whole (ids ``cluster-head``, ``cluster-version``,
``cluster-python``, ``cluster-gpus``, ``cluster-network``) and gives each member its ``ClusterContext``;
``build_plan(..., cluster=context)`` then plans the node and adds the ``cluster`` section: role, rank, node
address and interface (which set Ray's ``--node-ip-address``, ``VLLM_HOST_IP``, ``NCCL_SOCKET_IFNAME`` and
``GLOO_SOCKET_IFNAME``), ports and the node's ``ray start`` argv.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

CLUSTER_VARS = (
    "inferops_cluster",
    "inferops_cluster_head",
    "inferops_cluster_address",
    "inferops_cluster_interface",
    "inferops_cluster_backend",
    "inferops_cluster_ray_port",
    "inferops_cluster_master_port",
)
BACKENDS = ("ray", "mp")
DEFAULT_RAY_PORT = 6379  # `ray start --head` default (GCS)
DEFAULT_MASTER_PORT = 29501  # vLLM's --master-port default for the mp multi-node launcher
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_INTERFACE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}")


@dataclass(frozen=True)
class Member:
    """One host of a cluster: its (whitelisted) variables, hardware and gathered facts.

    facts: ``address`` / ``interface`` of the cluster network when gathered (the declared
    ``inferops_cluster_address`` / ``inferops_cluster_interface`` win) and ``python`` (the version the
    engine's environment is built with), each optional.
    """

    host: str
    variables: Mapping[str, Any]
    hardware: Mapping[str, Any]
    facts: Mapping[str, Any] = field(default_factory=dict)
    # Every vllm_/ollama_/inferops_ name the host defines (names only), for the unknown-variable check;
    # None: the keys of ``variables``.
    defined: Optional[Sequence[str]] = None


@dataclass(frozen=True)
class ClusterContext:
    """What one node's plan needs to know of its cluster."""

    name: str
    backend: str
    nnodes: int
    node_rank: int
    head: str
    head_address: Optional[str]
    address: Optional[str]
    interface: Optional[str]
    ray_port: int
    master_port: int
    gpus_per_node: int

    @property
    def role(self) -> str:
        return "head" if self.node_rank == 0 else "worker"

    def multi_node(self) -> Dict[str, Any]:
        """The layout search's multi_node: TP inside a node, PP across the nodes."""
        result: Dict[str, Any] = {"nnodes": self.nnodes, "node_rank": self.node_rank, "launcher": self.backend}
        if self.backend == "mp" and self.head_address:
            result["master_addr"] = self.head_address
        if self.backend == "mp" and self.master_port != DEFAULT_MASTER_PORT:
            result["master_port"] = self.master_port
        return result

    def environment(self) -> Dict[str, str]:
        """The interface and address NCCL, Gloo and vLLM use for the cluster network."""
        env: Dict[str, str] = {}
        if self.interface:
            env["NCCL_SOCKET_IFNAME"] = self.interface
            env["GLOO_SOCKET_IFNAME"] = self.interface
        if self.address:
            env["VLLM_HOST_IP"] = self.address
        return env

    def section(self) -> Dict[str, Any]:
        """The plan's ``cluster`` section of this node."""
        ray_start: List[str] = []
        if self.backend == "ray":
            ray_start = ["ray", "start"]
            if self.role == "head":
                ray_start += ["--head", "--port", str(self.ray_port)]
            else:
                ray_start += ["--address", f"{self.head_address}:{self.ray_port}"]
            if self.address:
                ray_start += ["--node-ip-address", self.address]
            ray_start += ["--num-gpus", str(self.gpus_per_node), "--block"]
        return {
            "name": self.name,
            "backend": self.backend,
            "role": self.role,
            "node_rank": self.node_rank,
            "nnodes": self.nnodes,
            "head": self.head,
            "head_address": self.head_address,
            "address": self.address,
            "interface": self.interface,
            "ports": {"ray": self.ray_port} if self.backend == "ray" else {"master": self.master_port},
            "ray_start": ray_start,
        }


def _finding(check_id: str, message: str, severity: str = "error") -> Dict[str, str]:
    return {"id": check_id, "severity": severity, "message": message}


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "yes", "on", "1")


def _port(value: Any, default: int, var: str, findings: List[Dict[str, str]]) -> int:
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if not 1 <= number <= 65535 or isinstance(value, bool):
        findings.append(_finding("cluster-network", f"{var} must be a TCP port such as {default}, got {value!r}"))
        return default
    return number


def _gpu_kind(hardware: Mapping[str, Any]) -> List[str]:
    return [str(gpu.get("name") or "") for gpu in hardware.get("gpus") or [] if isinstance(gpu, Mapping)]


def _add_consistency_findings(name: str, ordered: Sequence[Member], findings: List[Dict[str, str]]) -> None:
    """What every node must share: engine, vLLM version, backend, model and the engine's Python."""
    for key, check_id, what in (
        ("inferops_engine", "cluster-version", "engine"),
        ("vllm_version", "cluster-version", "vLLM version"),
        ("inferops_cluster_backend", "cluster-head", "backend"),
    ):
        values = {m.host: m.variables.get(key) for m in ordered}
        if len({str(v) for v in values.values()}) > 1:
            listing = ", ".join(f"{host}: {value}" for host, value in values.items())
            findings.append(
                _finding(check_id, f"{key}: every node of cluster {name} needs the same {what} ({listing})")
            )
    if any(m.variables.get("inferops_engine") not in (None, "vllm") for m in ordered):
        findings.append(_finding("cluster-version", f"inferops_engine: cluster {name} runs vLLM on every node"))
    models = {m.host: dict(m.variables.get("inferops_model") or {}) for m in ordered}
    for key in ("repo", "revision"):
        values = {host: model.get(key) for host, model in models.items()}
        if len({str(v) for v in values.values()}) > 1:
            listing = ", ".join(f"{host}: {value}" for host, value in values.items())
            findings.append(
                _finding(
                    "cluster-version",
                    f"inferops_model.{key}: every node of cluster {name} loads the same model ({listing})",
                )
            )
    pythons = {m.host: m.facts.get("python") for m in ordered if m.facts.get("python")}
    if len(set(pythons.values())) > 1:
        listing = ", ".join(f"{host}: {value}" for host, value in pythons.items())
        findings.append(
            _finding(
                "cluster-python",
                f"the engine's Python differs between the nodes of cluster {name} ({listing}): Ray and vLLM "
                "need the same on every node; use one distribution release on all of them",
            )
        )


def _gpu_counts(name: str, ordered: Sequence[Member], findings: List[Dict[str, str]]) -> Dict[str, int]:
    """Each node's GPU count; findings for nodes without GPUs, different counts or different GPU models."""
    kinds = {m.host: _gpu_kind(m.hardware) for m in ordered}
    counts = {host: len(kind) for host, kind in kinds.items()}
    if 0 in counts.values():
        missing = ", ".join(host for host, count in counts.items() if not count)
        findings.append(_finding("cluster-gpus", f"inferops_gpus: no GPUs known on {missing} of cluster {name}"))
    elif len(set(counts.values())) > 1:
        listing = ", ".join(f"{host}: {count}" for host, count in counts.items())
        findings.append(
            _finding(
                "cluster-gpus",
                f"inferops_gpus: the nodes of cluster {name} have different GPU counts ({listing}); each pipeline "
                f"stage takes the same number of GPUs per node, so {min(counts.values())} per node are used "
                f"(a value that passes: vllm_gpus with {min(counts.values())} indices on every node)",
                "warning",
            )
        )
    if len({tuple(sorted(set(kind))) for kind in kinds.values() if kind}) > 1:
        findings.append(
            _finding(
                "cluster-gpus",
                f"inferops_gpus: the nodes of cluster {name} have different GPU models; the slowest sets the pace of "
                "every pipeline stage and the smallest the memory of every rank",
                "warning",
            )
        )
    return counts


def _node_addresses(
    ordered: Sequence[Member], findings: List[Dict[str, str]]
) -> Tuple[Dict[str, Optional[str]], Dict[str, Optional[str]]]:
    """Each node's address and network interface on the cluster network (None where missing or invalid), with
    findings for missing, invalid, shared and loopback addresses."""
    addresses: Dict[str, Optional[str]] = {}
    interfaces: Dict[str, Optional[str]] = {}
    for member in ordered:
        declared = member.variables.get("inferops_cluster_address")
        address = declared if declared not in (None, "") else member.facts.get("address")
        interface = member.variables.get("inferops_cluster_interface") or member.facts.get("interface")
        if address in (None, ""):
            findings.append(
                _finding(
                    "cluster-network",
                    f"inferops_cluster_address is not set for {member.host} and no address was gathered: set the "
                    "node's IP on the cluster network, such as 10.0.0.11 (with inferops_cluster_interface, e.g. "
                    "enp65s0f0, on hosts with several NICs)",
                )
            )
            address = None
        else:
            try:
                address = str(ipaddress.ip_address(str(address)))
            except ValueError:
                findings.append(
                    _finding(
                        "cluster-network",
                        f"inferops_cluster_address of {member.host} must be an IP address such as 10.0.0.11",
                    )
                )
                address = None
        if interface not in (None, "") and not _INTERFACE_RE.fullmatch(str(interface)):
            findings.append(
                _finding(
                    "cluster-network",
                    f"inferops_cluster_interface of {member.host} must be a network interface name such as enp65s0f0",
                )
            )
            interface = None
        addresses[member.host] = address
        interfaces[member.host] = str(interface) if interface not in (None, "") else None
    seen: Dict[str, str] = {}
    for host, address in addresses.items():
        if address and address in seen:
            findings.append(
                _finding(
                    "cluster-network",
                    f"inferops_cluster_address {address} is given to both {seen[address]} and {host}: every node "
                    "needs its own address on the cluster network",
                )
            )
        elif address:
            seen[address] = host
        if address and ipaddress.ip_address(address).is_loopback and len(ordered) > 1:
            findings.append(
                _finding(
                    "cluster-network",
                    f"inferops_cluster_address of {host} is a loopback address: the other nodes cannot reach it",
                )
            )
    return addresses, interfaces


def plan_cluster(name: str, members: Sequence[Member]) -> Dict[str, Any]:
    """``{"contexts": {host: ClusterContext}, "findings": [...]}`` for the hosts of one cluster.

    Findings are the cluster's own checks; every member's plan lists them (an error stops every node:
    a cluster starts whole or not at all). Members are taken in inventory order; the head is the host
    with ``inferops_cluster_head: true``, else the first.
    """
    findings: List[Dict[str, str]] = []
    if not _NAME_RE.fullmatch(str(name)):
        findings.append(_finding("cluster-head", f"inferops_cluster must be a name such as lab-2x4090, got {name!r}"))
    heads = [m.host for m in members if _truthy(m.variables.get("inferops_cluster_head"))]
    if len(heads) > 1:
        findings.append(
            _finding(
                "cluster-head",
                f"inferops_cluster_head is true on {', '.join(heads)} in cluster {name}: exactly one host is the "
                f"head (a value that passes: inferops_cluster_head: true on {heads[0]} only)",
            )
        )
    head = heads[0] if heads else members[0].host
    ordered = [m for m in members if m.host == head] + [m for m in members if m.host != head]
    first = ordered[0].variables
    backend = str(first.get("inferops_cluster_backend") or "ray")
    if backend not in BACKENDS:
        findings.append(
            _finding("cluster-head", f"inferops_cluster_backend must be ray or mp, got {backend!r} (on {head})")
        )
        backend = "ray"
    _add_consistency_findings(name, ordered, findings)
    counts = _gpu_counts(name, ordered, findings)
    addresses, interfaces = _node_addresses(ordered, findings)
    ray_port = _port(first.get("inferops_cluster_ray_port"), DEFAULT_RAY_PORT, "inferops_cluster_ray_port", findings)
    master_port = _port(
        first.get("inferops_cluster_master_port"), DEFAULT_MASTER_PORT, "inferops_cluster_master_port", findings
    )
    per_node = min(counts.values()) if counts else 0
    contexts = {
        member.host: ClusterContext(
            name=str(name),
            backend=backend,
            nnodes=len(ordered),
            node_rank=rank,
            head=head,
            head_address=addresses.get(head),
            address=addresses.get(member.host),
            interface=interfaces.get(member.host),
            ray_port=ray_port,
            master_port=master_port,
            gpus_per_node=per_node,
        )
        for rank, member in enumerate(ordered)
    }
    return {"contexts": contexts, "findings": findings}
