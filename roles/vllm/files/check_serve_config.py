# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Parse a `vllm serve --config FILE` with the installed vLLM's own parser, without starting an engine.

Run by the environment's interpreter with the config file as argument (any name: vLLM reads only
.yaml/.yml files, so it parses a copy with that suffix). It builds the parser the
`vllm` command builds for `serve` and parses `serve --config FILE` as `vllm serve` does, then runs the
checks `vllm serve` runs before loading anything. vLLM's own error (an unknown option, a value it
rejects) ends it with a non-zero status. Prints the parsed value of every key of the file as JSON.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile

import yaml
from vllm.entrypoints.cli.serve import ServeSubcommand

try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:  # vLLM releases before the argparse helpers moved out of vllm.utils
    from vllm.utils import FlexibleArgumentParser


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        keys = list(yaml.safe_load(handle) or {})
    parser = FlexibleArgumentParser(prog="vllm")
    subparsers = parser.add_subparsers(dest="subparser")
    command = ServeSubcommand()
    command.subparser_init(subparsers)
    with tempfile.NamedTemporaryFile(suffix=".yaml") as copy:
        shutil.copyfile(sys.argv[1], copy.name)
        args = parser.parse_args(["serve", "--config", copy.name])
    command.validate(args)
    parsed = {}
    for key in keys:
        name = key[3:] if key.startswith("no-") else key
        parsed[key] = getattr(args, name.replace("-", "_"), None)
    print(json.dumps(parsed, default=str, sort_keys=True))


main()
