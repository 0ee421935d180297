# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The inferops.llm.ollama_* filters (documented in ollama_*.yml beside this file)."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence

from ansible.errors import AnsibleFilterError

from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama import render as ollama_render
from ansible_collections.inferops.llm.plugins.module_utils._engines.ollama.releases import release_sha256


def _plain(value: t.Any, what: str) -> dict[str, t.Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AnsibleFilterError(f"{what} must be a mapping, not a {type(value).__name__}")
    return {
        str(k): (
            dict(v) if isinstance(v, Mapping) else list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v
        )
        for k, v in value.items()
    }


def _wrap(func: t.Callable[..., t.Any]) -> t.Callable[..., t.Any]:
    def call(*args: t.Any, **kwargs: t.Any) -> t.Any:
        try:
            return func(*args, **kwargs)
        except ollama_render.OllamaRenderError as error:
            raise AnsibleFilterError(str(error)) from error

    call.__name__ = func.__name__
    call.__doc__ = func.__doc__
    return call


@_wrap
def ollama_archive_name(version: t.Any, arch: t.Any) -> str:
    """Release asset name of an Ollama version for a CPU architecture."""
    return ollama_render.archive_name(str(version), str(arch))


def ollama_release_sha256(version: t.Any) -> dict[str, str]:
    """sha256 of the release archives of an Ollama version by Go architecture, from its release record."""
    return release_sha256(str(version))


@_wrap
def ollama_environment(settings: t.Any, options: t.Any) -> dict[str, str]:
    """Service environment from the plan settings and the role options."""
    return ollama_render.ollama_environment(_plain(settings, "settings"), _plain(options, "options"))


@_wrap
def ollama_modelfile(source: t.Any, settings: t.Any, options: t.Any, profile: t.Any = None) -> dict[str, t.Any]:
    """Modelfile text and its PARAMETER set for one model (profile) over a GGUF."""
    profile_map = _plain(profile, "profile")
    parameters = ollama_render.modelfile_parameters(
        _plain(settings, "settings"), _plain(options, "options"), profile_map
    )
    text = ollama_render.ollama_modelfile(
        str(source), parameters, system=profile_map.get("system"), template=profile_map.get("template")
    )
    return {"text": text, "parameters": parameters}


@_wrap
def ollama_model_drift(show: t.Any, parameters: t.Any, digest: t.Any = None) -> list[str]:
    """Differences between /api/show output and the wanted parameters and GGUF digest."""
    return ollama_render.model_drift(_plain(show, "show") or None, _plain(parameters, "parameters"), digest)


def ollama_pull_state(models: t.Any, tags: t.Any) -> dict[str, list[dict[str, t.Any]]]:
    """Which ollama_models to pull, and which pinned ones Ollama holds under another digest."""
    if not isinstance(models, Sequence) or isinstance(models, str):
        raise AnsibleFilterError(f"ollama_models must be a list, not a {type(models).__name__}")
    return ollama_render.pull_state([_plain(m, "ollama_models entry") for m in models], _plain(tags, "tags"))


class FilterModule:
    def filters(self) -> dict[str, t.Callable[..., t.Any]]:
        return {
            "ollama_archive_name": ollama_archive_name,
            "ollama_environment": ollama_environment,
            "ollama_release_sha256": ollama_release_sha256,
            "ollama_modelfile": ollama_modelfile,
            "ollama_model_drift": ollama_model_drift,
            "ollama_pull_state": ollama_pull_state,
        }
