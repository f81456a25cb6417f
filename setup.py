"""Build script: compiles every ``pyx/**/*.pyx`` into ``sandbox._C.<stem>``.

Kernel sources may sit in subfolders of ``pyx/`` (``pyx/winograd/``); the module
name is the file's stem, so stems must be unique.  Every folder holding a
``.pyx``, ``.pxd``, ``.pxi`` or ``.h`` is on the C include and Cython include paths, and
every header is a dependency of every kernel.  The Cython compiler directives
come from :func:`compiler_directives` alone: no ``.pyx`` sets any in its header
(``tests/project/test_kernel_directives.py`` checks both).

OpenMP is detected by compiling and linking a tiny program.  Without it the
build warns and the kernels run serially (``sandbox info`` says so); set
``SANDBOX_REQUIRE_OPENMP=1`` to turn that warning into an error.

Environment switches
--------------------
SANDBOX_DEBUG=1            bounds, initialisation and None checks on, -O0 -g
SANDBOX_REQUIRE_OPENMP=1   fail the build when OpenMP is not available
SANDBOX_ANNOTATE=1         write Cython's HTML annotation next to each .pyx
SANDBOX_COMPILE_PYTHON=0   leave the package's Python modules uncompiled

The package's own Python modules (the layers above the kernels: ``sandbox/runtime/compiled.py``
lists the packages) are compiled too, from the same ``.py`` files, into
``sandbox/_C/compiled/``, with a manifest of the sources' SHA-256; the import hook in
``sandbox/runtime/compiled.py`` loads an extension only while its source is unchanged.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent.resolve()
DEBUG = os.environ.get("SANDBOX_DEBUG", "0") not in ("", "0")
REQUIRE_OPENMP = os.environ.get("SANDBOX_REQUIRE_OPENMP", "0") not in ("", "0")
ANNOTATE = os.environ.get("SANDBOX_ANNOTATE", "0") not in ("", "0")
COMPILE_PYTHON = os.environ.get("SANDBOX_COMPILE_PYTHON", "1") not in ("", "0")

OPENMP_TEST_PROGRAM = textwrap.dedent(
    """
    #include <omp.h>
    #include <stdio.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+:n)
        n += 1;
        printf("%d", n > 0 && omp_get_max_threads() > 0);
        return 0;
    }
    """
)


def _compiler_command():
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return cc.split()


def openmp_flags():
    """Return (compile_args, link_args) for OpenMP, or None if it does not work."""
    if sys.platform == "darwin":
        candidates = [(["-Xpreprocessor", "-fopenmp"], ["-lomp"])]
    elif sys.platform == "win32":
        candidates = [(["/openmp"], [])]
    else:
        candidates = [(["-fopenmp"], ["-fopenmp"])]
    cc = _compiler_command()
    for compile_args, link_args in candidates:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "omp_test.c"
            exe = Path(tmp) / "omp_test"
            src.write_text(OPENMP_TEST_PROGRAM)
            try:
                subprocess.run(
                    [*cc, *compile_args, str(src), "-o", str(exe), *link_args],
                    check=True,
                    capture_output=True,
                )
                out = subprocess.run([str(exe)], check=True, capture_output=True, text=True)
            except (OSError, subprocess.CalledProcessError):
                continue
            if out.stdout.strip() == "1":
                return compile_args, link_args
    return None


PYX = HERE / "pyx"


def compiler_directives(debug: bool) -> dict:
    """The Cython directives of every kernel: the one place they are set.

    Release: no bounds, initialisation or None checks.  Debug (``SANDBOX_DEBUG=1``):
    those checks on, so an out-of-range index raises IndexError.  In both, negative
    indices do not wrap and division is C's, so a debug build computes the same
    thing as a release one, only checked.
    """
    return {
        "language_level": 3,
        "boundscheck": debug,
        "initializedcheck": debug,
        "nonecheck": debug,
        "wraparound": False,
        "cdivision": True,
        "embedsignature": True,
    }


def kernel_sources() -> list:
    """Every ``pyx/**/*.pyx``; raises if two share a stem (the module name)."""
    sources = sorted(PYX.rglob("*.pyx"))
    stems = [p.stem for p in sources]
    dupes = sorted({s for s in stems if stems.count(s) > 1})
    if dupes:
        raise RuntimeError(f"kernel module names must be unique; repeated stems: {dupes}")
    return sources


def include_dirs() -> list:
    """``pyx`` and each subfolder with kernel sources or headers, relative to the repo."""
    dirs = {p.parent for ext in ("*.pyx", "*.pxd", "*.pxi", "*.h") for p in PYX.rglob(ext)}
    dirs.add(PYX)
    return sorted(str(d.relative_to(HERE)) for d in dirs)


def extensions():
    flags = openmp_flags()
    if flags is None:
        message = (
            "OpenMP was not found: the sandbox kernels will be built SERIAL. "
            "Install a compiler with OpenMP support (e.g. gcc) for parallel kernels."
        )
        if REQUIRE_OPENMP:
            raise RuntimeError(message)
        warnings.warn(message, stacklevel=1)
        omp_compile, omp_link = [], []
    else:
        omp_compile, omp_link = flags

    if sys.platform == "win32":
        opt = ["/Od"] if DEBUG else ["/O2"]
    else:
        opt = ["-O0", "-g"] if DEBUG else ["-O3"]

    # Per-kernel flags.  -fno-trapping-math lets gcc/clang turn the masked
    # multiplies of the fused batch-norm + ReLU backward (``g * (y > 0)``) into
    # vector compares and ANDs instead of a branch per element (4-8x faster on
    # ReLU masks); results are the same, only floating-point trap flags change.
    # -ffp-contract=off keeps the Adam kernel's, batch norm's per-channel scalars' and
    # the cross-entropy gradient's rounding identical to numpy's separate multiply and
    # add (no fused multiply-add),
    # and grid sampling's and the resize's explicit AVX-512 loops identical to their
    # scalar ones; the depthwise rows' vectors the same on every target.
    extra = {} if sys.platform == "win32" else {"_norm": ["-fno-trapping-math",
                                                          "-ffp-contract=off"],
                                                "_elementwise": ["-fno-trapping-math"],
                                                "_activation": ["-fno-trapping-math",
                                                                "-ffp-contract=off"],
                                                "_softmax": ["-fno-trapping-math",
                                                             "-ffp-contract=off"],
                                                "_loss": ["-fno-trapping-math",
                                                          "-ffp-contract=off"],
                                                "_pool": ["-fno-trapping-math"],
                                                "_pool3d": ["-fno-trapping-math"],
                                                "_optim": ["-ffp-contract=off", "-fno-math-errno"],
                                                "_grid_sample": ["-ffp-contract=off"],
                                                "_depthwise": ["-ffp-contract=off"],
                                                "_resample": ["-ffp-contract=off"]}

    macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
    sources = kernel_sources()
    dirs = include_dirs()
    headers = [str(h.relative_to(HERE)) for h in sorted(PYX.rglob("*.h"))]
    exts = []
    for pyx in sources:
        exts.append(
            Extension(
                f"sandbox._C.{pyx.stem}",
                sources=[str(pyx.relative_to(HERE))],
                include_dirs=[np.get_include(), *dirs],
                depends=headers,  # an edited header rebuilds every kernel
                define_macros=macros,
                extra_compile_args=[*opt, *omp_compile, *extra.get(pyx.stem, [])],
                extra_link_args=omp_link,
            )
        )
    return cythonize(
        exts,
        compiler_directives=compiler_directives(DEBUG),
        include_path=dirs,
        annotate=ANNOTATE,
    )


def _compiled_layer():
    """``sandbox/runtime/compiled.py``, loaded by path: the one list of compiled packages and
    the digest its import hook checks (the package itself is not importable here)."""
    spec = importlib.util.spec_from_file_location("_sandbox_compiled", HERE / "sandbox" /
                                                  "runtime" / "compiled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COMPILED = _compiled_layer()
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def python_extensions():
    """The compiled Python modules, each named as the module it compiles.  Plain
    Python semantics: type annotations are not read as C types."""
    if not COMPILE_PYTHON:
        return []
    # -O2 without debug symbols: -O3 -g (Python's flags) took 1.8x the compile time
    # for ~6x the file size (gcc, sandbox/autograd/_engine.py)
    flags = [] if sys.platform == "win32" else ["-O2", "-g0"]
    exts = [Extension(name, sources=[os.path.relpath(COMPILED.source_path(name), HERE)],
                      extra_compile_args=flags)
            for name in COMPILED.compiled_modules()]
    return cythonize(exts, compiler_directives={"language_level": 3,
                                                "annotation_typing": False},
                     build_dir=str(HERE / "build" / "compiled-python"), quiet=True,
                     nthreads=os.cpu_count() or 1)


def _is_python(ext_name: str) -> bool:
    """Whether an extension of this build compiles a Python module (the kernels are
    ``sandbox._C.*``)."""
    return not ext_name.startswith("sandbox._C.")


class BuildExt(build_ext):
    """setuptools' build_ext, with the compiled Python modules written to
    ``sandbox/_C/compiled/`` (not beside their sources, where Python's own finder
    would load them) with their manifest, and the extensions built in parallel."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def _compiled_path(self, root, name):
        return os.path.join(root, "sandbox", "_C", "compiled", name + EXT_SUFFIX)

    def get_ext_fullpath(self, ext_name):
        if _is_python(ext_name):
            return self._compiled_path(HERE if self.inplace else self.build_lib, ext_name)
        return super().get_ext_fullpath(ext_name)

    def _get_inplace_equivalent(self, build_py, ext):  # setuptools' copy to the source tree
        if _is_python(ext.name):
            inplace = self._compiled_path(HERE, ext.name)
            self.mkpath(os.path.dirname(inplace))
            return inplace, self._compiled_path(self.build_lib, ext.name)
        return super()._get_inplace_equivalent(build_py, ext)

    def build_extensions(self):
        super().build_extensions()
        self._write_manifest(self.build_lib)

    def copy_extensions_to_source(self):
        super().copy_extensions_to_source()
        self._write_manifest(HERE)

    def _write_manifest(self, root):
        """Each compiled module's extension file and its source's SHA-256, the check
        of the import hook; extensions of modules no longer compiled are removed."""
        directory = Path(root) / "sandbox" / "_C" / "compiled"
        directory.mkdir(parents=True, exist_ok=True)
        modules = {}
        for name in sorted(ext.name for ext in self.extensions if _is_python(ext.name)):
            modules[name] = {"file": name + EXT_SUFFIX,
                             "sha256": COMPILED.source_digest(COMPILED.source_path(name))}
        for old in directory.glob("*" + EXT_SUFFIX):
            if old.name[: -len(EXT_SUFFIX)] not in modules:
                old.unlink()
        manifest = {"python": sys.implementation.cache_tag, "modules": modules}
        (directory / COMPILED.MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    # Keep the build tree out of stale states when switching debug on/off.
    if DEBUG and (HERE / "build").exists():
        shutil.rmtree(HERE / "build", ignore_errors=True)
    setup(ext_modules=extensions() + python_extensions(), cmdclass={"build_ext": BuildExt})
