# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""TEST FIXTURE for the rollback scenario: a stand-in for the `vllm` command, NOT vLLM.

The real vLLM needs a GPU to start, and two real releases would cost two CUDA environments of about
9 GiB each. build_fake_vllm_wheels.py packs this file into wheels named `vllm` with a local version
(0.32.0+molecule, 0.33.0+molecule) and a BEHAVIOUR set at build time:

- "serve": `vllm serve --config FILE` prints startup memory lines copied from a real vLLM log
  (tests/unit/fixtures/vllm_logs/v0.27-rtx3090-hybrid.log) and answers /health, /v1/models and
  /v1/completions on the host and port of FILE, requiring VLLM_API_KEY on /v1 when it is set;
- "no-gpu": `vllm serve` fails the way vLLM 0.33.0 does on a host without a GPU.
"""

import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

VERSION = "0.0.0"
BEHAVIOUR = "serve"

STARTUP_REPORT = [
    "Model loading took 14.26 GiB memory and 17.888750 seconds",
    "Available KV cache memory: 7.08 GiB",
    "GPU KV cache size: 222,822 tokens, Maximum concurrency for 131,072 tokens per request: 1.70x",
    "Free memory on device (23.05/23.56 GiB) on startup. Desired GPU memory utilization is (0.972, 22.9 GiB). "
    "Actual usage is 14.73 GiB for consumed memory (weights + non-torch), 1.09 GiB for peak activation, "
    "and 0.71 GiB for CUDAGraph memory.",
]
NO_GPU_ERROR = (
    "RuntimeError: Failed to infer device type, please set the environment variable "
    "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue."
)


def read_config(path):
    """host, port and model of a flat `vllm serve --config` file (the keys this fixture needs)."""
    config = {}
    with open(path) as handle:
        for line in handle:
            match = re.match(r"^(host|port|model): *['\"]?([^'\"\n]*)['\"]?$", line)
            if match:
                config[match.group(1)] = match.group(2)
    return config


def serve(config):
    model = config["model"]
    api_key = os.environ.get("VLLM_API_KEY", "")

    class Handler(BaseHTTPRequestHandler):
        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorized(self):
            return not api_key or self.headers.get("Authorization") == "Bearer " + api_key

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {})
            elif self.path == "/v1/models":
                if self.authorized():
                    self.reply(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
                else:
                    self.reply(401, {"error": "Unauthorized"})
            else:
                self.reply(404, {"error": "not found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/completions":
                self.reply(404, {"error": "not found"})
            elif not self.authorized():
                self.reply(401, {"error": "Unauthorized"})
            else:
                text = "!" * min(int(request.get("max_tokens", 1)), 1)
                self.reply(200, {"object": "text_completion", "model": model, "choices": [{"index": 0, "text": text}]})

        def log_message(self, format, *args):
            print("fake vllm: " + format % args, flush=True)

    host = config.get("host", "127.0.0.1")
    server = HTTPServer((host, int(config.get("port", "8000"))), Handler)
    for line in STARTUP_REPORT:
        print(line, flush=True)
    server.serve_forever()


def main():
    args = sys.argv[1:]
    if args in (["--version"], ["-v"]):
        print(VERSION)
        return 0
    if args[:1] != ["serve"] or "--config" not in args:
        print("usage: vllm serve --config FILE | vllm --version (molecule test fixture)", file=sys.stderr)
        return 2
    if BEHAVIOUR == "no-gpu":
        print(NO_GPU_ERROR, file=sys.stderr, flush=True)
        return 1
    serve(read_config(args[args.index("--config") + 1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
