# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""What a role would refuse only after the driver and the model download, said by the plan first (issue 26).

``plan.yml`` passing should mean ``site.yml`` will not refuse the inventory. The vllm role's key and remote
rules are ``inputs.vllm_key_findings``; this module has the Ollama release's checksum (the ollama role) and
a Ray cluster's requirements (the ray role, and vLLM's workers inside Ray). Each finding names the variable
and a value that passes. Keys are never read: only whether the host defines them (``inputs.defined_names``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ansible_collections.inferops.llm.plugins.module_utils._core.findings import finding_entry
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import (
    nearest_release_with_sha256,
    release_sha256,
)

# ollama_arch (or the gathered architecture) as the ollama role maps it (roles/ollama/vars/main.yml
# _ollama_go_arch): the key of a release's checksums.
GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_TRUE = ("true", "yes", "on", "1")


def ollama_checksum_findings(
    variables: Mapping[str, Any],
    architecture: Optional[str],
    version: Optional[str] = None,
    variable: str = "ollama_version",
) -> List[Dict[str, Any]]:
    """The ollama role's refusal of a release without a known sha256 (roles/ollama/tasks/preflight.yml): none in
    the collection's release record (_engines/ollama/releases.json) nor in ollama_checksums for the host's Go
    architecture (ollama_arch, else the gathered one, else amd64, said in the message).

    version / variable: the release and the variable that pins it; by default the Ollama host's ollama_version.
    A vLLM host's standby Ollama (inferops_standby_ollama.version) is installed by the same role on the same
    host, so the same ollama_checksums and ollama_arch apply."""
    version = str((variables.get("ollama_version") if version is None else version) or "")
    named = variables.get("ollama_arch") or architecture
    arch = GO_ARCH.get(str(named), "amd64") if named else "amd64"
    given = variables.get("ollama_checksums")
    given = given.get(version) if isinstance(given, Mapping) else None
    known = release_sha256(version).get(arch) or (given.get(arch) if isinstance(given, Mapping) else None)
    if isinstance(known, str) and _SHA256_RE.fullmatch(known):
        return []
    passing = nearest_release_with_sha256(version, arch)
    assumed = "" if named else " (the plan does not know the host's architecture: amd64 assumed; set ollama_arch)"
    entry = json.dumps({version: {arch: "<sha256>"}})
    return [
        finding_entry(
            "ollama-checksum-unknown",
            "error",
            f"no sha256 is known for Ollama {version} on {arch}{assumed}: the collection's release records "
            "(_engines/ollama/releases.json) have none and ollama_checksums adds none, so the ollama role refuses "
            "to download it, after the driver and the model download. Pin a release with a recorded checksum, "
            f"or add this one's from its sha256sum.txt: ollama_checksums: {entry}",
            variable,
            passing,
        )
    ]


# A digest as GET /api/tags reports a model (the sha256 of its manifest), with or without "sha256:".
_DIGEST_RE = re.compile(r"(?:sha256:)?[0-9a-f]{64}")


def ollama_pull_findings(variables: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The pulled models of ollama_models (roles/ollama/tasks/models.yml): a registry tag can be moved to other
    weights, so a ``pull:`` without ``digest:`` is a warning (two hosts converged a week apart may serve different
    weights); a ``digest:`` that is no sha256 is an error, which the ollama role's preflight refuses."""
    models = variables.get("ollama_models")
    found: List[Dict[str, Any]] = []
    for index, entry in enumerate(models if isinstance(models, list) else []):
        if not isinstance(entry, Mapping) or "pull" not in entry:
            continue
        digest = entry.get("digest")
        variable = f"ollama_models[{index}].digest"
        if digest is None:
            found.append(
                finding_entry(
                    "ollama-pull-digest",
                    "warning",
                    f"{variable} is not set: ollama_models[{index}] pulls the tag {str(entry['pull'])[:80]!r}, which "
                    "its registry can move to other weights, so hosts converged at different times may serve "
                    "different models. Pin it with the digest Ollama reports for the tag (the 'digest' of GET "
                    "/api/tags after a pull; 'ollama list' shows its first 12 characters); the ollama role then "
                    "refuses any other",
                    variable,
                )
            )
        elif not (isinstance(digest, str) and _DIGEST_RE.fullmatch(digest)):
            found.append(
                finding_entry(
                    "ollama-pull-digest",
                    "error",
                    f"{variable} is not a sha256 digest (64 lowercase hex characters, optionally after 'sha256:'), "
                    "which the ollama role refuses before any change; take the tag's digest from GET /api/tags",
                    variable,
                )
            )
    return found


# The Ray release both roles pin by default: the ray role's ray_version (every node) and the vllm role's
# vllm_ray_version (ray[default] beside vLLM on the head); tests/unit/.../test_role_refusals.py holds them equal.
DEFAULT_RAY_VERSION = "2.60.0"


def ray_version_findings(variables: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """For the head of a Ray cluster: vllm_ray_version against the cluster's ray_version. The vllm role installs
    ray[default]==vllm_ray_version beside vLLM on the head, and vLLM's Ray executor joins the cluster as a
    driver; Ray refuses a driver whose Ray (or Python) release is not the cluster's (ray/_private/node.py
    check_version_info raises RuntimeError "Version mismatch"), so vLLM's start fails on the head once the
    driver, the model and Ray are installed. Unset values are the roles' defaults (DEFAULT_RAY_VERSION)."""
    cluster = str(variables.get("ray_version") or DEFAULT_RAY_VERSION).strip()
    beside_vllm = str(variables.get("vllm_ray_version") or DEFAULT_RAY_VERSION).strip()
    if cluster == beside_vllm:
        return []
    return [
        finding_entry(
            "ray-version-mismatch",
            "error",
            # The cluster's release is the suggested value, which plan_findings appends (verified by a re-plan).
            f"vllm_ray_version {beside_vllm} is not the cluster's ray_version: the vllm role installs "
            f"ray[default]=={beside_vllm} beside vLLM on the head, and Ray refuses a driver whose release differs "
            "from the cluster's (RuntimeError: Version mismatch), so vLLM's start fails on the head after the "
            "driver, the model and Ray are installed. Keep vllm_ray_version equal to ray_version",
            "vllm_ray_version",
            cluster,
        )
    ]


def ray_findings(
    variables: Mapping[str, Any], defined: Iterable[str], engine_version: str, head: bool = True
) -> List[Dict[str, Any]]:
    """For a node of a Ray cluster: the ray role's refusal of a cluster without token authentication (an error),
    and the vLLM that Ray's environment must hold (vLLM's workers run with the Python of ``ray start``,
    docs/multi-node.md), else vLLM's start fails on every node after everything is installed (a warning: the
    ray role itself runs a Ray cluster without it); on the head (where the vllm role runs), the Ray release
    beside vLLM against the cluster's (ray_version_findings)."""
    found = ray_version_findings(variables) if head else []
    allowed = str(variables.get("ray_allow_no_auth", False)).lower() in _TRUE
    if "ray_auth_token" not in set(defined) and not allowed:
        found.append(
            finding_entry(
                "ray-requirements",
                "error",
                "ray_auth_token is not set (or empty): the ray role refuses a cluster without Ray's token "
                "authentication, in which anyone who reaches its ports runs code as the service account. Set "
                "ray_auth_token to a vaulted random value, the same on every node (openssl rand -hex 32 | "
                "ansible-vault encrypt_string --stdin-name ray_auth_token), or ray_allow_no_auth: true for a "
                "network no one else reaches",
                "ray_auth_token",
            )
        )
    pin = f"vllm=={engine_version}"
    requirements = variables.get("ray_extra_requirements") or []
    if not isinstance(requirements, list) or pin not in [str(item).replace(" ", "") for item in requirements]:
        wanted = (
            [pin, *(str(r) for r in requirements if not str(r).startswith("vllm"))]
            if isinstance(requirements, list)
            else [pin]
        )
        found.append(
            # A warning: the ray role installs and starts Ray without vLLM (the ray_cluster scenario runs it so);
            # vLLM's own start is what fails.
            finding_entry(
                "ray-requirements",
                "warning",
                f"ray_extra_requirements does not hold {pin}: vLLM's Ray backend runs its workers in the Ray "
                "nodes' processes, with the Python of ray start, so without the pinned vLLM in the Ray environment "
                "vLLM's start fails on every node, once the driver, the model and Ray are installed",
                "ray_extra_requirements",
                wanted,
            )
        )
    return found
