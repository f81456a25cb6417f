"""Measured choices between kernels, made once per machine and kept in a small file.

Some choices depend on the microarchitecture rather than on the instruction set,
so a flag in ``/proc/cpuinfo`` cannot make them:

* ``gemm``: the convolutions' float32 products on the project's AVX-512 kernel or on
  numpy's BLAS.  OpenBLAS may run Haswell kernels on an AVX-512 CPU
  (``OPENBLAS_CORETYPE``), and a CPU whose AVX-512 units are 256 bits wide (Zen 4)
  gains less from 512-bit FMAs than one with full-width units (Zen 5, Intel server
  cores).
* ``grid_gathers``: the 2-D float32 grid sampling's AVX-512 pass, which reads the
  input with gather instructions, or the portable loops.  Gathers are fast on Zen 5
  and Intel's AVX-512 cores and much slower on others (microcoded on Zen 4).

``sandbox calibrate`` (:func:`calibrate`) times both candidates of each choice on
the workloads the UNet runs (1 thread, interleaved, medians) and stores the winners
in ``calibration.json`` under :func:`cache_dir`, keyed by the machine
(:func:`machine_key`: CPU, flags, BLAS and its core type, sandbox version), so a home
directory shared by different machines keeps one entry each.  Without an entry for
this machine the defaults hold: the AVX-512 kernels wherever the CPU has them.
``sandbox info`` says which.  Every candidate is bitwise reproducible for any thread
count; the two candidates of ``gemm`` may differ in the last bits (another
summation order), those of ``grid_gathers`` never do.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["Calibration", "cache_dir", "cache_file", "calibrate", "load", "machine_key",
           "preferred", "save"]

CACHE_ENV_VAR = "SANDBOX_CACHE_DIR"
#: a candidate replaces the default only when it is at least this much faster
MARGIN = 1.10
DEFAULTS = {"gemm": "avx512", "grid_gathers": "avx512"}


@dataclass
class Calibration:
    """The winners on one machine, with the medians (ms) they were chosen by."""

    key: str
    choices: dict
    timings: dict = field(default_factory=dict)
    when: str = ""
    cpu: str = ""


def cache_dir() -> Path:
    """``$SANDBOX_CACHE_DIR``, else ``$XDG_CACHE_HOME/sandbox``, else ``~/.cache/sandbox``."""
    if os.environ.get(CACHE_ENV_VAR):
        return Path(os.environ[CACHE_ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "sandbox"


def cache_file() -> Path:
    """The calibration file (it may not exist)."""
    return cache_dir() / "calibration.json"


def _blas_core() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - a core dependency
        return "?"
    libs = [f"{d.get('internal_api')}-{d.get('version')}-{d.get('architecture')}"
            for d in threadpool_info() if d.get("user_api") == "blas"]
    return ",".join(libs) or "none"


def machine_key() -> str:
    """A short digest of what the choices depend on: the CPU (model, family, model
    number, SIMD flags), numpy's BLAS with its core type, and the sandbox version."""
    from .._version import __version__
    from .simd import cpu

    c = cpu()
    parts = [c.model, str(c.vendor), str(c.family), str(c.model_number), c.machine,
             ",".join(sorted(f for f in c.flags if f.startswith(("avx", "fma", "asimd")))),
             _blas_core(), __version__]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


_loaded: dict = {}


def load(path: Path | None = None) -> Calibration | None:
    """This machine's entry of the calibration file, or None (no file, no entry, or an
    unreadable file: the defaults hold)."""
    path = cache_file() if path is None else path
    cache_key = str(path)  # read once per process (save() forgets it)
    if cache_key not in _loaded:
        entry = _read(path).get(machine_key())
        try:
            _loaded[cache_key] = Calibration(**entry) if isinstance(entry, dict) else None
        except TypeError:  # a file of another layout
            _loaded[cache_key] = None
    return _loaded[cache_key]


def preferred(choice: str) -> str:
    """The calibrated winner of ``choice`` (``gemm``, ``grid_gathers``) on this machine,
    else its default (``avx512``)."""
    cal = load()
    value = cal.choices.get(choice) if cal is not None else None
    return value if value in ("avx512", "blas", "portable") else DEFAULTS[choice]


def save(cal: Calibration, path: Path | None = None) -> Path:
    """Write ``cal`` as this machine's entry (other machines' entries are kept); the file
    is replaced atomically, so a reader never sees half of it."""
    path = cache_file() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _read(path)
    data[cal.key] = asdict(cal)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    _loaded.clear()
    return path


