# Copyright: (c) 2026, inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""A bytecode cache for modules imported from zip files: the test images' Python only (tests/images/Dockerfile).

Every Ansible task runs its module as a zip of ansible-core's module_utils on the host's Python, which compiles
the same 50 to 100 source files again in each task: Python writes no bytecode for what it imports from a zip.
Keyed by the source itself, this cache gives each task the code objects that Python would have compiled from that
source, so the module runs the same code. Measured in the images (ansible-core 2.21's stat module run 20 times):
0.33 -> 0.23 CPU-s a run on Debian 12, 0.32 -> 0.22 on Debian 13 (README.md, "Tests").

Loaded at the interpreter's start by inferops-zipcache.pth in the system Python's site directory; only root
writes the cache (a directory of root's, 0755), so another account can neither fill it nor change what root runs.
A virtual environment without the system's site packages (the engines') does not load it.
"""

import _imp
import marshal
import os
import sys
import zipimport

CACHE_DIR = os.path.join("/var/cache/inferops-zipimport", sys.implementation.cache_tag or "none")


class CachingZipImporter(zipimport.zipimporter):
    """zipimport's importer, with each module's code object kept under the sha256 of its path and source."""

    cache_dir = CACHE_DIR

    def get_code(self, fullname):
        try:
            source = self.get_source(fullname)
        except zipimport.ZipImportError:
            source = None
        if source is None:
            return super().get_code(fullname)
        import hashlib  # pylint: disable=import-outside-toplevel  # only when a zip is imported from

        # The path as zipimport names it (get_filename would compile the module to find it).
        inner = self.prefix + fullname.rpartition(".")[2]
        inner += "/__init__.py" if self.is_package(fullname) else ".py"
        filename = f"{self.archive}/{inner}"
        key = hashlib.sha256(f"{inner}\0{source}".encode()).hexdigest()
        path = os.path.join(self.cache_dir, key)
        try:
            with open(path, "rb") as handle:
                code = marshal.load(handle)
        except (OSError, ValueError, EOFError, TypeError):
            code = super().get_code(fullname)
            if os.getuid() == 0:
                try:
                    partial = f"{path}.{os.getpid()}"
                    with open(partial, "wb") as handle:
                        marshal.dump(code, handle)
                    os.replace(partial, path)
                except OSError:
                    pass
            return code
        _imp._fix_co_filename(code, filename)  # pylint: disable=protected-access
        return code


def install(cache_dir=CACHE_DIR):
    """Put the caching importer in zipimport's place on sys.path_hooks, with cache_dir as its cache."""
    if not os.path.isdir(cache_dir):
        if os.getuid() != 0:
            return False
        try:
            os.makedirs(cache_dir, mode=0o755, exist_ok=True)
        except OSError:
            return False
    CachingZipImporter.cache_dir = cache_dir
    sys.path_hooks[:] = [CachingZipImporter if hook is zipimport.zipimporter else hook for hook in sys.path_hooks]
    sys.path_importer_cache.clear()
    return True


if os.environ.get("INFEROPS_ZIPIMPORT_CACHE", "1") != "0":
    install()
