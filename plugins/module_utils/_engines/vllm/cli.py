# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""``vllm_extra_args`` read once, the way `vllm serve`'s parser reads an argv, into canonical long options.

vLLM's FlexibleArgumentParser (vllm/utils/argparse_utils.py) takes ``--flag value`` and ``--flag=value``,
treats underscores in a long option as dashes, and knows a few short aliases (engine/arg_utils.py
add_cli_args). Inventories also write one element holding several words (``"--max-num-seqs 8"``); it is
split as a shell would. The result is a list of options whose flags are long and dashed, so that the plan
can tell which flags it manages itself, whatever the spelling.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

from ansible_collections.inferops.llm.plugins.module_utils._engines.vllm.settings import VLLM_SETTINGS

# Short aliases of `vllm serve` (engine/arg_utils.py EngineArgs.add_cli_args, 0.19.1 and 0.33.0).
SHORT_ALIASES: Dict[str, str] = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-dpl": "--data-parallel-size-local",
    "-dcp": "--decode-context-parallel-size",
    "-q": "--quantization",
    "-ep": "--enable-expert-parallel",
    "-O": "--compilation-config",
}
_LONG_RE = re.compile(r"--[A-Za-z][A-Za-z0-9_.-]*")
_NUMBER_RE = re.compile(r"-[0-9.]+(?:[eE][-+]?[0-9]+)?")


def managed_flags(engine_prefix: str = "vllm") -> Dict[str, str]:
    """Every long flag the plan or the vllm role sets itself -> the inventory variable to use instead."""
    managed: Dict[str, str] = {}
    for setting in VLLM_SETTINGS:
        if setting.flag and setting.flag.startswith("--"):
            managed[setting.flag] = f"{engine_prefix}_{setting.name}"
            if setting.negatable or setting.kind == "bool":
                managed["--no-" + setting.flag[2:]] = f"{engine_prefix}_{setting.name}"
    managed.update(
        {
            "--model": "inferops_model.repo",
            "--revision": "inferops_model.revision",
            "--host": "vllm_host",
            "--port": "vllm_port",
            "--shutdown-timeout": "vllm_shutdown_timeout (the vllm role sets it below the unit's TimeoutStopSec)",
            "--config": "nothing: the vllm role writes the serve.yaml that --config reads",
            "--api-key": "vllm_api_key (vaulted; it goes to a mode 0600 environment file)",
            "--hf-token": "vllm_hf_token (vaulted; it goes to a mode 0600 environment file)",
        }
    )
    return managed


# Flags that carry credentials: their value must never be in an argv, a plan or a serve.yaml.
SECRET_FLAGS = ("--api-key", "--hf-token")


class ExtraArgsError(ValueError):
    """vllm_extra_args cannot be read; the message says what to write instead (and never repeats a value)."""


@dataclass(frozen=True)
class Option:
    """One option of vllm_extra_args: its canonical long flag, its values and how the inventory wrote it."""

    flag: str
    values: Tuple[str, ...]
    written: str

    def argv(self) -> List[str]:
        return [self.flag, *self.values]


def _tokens(args: Sequence[str]) -> List[str]:
    tokens: List[str] = []
    for arg in args:
        if arg.strip() != arg or any(c.isspace() for c in arg):
            try:
                tokens += shlex.split(arg)
            except ValueError as error:
                raise ExtraArgsError(f"an element has unbalanced quotes ({error})") from error
        else:
            tokens.append(arg)
    return tokens


def _is_value(token: str) -> bool:
    return not token.startswith("-") or bool(_NUMBER_RE.fullmatch(token))


def parse_extra_args(args: Sequence[str]) -> List[Option]:
    """The options of an argv fragment, flags canonical (long, dashed). Raises ExtraArgsError."""
    tokens = _tokens(args)
    options: List[Option] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        position += 1
        if _is_value(token):
            raise ExtraArgsError(
                "holds a value that follows no option; write each option as --flag value or --flag=value"
            )
        name, has_inline, inline = token.partition("=")
        if name.startswith("--"):
            if not _LONG_RE.fullmatch(name):
                raise ExtraArgsError(f"holds {name!r}, which is not a long option such as --max-num-seqs")
            flag = "--" + name[2:].replace("_", "-")
        elif name in SHORT_ALIASES:
            flag = SHORT_ALIASES[name]
        else:
            longest_first = sorted(SHORT_ALIASES, key=len, reverse=True)
            attached = next((alias for alias in longest_first if name.startswith(alias)), None)
            if attached is None or has_inline:
                raise ExtraArgsError(
                    f"holds the short option {name[:3]!r}, which the plan does not know: write its long form "
                    "(such as --tensor-parallel-size for -tp)"
                )
            flag, has_inline, inline = SHORT_ALIASES[attached], "=", name[len(attached) :]
        values: List[str] = [inline] if has_inline else []
        if not has_inline:
            while position < len(tokens) and _is_value(tokens[position]):
                values.append(tokens[position])
                position += 1
        options.append(Option(flag=flag, values=tuple(values), written=name))
    return options


def abbreviation_of(flag: str, managed: Mapping[str, str]) -> str:
    """A managed flag that argparse could expand ``flag`` to (``flag`` is a strict prefix of it), or "".

    argparse expands a unique prefix (allow_abbrev) and refuses an ambiguous one: either way such a flag
    would reach a setting the plan manages or fail the start.
    """
    matches = sorted(known for known in managed if known.startswith(flag) and known != flag and len(flag) > 3)
    return matches[0] if matches else ""
