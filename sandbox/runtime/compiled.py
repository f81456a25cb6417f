"""The compiled Python layer: the package's own modules, compiled by Cython from the
same ``.py`` files, and the import hook that chooses between the two.

Above the kernels, a training step is Python: the autograd engine, the functional ops,
the layers, the optimisers and the array layer's dispatch, thousands of calls a step.
``setup.py`` compiles the modules of those packages (:data:`COMPILED_PACKAGES`) with
Cython as they are, plain Python in, an extension module out; there is no second
source, and a module runs the same code either way, with less interpreter work per call
(``docs/design.md``, "The compiled Python layer", has the figures).

The extensions live in ``sandbox/_C/compiled/``, where Python's own import system does
not look, with ``manifest.json``: each module's extension file and the SHA-256 of the
source it was compiled from.  :class:`CompiledFinder` (installed when this module is
imported, first thing in ``sandbox/__init__``; ``runtime/__init__`` imports nothing)
loads a module's extension only while its ``.py`` file is still that source:

* an edited module runs from its source until the next build (``pip install -e .``), so
  a change is never shadowed by an older build, and a checkout of an older commit, which
  lacks this finder, never meets a stale extension beside its sources;
* ``SANDBOX_PURE_PYTHON=1`` runs every module from source (to step through the engine
  with pdb, for coverage, or to compare);
* a build with ``SANDBOX_COMPILE_PYTHON=0`` compiles none.

:func:`status` tells which modules run compiled and why the others do not
(``sandbox info`` prints it).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys

#: the packages of ``sandbox`` whose modules setup.py compiles (:func:`compiled_modules`)
COMPILED_PACKAGES = ("array", "autograd", "functional", "nn", "ops", "optim", "runtime")

#: set (to anything but "" or "0") to run every module from its source
PURE_ENV_VAR = "SANDBOX_PURE_PYTHON"

_THIS_MODULE = "sandbox.runtime.compiled"
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../sandbox
COMPILED_DIR = os.path.join(_PACKAGE_DIR, "_C", "compiled")
MANIFEST = "manifest.json"


def compiled_modules() -> list[str]:
    """The modules setup.py compiles: every module of :data:`COMPILED_PACKAGES` but the
    packages' ``__init__`` (run once, at import) and this one (imported before its own
    hook is installed)."""
    names = []
    for package in COMPILED_PACKAGES:
        for folder, _, files in os.walk(os.path.join(_PACKAGE_DIR, package)):
            prefix = os.path.relpath(folder, os.path.dirname(_PACKAGE_DIR)).split(os.sep)
            names += [".".join([*prefix, f[:-3]]) for f in files
                      if f.endswith(".py") and f != "__init__.py"]
    return sorted(n for n in names if n != _THIS_MODULE)


def source_digest(path: str) -> str:
    """The SHA-256 of a source file's bytes, as the manifest records it."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def source_path(name: str) -> str:
    """The ``.py`` file of module ``name`` (``sandbox.autograd._engine``)."""
    return os.path.join(_PACKAGE_DIR, *name.split(".")[1:]) + ".py"


def _load_manifest(directory: str) -> dict:
    """``{module: {"file": ..., "sha256": ...}}`` of a build, empty without one or for a
    build of another Python (its extensions would not load in this interpreter)."""
    try:
        with open(os.path.join(directory, MANIFEST)) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return {}
    if manifest.get("python") != sys.implementation.cache_tag:
        return {}
    return manifest.get("modules", {})


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds the compiled extension of a manifest's module whose source is unchanged.

    For any other module, and for a module that must run from source, it returns None
    and the default finders load the ``.py`` file.  ``choices`` records, per module of
    the manifest that was imported, ``"compiled"`` or why it runs from source.
    """

    def __init__(self, directory: str = COMPILED_DIR, pure: bool | None = None):
        self.directory = directory
        self.modules = _load_manifest(directory)
        if pure is None:
            pure = os.environ.get(PURE_ENV_VAR, "0") not in ("", "0")
        self.pure = pure
        self.choices: dict[str, str] = {}

    def find_spec(self, fullname, path=None, target=None):
        entry = self.modules.get(fullname)
        if entry is None:
            return None
        binary = os.path.join(self.directory, entry["file"])
        reason = self._why_source(fullname, entry, binary)
        self.choices[fullname] = reason or "compiled"
        if reason:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, binary)
        return importlib.util.spec_from_file_location(fullname, binary, loader=loader)

    def _why_source(self, name: str, entry: dict, binary: str) -> str | None:
        """Why module ``name`` runs from its source, or None to load ``binary``."""
        if self.pure:
            return f"{PURE_ENV_VAR} is set"
        if not os.path.exists(binary):
            return "its extension is missing"
        try:
            if source_digest(source_path(name)) != entry["sha256"]:
                return "edited since it was compiled"
        except OSError:
            return "its source is missing"
        return None


def install() -> CompiledFinder:
    """Put the finder first on ``sys.meta_path`` (once) and return it."""
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    finder = CompiledFinder()
    sys.meta_path.insert(0, finder)
    return finder


def status() -> dict:
    """Which of the built modules run compiled: ``{"built": n, "compiled": [...],
    "source": {module: reason}}`` over the modules imported so far, plus the reason
    when the whole layer runs from source (``"pure"``, ``"not built"``)."""
    finder = install()
    compiled = sorted(m for m, why in finder.choices.items() if why == "compiled")
    source = {m: why for m, why in sorted(finder.choices.items()) if why != "compiled"}
    if finder.pure:
        overall = f"{PURE_ENV_VAR} is set"
    elif not finder.modules:
        overall = ("not built for this Python (SANDBOX_COMPILE_PYTHON=0, another "
                   "interpreter's build or an older one)")
    else:
        overall = None
    return {"built": len(finder.modules), "compiled": compiled, "source": source,
            "all_source_because": overall}


if __name__ == _THIS_MODULE:  # not when setup.py reads this file for its module list
    install()
