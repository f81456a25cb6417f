"""An older build of one of the project's extension modules, loaded beside the one in
use, so that a kernel change is timed call by call in one process (the in-process A/B
scripts of ``benchmarks/``)."""

from __future__ import annotations

import glob
import importlib.util
import os
import statistics

import numpy as np


def load_extension(path: str, name: str | None = None):
    """The extension module in the file ``path`` (a build of a ``sandbox._C`` module,
    e.g. an older commit's), loaded under its own name and not registered in
    ``sys.modules``: the module in use stays as it is.

    Parameters
    ----------
    path : str
        The ``.so`` (or ``.pyd``) file.
    name : str, optional
        The module's name, whose init function the file exports (``_norm``); by default
        the file's name up to its first dot (``_norm.cpython-311-x86_64-linux-gnu.so``),
        which a renamed copy of a build does not keep.

    Returns
    -------
    module
    """
    name = name or os.path.basename(path).split(".", 1)[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path!r} is not an extension module file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_from_folder(folder: str, stem: str, script: str):
    """The build of extension ``stem`` (``_grid_sample``) kept in ``folder`` (a copy of
    ``sandbox/_C/<stem>*.so`` made before rebuilding), loaded by :func:`load_extension`;
    SystemExit naming ``script`` where the folder holds none."""
    paths = glob.glob(os.path.join(folder, f"{stem}*.so"))
    if not paths:
        raise SystemExit(f"{script}: no {stem}*.so in {folder!r}; copy the previous "
                         f"build's sandbox/_C/{stem}*.so there")
    return load_extension(paths[0], stem)


def same_bits(a, b) -> bool:
    """Whether two results are the same bits (arrays of one dtype, or both None)."""
    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _flat(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


def compare_builds(use, builds: dict, calls_of: dict, rounds: int, calls: int) -> str:
    """One case of an in-process A/B of two builds: ``use(build)`` routes the wrapper
    through a build (``builds``: ``{"previous": ..., "new": ...}``); every call of
    ``calls_of`` (name -> function, returning an array or a tuple of them) is run on both
    and their bits compared, then timed in ``rounds`` interleaved rounds (the order of the
    builds flipping every round), each a block of ``calls`` calls after an untimed one.
    The new build is in use afterwards.  Returns the line ``name prev -> new (ratio)``
    per call (microseconds, medians; ratio: the median of the rounds' new / previous)
    and ``same bits`` or ``BITS DIFFER``."""
    from ._timing import _timed_cpu

    times = {(b, c): [] for b in builds for c in calls_of}
    try:
        results = {}
        for name, build in builds.items():
            use(build)
            results[name] = [r for fn in calls_of.values() for r in _flat(fn())]
        same = all(same_bits(a, b)
                   for a, b in zip(results["previous"], results["new"], strict=True))
        for r in range(rounds):
            for name in (list(builds) if r % 2 == 0 else list(builds)[::-1]):
                use(builds[name])
                for call, fn in calls_of.items():
                    fn()  # untimed: the other build's call ran before
                    _timed_cpu(fn, times[name, call], [], calls)  # seconds per call
    finally:
        use(builds["new"])
    line = []
    for call in calls_of:
        prev, new = times["previous", call], times["new", call]
        ratio = statistics.median(n / p for n, p in zip(new, prev, strict=True))
        line.append(f"{call} {1e6 * statistics.median(prev):7.0f} -> "
                    f"{1e6 * statistics.median(new):7.0f} ({ratio:4.2f})")
    line.append("same bits" if same else "BITS DIFFER")
    return "   ".join(line)
