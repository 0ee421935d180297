# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Catalogue of model architectures shipped with the collection.

Public API:

``CatalogueEntry`` (frozen dataclass): ``id``, ``name``, ``aliases``, ``verified``, ``config_source``,
    ``config`` (config.json subset, plain dict), ``params`` (parameter counts by component: ``embed``,
    ``lm_head``, ``router``, ``experts``, ``attn_linear``, ``dense_or_shared_mlp``,
    ``linear_attn_linear``, ``small_other``, ``vision``, ``mtp``), ``params_source``;
    ``architecture()`` -> ``ModelArchitecture``; ``to_dict()``.
``catalogue_ids() -> list[str]``: canonical ids, sorted.
``find_model(repo) -> CatalogueEntry | None``: exact id or alias, case-insensitive; a ``hf.co/`` or
    ``huggingface.co/`` prefix and a ``:revision`` / ``@revision`` suffix are ignored.
``resolve_model(repo, base_model=None) -> CatalogueEntry``: ``base_model`` wins when given (quantized or
    GGUF repos name their architecture that way, e.g. ``Qwen/Qwen3.6-35B-A3B-FP8`` with
    ``base_model: Qwen/Qwen3.6-35B-A3B``); raises ``ValueError`` naming ``inferops_model.base_model``
    and the catalogued ids when neither is catalogued.
``describe_model(model, config=None, hf_quant_config=None) -> (ModelArchitecture, CatalogueEntry | None, str)``:
    the architecture for an ``inferops_model`` mapping; ``config`` (a parsed config.json the caller read
    from ``inferops_model.config`` or ``config_file``) wins over the catalogue; the string says which
    source was used.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._model.arch import ModelArchitecture

# The catalogue's data (catalogue.json beside this file). Each entry: ``id`` (canonical Hugging Face repo),
# ``name``, ``aliases`` (other repo ids and short names of the same architecture), ``verified`` (True when
# ``config`` was read from the model's real config.json), ``config_source``, ``config`` (the config.json keys
# the budgets read; ``layer_types`` omitted where ``full_attention_interval`` gives the same list),
# ``params`` (parameter counts by component: embed, lm_head, router, experts, attn_linear,
# dense_or_shared_mlp, linear_attn_linear, small_other, vision, mtp) and ``params_source``.
CATALOGUE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalogue.json")
with open(CATALOGUE_FILE, encoding="utf-8") as _handle:
    CATALOGUE = json.load(_handle)


@dataclass(frozen=True)
class CatalogueEntry:
    id: str
    name: str
    aliases: Tuple[str, ...]
    verified: bool
    config_source: str
    config: Dict[str, Any] = field(hash=False, compare=False)
    params: Dict[str, int] = field(hash=False, compare=False)
    params_source: str = ""

    def architecture(self) -> ModelArchitecture:
        return ModelArchitecture.from_config(self.config)

    @property
    def total_params(self) -> int:
        return sum(self.params.values())

    def to_dict(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "aliases": list(self.aliases),
            "verified": self.verified,
            "config_source": self.config_source,
            "params": dict(self.params),
            "params_source": self.params_source,
        }


def _key(repo: str) -> str:
    text = str(repo).strip()
    for prefix in ("https://huggingface.co/", "huggingface.co/", "hf.co/"):
        if text.lower().startswith(prefix):
            text = text[len(prefix) :]
    for sep in (":", "@"):
        text = text.split(sep, 1)[0]
    return text.strip("/").lower()


def _build_index() -> Dict[str, CatalogueEntry]:
    index: Dict[str, CatalogueEntry] = {}
    for raw in CATALOGUE:
        entry = CatalogueEntry(
            id=raw["id"],
            name=raw["name"],
            aliases=tuple(raw["aliases"]),
            verified=bool(raw["verified"]),
            config_source=raw["config_source"],
            config=raw["config"],
            params=dict(raw["params"]),
            params_source=raw["params_source"],
        )
        for name in (entry.id, *entry.aliases):
            key = _key(name)
            if key in index and index[key] is not entry:
                raise ValueError(f"model catalogue: {name!r} names two entries")
            index[key] = entry
    return index


_INDEX = _build_index()


def catalogue_ids() -> List[str]:
    return sorted({entry.id for entry in _INDEX.values()})


def find_model(repo: str) -> Optional[CatalogueEntry]:
    if not isinstance(repo, str) or not repo.strip():
        return None
    return _INDEX.get(_key(repo))


def _not_catalogued(repo: str, base_model: Optional[str]) -> ValueError:
    if base_model:
        return ValueError(
            f"inferops_model.base_model {base_model!r} is not in the model catalogue; "
            f"use one of: {', '.join(catalogue_ids())}, or give inferops_model.config / config_file"
        )
    return ValueError(
        f"inferops_model.repo {repo!r} is not in the model catalogue: set inferops_model.base_model to the "
        f"catalogued architecture it derives from ({', '.join(catalogue_ids())}), or give the real "
        "config.json as inferops_model.config or inferops_model.config_file"
    )


def resolve_model(repo: str, base_model: Optional[str] = None) -> CatalogueEntry:
    entry = find_model(base_model or repo)
    if entry is None:
        raise _not_catalogued(repo, base_model)
    return entry


def describe_model(
    model: Mapping, config: Optional[Mapping] = None, hf_quant_config: Optional[Mapping] = None
) -> Tuple[ModelArchitecture, Optional[CatalogueEntry], str]:
    """Architecture of an ``inferops_model`` mapping, the catalogue entry that matched, and the source used."""
    if not isinstance(model, Mapping):
        raise ValueError("inferops_model must be a mapping with at least 'repo'")
    repo = model.get("repo")
    if not isinstance(repo, str) or not repo.strip():
        raise ValueError("inferops_model.repo is required (the Hugging Face id, e.g. Qwen/Qwen3.6-35B-A3B)")
    base_model = model.get("base_model")
    entry = find_model(base_model or repo)
    source = "config.json"
    if config is None:
        if entry is None:
            raise _not_catalogued(repo, base_model)
        config, source = entry.config, f"catalogue:{entry.id}" + ("" if entry.verified else " (unverified)")
    return ModelArchitecture.from_config(config, hf_quant_config), entry, source
