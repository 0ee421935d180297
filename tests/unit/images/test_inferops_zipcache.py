"""The test images' bytecode cache of zip imports (tests/images/inferops_zipcache.py), in a Python of its own."""

import json
import marshal
import subprocess
import sys
import zipfile
from pathlib import Path

IMAGES = Path(__file__).resolve().parents[3] / "tests" / "images"

# Imports the package `pkg` from the zip with the cache installed and prints what it returns, its file name, the
# file name its code carries (what a traceback shows) and the cache's entries.
PROBE = """
import json, os, sys
sys.path.insert(0, {images!r})
import inferops_zipcache
assert inferops_zipcache.install({cache!r})
sys.path.insert(0, {archive!r})
import pkg.mod
print(json.dumps([pkg.mod.answer(), pkg.mod.__file__, pkg.mod.answer.__code__.co_filename,
                  sorted(os.listdir({cache!r}))]))
"""


def write_zip(archive: Path, answer: int) -> None:
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("pkg/__init__.py", "")
        zipped.writestr("pkg/mod.py", f"def answer():\n    return {answer}\n")


def probe(tmp_path: Path, archive: Path) -> list:
    code = PROBE.format(images=str(IMAGES), cache=str(tmp_path / "cache"), archive=str(archive))
    done = subprocess.run(
        [sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"INFEROPS_ZIPIMPORT_CACHE": "0"},
    )
    return json.loads(done.stdout)


def test_the_second_import_reads_the_cache_and_names_the_zip(tmp_path):
    archive = tmp_path / "first" / "payload.zip"
    archive.parent.mkdir()
    write_zip(archive, 41)
    answer, filename, co_filename, entries = probe(tmp_path, archive)
    assert answer == 41
    assert len(entries) == 2  # pkg/__init__.py and pkg/mod.py
    assert filename == co_filename == f"{archive}/pkg/mod.py"

    # The same sources in a zip elsewhere (each task's payload has its own temporary path): the cache serves them,
    # and the code carries the new zip's path.
    moved = tmp_path / "second" / "payload.zip"
    moved.parent.mkdir()
    write_zip(moved, 41)
    answer, filename, co_filename, again = probe(tmp_path, moved)
    assert (answer, again) == (41, entries)
    assert filename == co_filename == f"{moved}/pkg/mod.py"


def test_a_changed_source_is_compiled_again(tmp_path):
    archive = tmp_path / "payload.zip"
    write_zip(archive, 1)
    first = probe(tmp_path, archive)
    write_zip(archive, 2)
    second = probe(tmp_path, archive)
    assert (first[0], second[0]) == (1, 2)
    assert len(set(second[3]) - set(first[3])) == 1  # mod.py's new entry beside the old; __init__.py's reused


def test_a_cache_entry_is_what_python_would_run(tmp_path):
    # An entry is the code object of the source, as compile() makes it: replacing one changes what runs, so the
    # entries are really read (and only root may write them, tests/images/inferops_zipcache.py).
    archive = tmp_path / "payload.zip"
    write_zip(archive, 7)
    probe(tmp_path, archive)
    cache = tmp_path / "cache"
    for entry in cache.iterdir():
        code = marshal.loads(entry.read_bytes())
        if "answer" in code.co_names:
            entry.write_bytes(marshal.dumps(compile("def answer():\n    return 8\n", "x", "exec")))
    assert probe(tmp_path, archive)[0] == 8
