"""Measured choices between kernels, made once per machine and kept in a small file.

Some choices depend on the microarchitecture rather than on the instruction set,
so a flag in ``/proc/cpuinfo`` cannot make them:

* ``gemm``: the convolutions' float32 products on the project's AVX-512 kernel or on
  numpy's BLAS.  OpenBLAS may run Haswell kernels on an AVX-512 CPU
  (``OPENBLAS_CORETYPE``), and a CPU whose AVX-512 units are 256 bits wide (Zen 4)
  gains less from 512-bit FMAs than one with full-width units (Zen 5, Intel server
  cores).
* ``gemm_avx2``: the same products on the ``avx2`` path (a CPU without AVX-512, or
  ``SANDBOX_ISA=avx2``): the project's AVX2+FMA kernel or BLAS.  Some AVX2 BLAS builds
  beat the kernel product for product, but the project's kernels share a layer's
  products among the threads inside one parallel region where BLAS calls go through
  the worker pool, so both GEMM choices are timed on convolution layers at the
  process's thread count (on the AMD EPYC family 25 VM, OpenBLAS's SkylakeX kernels
  matched the AVX-512 kernel on a 1-thread product and were 35 % slower on the
  layers at 2 threads).
* ``grid_gathers``: the 2-D float32 grid sampling's AVX-512 pass, which reads the
  input with gather instructions, or the portable loops.  Gathers are fast on Zen 5
  and Intel's AVX-512 cores and slower on others (Zen 4), where the portable loops may
  win (they did not on the AMD EPYC family 25 VM: 0.33 against 0.46 ms).

``sandbox calibrate`` (:func:`sandbox.bench.calibrate.calibrate`) times both
candidates of each choice on the workloads the UNet runs (interleaved, medians; the
convolutions at the process's thread count, the gathers on 1 thread) and stores the
winners with :func:`save` in ``calibration.json`` under :func:`cache_dir`, keyed by the
machine (:func:`machine_key`: CPU, flags, BLAS and its core type, sandbox version), so a home
directory shared by different machines keeps one entry each.  Without an entry for
this machine the defaults hold: the AVX-512 kernels wherever the CPU has them.
``sandbox info`` says which.  Every candidate is bitwise reproducible for any thread
count; the two candidates of ``gemm`` may differ in the last bits (another
summation order), those of ``grid_gathers`` never do.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["Calibration", "cache_dir", "cache_file", "load", "machine_key", "preferred",
           "save"]

CACHE_ENV_VAR = "SANDBOX_CACHE_DIR"
DEFAULTS = {"gemm": "avx512", "gemm_avx2": "avx2", "grid_gathers": "avx512"}
#: the candidates each choice may name
CANDIDATES = {"gemm": ("avx512", "blas"), "gemm_avx2": ("avx2", "blas"),
              "grid_gathers": ("avx512", "portable")}


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
    """The calibrated winner of ``choice`` (``gemm``, ``gemm_avx2``, ``grid_gathers``) on
    this machine, else its default (:data:`DEFAULTS`: the project's kernel).  Read once
    per process (kernels ask on every call)."""
    key = ("preferred", choice)
    if key not in _loaded:
        cal = load()
        value = cal.choices.get(choice) if cal is not None else None
        _loaded[key] = value if value in CANDIDATES[choice] else DEFAULTS[choice]
    return _loaded[key]


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
