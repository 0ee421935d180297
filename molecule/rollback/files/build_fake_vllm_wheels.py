# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""Build the rollback scenario's TEST FIXTURE wheels (see fake_vllm.py) into a directory.

usage: python build_fake_vllm_wheels.py OUTDIR VERSION=BEHAVIOUR ...
e.g.   python build_fake_vllm_wheels.py wheelhouse 0.32.0+molecule=serve 0.33.0+molecule=no-gpu
"""

import base64
import hashlib
import os
import sys
import zipfile

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_vllm.py")
# A fixed date keeps the wheel bytes, and so the scenario's idempotence, the same on every build.
DATE = (2026, 1, 1, 0, 0, 0)


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build(outdir, version, behaviour):
    with open(SOURCE, encoding="utf-8") as handle:
        source = handle.read()
    source = source.replace('VERSION = "0.0.0"', f'VERSION = "{version}"')
    source = source.replace('BEHAVIOUR = "serve"', f'BEHAVIOUR = "{behaviour}"')
    info = f"vllm-{version}.dist-info"
    files = {
        "vllm/__init__.py": f'__version__ = "{version}"\n',
        "vllm/_molecule_fake.py": source,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        "Summary: molecule test fixture standing in for vLLM (not vLLM)\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: inferops-molecule\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nvllm = vllm._molecule_fake:main\n",
    }
    records = [record_line(name, text.encode()) for name, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join([*records, f"{info}/RECORD,,"]) + "\n"
    path = os.path.join(outdir, f"vllm-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, text in files.items():
            wheel.writestr(zipfile.ZipInfo(name, DATE), text)
    return path


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for spec in sys.argv[2:]:
        version, behaviour = spec.split("=", 1)
        print(build(outdir, version, behaviour))


if __name__ == "__main__":
    main()
