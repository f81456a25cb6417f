"""Kernel build rules: directives come from setup.py alone, and a debug build checks.

The probe test compiles ONE tiny kernel (it cimports the shared ``fused.pxd``) twice
into a temporary folder, with ``setup.py``'s own ``compiler_directives()`` for a
debug and a release build: the debug module raises IndexError on an out-of-range
index, the release one reads past the view without a check.  A whole debug build of
the project is not needed for that (it takes minutes); this takes seconds.
"""

import importlib.util
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
PYX = ROOT / "pyx"
KERNELS = sorted(PYX.rglob("*.pyx"))


def _setup_module():
    spec = importlib.util.spec_from_file_location("sandbox_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() itself runs only under __main__
    return module


def test_no_kernel_sets_directives_and_each_states_the_contract():
    assert len(KERNELS) >= 12
    comments = set()
    for path in KERNELS:
        text = path.read_text()
        assert not re.search(r"^#\s*cython:", text, re.M), f"{path.name} sets directives"
        assert not re.search(r"@cython\.(boundscheck|wraparound|cdivision|initializedcheck)",
                             text), f"{path.name} sets directives on a function"
        head = text.splitlines()[:4]
        assert head[0].startswith("# Directives: none in this file"), path.name
        comments.add("\n".join(head))
    assert len(comments) == 1  # the same words in every file


def test_setup_finds_every_kernel_and_names_modules_by_stem():
    setup = _setup_module()
    sources = setup.kernel_sources()
    assert sources == KERNELS
    stems = [p.stem for p in sources]
    assert len(set(stems)) == len(stems)
    assert {"_winograd", "_winograd_fused", "_winograd_weights"} <= set(stems)
    assert all(p.parent == PYX / "winograd" for p in sources if p.stem.startswith("_winograd"))
    assert {"pyx", "pyx/winograd"} <= set(setup.include_dirs())
    for stem in stems:  # the in-place build put each module where the wrappers import it
        assert importlib.util.find_spec(f"sandbox._C.{stem}") is not None, stem


def test_directives_differ_only_in_the_checks():
    setup = _setup_module()
    debug, release = setup.compiler_directives(True), setup.compiler_directives(False)
    assert debug["boundscheck"] and debug["initializedcheck"] and debug["nonecheck"]
    assert not (release["boundscheck"] or release["initializedcheck"] or release["nonecheck"])
    for same in ("wraparound", "cdivision", "language_level"):  # same arithmetic in both
        assert debug[same] == release[same]
    assert {k for k in debug if debug[k] != release[k]} == {
        "boundscheck", "initializedcheck", "nonecheck"}


PROBE = textwrap.dedent(
    """
    from fused cimport real

    def read(const real[::1] x, Py_ssize_t i):
        return x[i]
    """
)

BUILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from Cython.Build import cythonize
    from setuptools import Extension, setup

    sys.path.insert(0, {root!r})
    import importlib.util
    spec = importlib.util.spec_from_file_location("sandbox_setup", {setup!r})
    sandbox_setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sandbox_setup)
    debug = sys.argv.pop(1) == "debug"
    name = "probe_debug" if debug else "probe_release"
    ext = Extension(name, ["probe.pyx"], include_dirs=[np.get_include(), {pyx!r}],
                    extra_compile_args=["-O0"])
    setup(ext_modules=cythonize([ext], include_path=[{pyx!r}], quiet=True,
                                compiler_directives=sandbox_setup.compiler_directives(debug)),
          script_args=["build_ext", "--inplace"])
    """
)


def _compiler():
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(cc)


def _build_probe(tmp_path, kind):
    (tmp_path / "probe.pyx").write_text(PROBE)
    (tmp_path / "build_probe.py").write_text(
        BUILD.format(root=str(ROOT), setup=str(ROOT / "setup.py"), pyx=str(PYX)))
    subprocess.run([sys.executable, "build_probe.py", kind], cwd=tmp_path, check=True,
                   capture_output=True, timeout=300)
    name = f"probe_{kind}"
    (built,) = tmp_path.glob(f"{name}*.so") or tmp_path.glob(f"{name}*.pyd")
    spec = importlib.util.spec_from_file_location(name, built)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.skipif(_compiler() is None, reason="no C compiler")
def test_a_debug_build_raises_on_an_out_of_range_index(tmp_path):
    base = np.arange(10.0)
    view = base[:4]  # reading past it stays inside base's memory: safe without checks
    debug = _build_probe(tmp_path, "debug")
    assert debug.read(view, 3) == 3.0
    with pytest.raises(IndexError):
        debug.read(view, 4)
    with pytest.raises(IndexError):
        debug.read(view, -1)  # no wraparound: a negative index is out of range too
    release = _build_probe(tmp_path, "release")
    assert release.read(view, 3) == 3.0
    assert release.read(view, 5) == 5.0  # unchecked: it read base[5]


@pytest.mark.slow
def test_the_real_kernels_get_the_checks_of_a_debug_build(tmp_path):
    # The bug this guards against: a .pyx header turning the checks off again, so that
    # SANDBOX_DEBUG=1 left the conv, pool and Winograd kernels unchecked.  Cythonizing
    # (no C compiler needed) one kernel with each directive set shows what a build gets.
    from Cython.Build import cythonize
    from setuptools import Extension

    setup = _setup_module()
    checks = {}
    for debug in (True, False):
        build = tmp_path / ("debug" if debug else "release")
        ext = Extension("_pool", [str(PYX / "_pool.pyx")])
        cythonize([ext], build_dir=str(build), quiet=True,
                  include_path=[str(ROOT / d) for d in setup.include_dirs()],
                  force=True, compiler_directives=setup.compiler_directives(debug))
        (c_file,) = build.rglob("_pool.c")
        checks[debug] = c_file.read_text().count("__Pyx_RaiseBufferIndexError")
    assert checks[True] > 10 and checks[False] == 0, checks