def _median_ms(calls: dict, repeat: int, timer) -> dict:
    """Interleaved medians (ms) of each call, after one untimed call each."""
    for f in calls.values():
        f()
    times = {name: [] for name in calls}
    for _ in range(repeat):
        for name, f in calls.items():
            t = timer()
            f()
            times[name].append(timer() - t)
    return {name: 1e3 * statistics.median(v) for name, v in times.items()}


# The convolutions' products of a classic UNet step (batch 8, 64x64): im2col GEMMs
# (out channels x in channels * 9 x pixels) and Winograd point products.
GEMM_SHAPES = ((16, 27, 32768), (32, 144, 8192), (64, 288, 2048), (128, 576, 512),
               (64, 64, 1152))


def _gemm_calls():
    import numpy as np

    from ..array import _gemm
    from .simd import using

    rng = np.random.default_rng(0)
    ops = [(rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32), np.empty((m, n), np.float32))
           for m, k, n in GEMM_SHAPES]

    def run(gemm):
        def call():
            with using(gemm=gemm):
                for a, b, out in ops:
                    _gemm.matmul(a, b, out)
        return call

    return {"avx512": run("avx512"), "blas": run("blas")}


def _grid_calls():
    import numpy as np

    from .._C import _grid_sample
    from ..array.grid_sample import _dispatch

    rng = np.random.default_rng(1)
    n, c, h, w = 2, 4, 64, 64
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    axes = [((2 * np.arange(s) + 1) / s - 1) for s in (h, w)]
    gy_, gx_ = np.meshgrid(*axes, indexing="ij")
    grid = np.stack([gx_ + 0.05 * np.sin(3 * gy_), gy_ + 0.05 * np.cos(3 * gx_)], -1)
    grid = np.ascontiguousarray(np.broadcast_to(grid, (n, h, w, 2)), dtype=np.float32)
    out = np.empty((n, c, h, w), np.float32)
    gyo = rng.standard_normal((n, c, h, w), dtype=np.float32)
    slab, nslabs = _dispatch.push_slabs(x)
    rows = _dispatch.slab_rows(h, slab, 2)
    p = h * w

    def run(isa):
        def call():
            _grid_sample.forward(x.reshape(-1), grid.reshape(-1), out.reshape(-1), n, c, 1, h, w,
                                 p, 2, 1, 0, 0, 1, isa)
            gx, gg = np.zeros_like(x), np.zeros_like(grid)
            keys, order = np.empty(n * p, np.intp), np.empty(n * p, np.intp)
            starts, cursor = np.empty(n * (nslabs + 1), np.intp), np.empty(n * nslabs, np.intp)
            _grid_sample.backward(gyo.reshape(-1), x.reshape(-1), grid.reshape(-1),
                                  gx.reshape(-1), gg.reshape(-1), keys, order, starts, cursor,
                                  n, c, 1, h, w, p, 2, 1, 0, 0, slab, nslabs, 1, rows, isa)
        return call

    return {"avx512": run(2), "portable": run(0)}


def _winner(medians: dict, default: str) -> str:
    best = min(medians, key=medians.get)
    return best if medians[default] > MARGIN * medians[best] else default


def calibrate(repeat: int = 25, timer=time.perf_counter, write: bool = True) -> Calibration:
    """Time the candidates of every choice this machine has, pick the winners, and (with
    ``write``) store them as this machine's entry of :func:`cache_file`.

    A choice whose AVX-512 candidate the CPU cannot run keeps its portable one and is
    not timed.  A candidate replaces the default only when it is at least ``MARGIN``
    times faster.  Runs on 1 thread, for about a second.  The choice takes effect in
    processes started afterwards (a running one keeps what it read first).
    """
    from .._C import _gemm, _grid_sample
    from .simd import cpu, supported_paths
    from .threads import get_num_threads, set_num_threads

    choices, timings = {}, {}
    previous = get_num_threads()
    set_num_threads(1)
    try:
        if "avx512" in supported_paths() and _gemm.available():
            timings["gemm"] = _median_ms(_gemm_calls(), repeat, timer)
            choices["gemm"] = _winner(timings["gemm"], "avx512")
        if "avx512" in supported_paths() and _grid_sample.isa_available() == 2:
            timings["grid_gathers"] = _median_ms(_grid_calls(), repeat, timer)
            choices["grid_gathers"] = _winner(timings["grid_gathers"], "avx512")
    finally:
        set_num_threads(previous)
    cal = Calibration(key=machine_key(), choices=choices, timings=timings,
                      when=datetime.datetime.now().isoformat(timespec="seconds"),
                      cpu=cpu().describe())
    if write:
        save(cal)
    return cal
