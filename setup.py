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
"""

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

HERE = Path(__file__).parent.resolve()
DEBUG = os.environ.get("SANDBOX_DEBUG", "0") not in ("", "0")
REQUIRE_OPENMP = os.environ.get("SANDBOX_REQUIRE_OPENMP", "0") not in ("", "0")
ANNOTATE = os.environ.get("SANDBOX_ANNOTATE", "0") not in ("", "0")

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


if __name__ == "__main__":
    # Keep the build tree out of stale states when switching debug on/off.
    if DEBUG and (HERE / "build").exists():
        shutil.rmtree(HERE / "build", ignore_errors=True)
    setup(ext_modules=extensions())
