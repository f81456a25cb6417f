"""Which SIMD path the kernels take: one object for the whole package.

The project's explicit SIMD kernels are the float32 GEMMs of the convolutions
(AVX-512: ``pyx/sgemm_avx512.h``; AVX2 + FMA: ``pyx/sgemm_avx2.h``) and the AVX-512
Winograd transforms (``pyx/wino2_avx512.h``, ``pyx/wino4_avx512.h``), each with a
portable path beside it.  This module knows what the CPU supports and which path is
selected:

* ``SANDBOX_ISA=auto|avx512|avx2|portable`` (default ``auto``: the best the CPU
  has).  ``avx512`` runs the project's AVX-512 kernels; ``avx2`` turns them off
  (the float32 products run the project's AVX2 GEMM, the portable Winograd
  transforms run: what a CPU without AVX-512 executes); ``portable`` uses numpy's
  BLAS for the products and is accepted on every CPU (ARM included).  The small
  loops that the compiler cloned for AVX2 (``SB_CLONES``) are picked by the loader
  and give identical results, so they are not part of the choice.
* ``SANDBOX_GEMM=auto|avx512|avx2|blas`` (default ``auto``): the float32 GEMM of the
  convolutions.  ``blas`` keeps numpy's BLAS on any path; ``avx512`` needs the
  ``avx512`` path; ``avx2`` (the AVX2 + FMA kernel) runs on the ``avx512`` and
  ``avx2`` paths of a CPU with AVX2 and FMA.  ``auto`` on the ``avx512`` path takes
  the winner measured by ``sandbox calibrate`` on this machine
  (:mod:`sandbox.runtime.calibration`), else the AVX-512 kernel; on the ``avx2``
  path the AVX2 kernel (BLAS if the build lacks it); on ``portable``, BLAS.

Both variables are read once, at the first :func:`current` call; afterwards
:func:`using` changes the choice for a block of code.  The choice lives in a
:class:`contextvars.ContextVar`, so a ``using`` block in one thread does not
change what another thread runs (the worker pool of
:mod:`sandbox.array._parallel` runs each chunk in its caller's context).  The
array wrappers read :func:`current` at call time and pass the choice to the
kernels as an argument.  Whatever the path, results are bitwise identical for any
thread count; different paths may differ in the last bits (another summation
order inside a product).
"""

from __future__ import annotations

import contextvars
import functools
import os
import platform
import threading
from contextlib import contextmanager
from dataclasses import astuple, dataclass

ISA_ENV_VAR = "SANDBOX_ISA"
GEMM_ENV_VAR = "SANDBOX_GEMM"
ISAS = ("auto", "avx512", "avx2", "portable")
GEMMS = ("auto", "avx512", "avx2", "blas")
#: the AVX-512 subsets a CPU must have for the ``avx512`` path
AVX512_FLAGS = ("avx512f", "avx512bw", "avx512dq", "avx512vl")

__all__ = ["CPUInfo", "Selection", "avx2_gemm_available", "cpu", "current",
           "from_environment", "resolve", "supported_paths", "using"]


@dataclass(frozen=True)
class CPUInfo:
    """What the CPU is and which instruction sets it has (from ``/proc/cpuinfo``)."""

    model: str
    vendor: str | None
    family: int | None
    model_number: int | None
    machine: str
    flags: frozenset

    @property
    def avx512(self) -> bool:
        """AVX-512 F, BW, DQ and VL."""
        return all(f in self.flags for f in AVX512_FLAGS)

    @property
    def avx2(self) -> bool:
        """AVX2 and FMA."""
        return "avx2" in self.flags and "fma" in self.flags

    @property
    def neon(self) -> bool:
        """ARM's Advanced SIMD (NEON)."""
        return "asimd" in self.flags or "neon" in self.flags or \
            self.machine.lower() in ("aarch64", "arm64")

    @property
    def isa(self) -> str:
        """The widest of ``avx512`` (F/BW/DQ/VL), ``avx2`` (+FMA), ``neon``, ``baseline``."""
        if self.avx512:
            return "avx512"
        if self.avx2:
            return "avx2"
        return "neon" if self.neon else "baseline"

    @property
    def simd_sets(self) -> list[str]:
        """The SIMD sets the paths care about, e.g. ``["AVX-512F/BW/DQ/VL", "AVX2+FMA"]``."""
        return [name for name, ok in (("AVX-512F/BW/DQ/VL", self.avx512),
                                      ("AVX2+FMA", self.avx2), ("NEON", self.neon)) if ok]

    def describe(self) -> str:
        """One line: model, family and model number, the SIMD sets."""
        fam = "" if self.family is None else f", family {self.family}"
        num = "" if self.model_number is None else f" model {self.model_number}"
        return (f"{self.model} ({self.machine}{fam}{num}; "
                f"{', '.join(self.simd_sets) or 'no wide SIMD'})")


def _parse_cpuinfo(text: str) -> dict:
    """The first processor's fields of a ``/proc/cpuinfo`` text."""
    fields: dict = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    return fields


def _int(text):
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        return None


def cpu_from_cpuinfo(text: str, machine: str | None = None) -> CPUInfo:
    """:class:`CPUInfo` from a ``/proc/cpuinfo`` text (x86 or ARM)."""
    f = _parse_cpuinfo(text)
    machine = machine or platform.machine()
    flags = frozenset((f.get("flags") or f.get("features") or "").split())
    model = f.get("model name") or f.get("hardware") or f.get("cpu part") or \
        platform.processor() or machine
    return CPUInfo(model=model, vendor=f.get("vendor_id") or f.get("cpu implementer"),
                   family=_int(f.get("cpu family")),
                   model_number=_int(f.get("model")) if "model name" in f else None,
                   machine=machine, flags=flags)


@functools.cache
def cpu() -> CPUInfo:
    """This machine's CPU (read once).  Without ``/proc/cpuinfo`` (not Linux) the
    AVX-512 flags come from the kernels' own run-time check."""
    try:
        with open("/proc/cpuinfo") as fh:
            return cpu_from_cpuinfo(fh.read())
    except OSError:  # pragma: no cover - not Linux
        flags = frozenset(AVX512_FLAGS + ("avx2", "fma")) if _kernels_have_avx512() else \
            frozenset()
        return CPUInfo(platform.processor() or platform.machine(), None, None, None,
                       platform.machine(), flags)


def _kernels_have_avx512() -> bool:
    """The compiled kernels' own check: built with AVX-512 code and the CPU runs it."""
    from .._C import _gemm, _winograd

    return bool(_gemm.available() and _winograd.avx512_available())


@functools.cache
def avx2_gemm_available() -> bool:
    """Whether the project's AVX2 GEMM can run: the CPU has AVX2 and FMA, and the
    kernel's own run-time check agrees."""
    from .._C import _gemm

    return cpu().avx2 and bool(_gemm.avx2_available())


@functools.cache
def supported_paths() -> tuple[str, ...]:
    """The paths this CPU and build can run, best first (``portable`` always)."""
    c = cpu()
    paths = []
    if c.avx512 and _kernels_have_avx512():
        paths.append("avx512")
    if c.avx2:
        paths.append("avx2")
    return (*paths, "portable")


@dataclass(frozen=True)
class Selection:
    """A resolved choice: the path and the convolutions' float32 GEMM.

    Attributes
    ----------
    isa : {"avx512", "avx2", "portable"}
        The path in force.
    gemm : {"avx512", "avx2", "blas"}
        The float32 GEMM of the convolutions: one of the project's kernels or BLAS.
    requested_isa, requested_gemm : str
        What was asked for (``auto`` included), for reports.
    """

    isa: str
    gemm: str
    requested_isa: str = "auto"
    requested_gemm: str = "auto"

    def __post_init__(self):
        # hashed once: a selection is part of the key of every cached conv route and
        # schedule (sandbox.array.conv._tuning.state), looked up several times a layer
        object.__setattr__(self, "_hash", hash(astuple(self)))

    def __hash__(self):
        return self._hash

    def __reduce__(self):  # made again where unpickled: str hashes differ between processes
        return type(self), astuple(self)

    @property
    def winograd_avx512(self) -> bool:
        """Whether the float32 Winograd transforms use their AVX-512 form."""
        return self.isa == "avx512"

    @property
    def gemm_avx512(self) -> bool:
        """Whether float32 convolution products run the project's AVX-512 GEMM."""
        return self.gemm == "avx512"

    @property
    def gemm_own(self) -> bool:
        """Whether float32 convolution products run one of the project's GEMMs (AVX-512
        or AVX2), not BLAS: such products may share their threads inside the kernel."""
        return self.gemm in ("avx512", "avx2")


def _check(value, choices, what):
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise ValueError(f"{what} must be one of {', '.join(choices)}; got {value!r}")
    return value.strip().lower()


def resolve(isa: str = "auto", gemm: str = "auto", *, isa_name: str = "isa",
            gemm_name: str = "gemm") -> Selection:
    """The :class:`Selection` for a requested ``isa`` and ``gemm`` on this CPU.

    Raises
    ------
    ValueError
        An unknown name, a path the CPU (or the build) lacks, ``gemm="avx512"`` off
        the ``avx512`` path, or ``gemm="avx2"`` on the ``portable`` path or without
        the AVX2 kernel; the message names ``isa_name`` / ``gemm_name``.
    """
    isa = _check(isa, ISAS, isa_name)
    gemm = _check(gemm, GEMMS, gemm_name)
    paths = supported_paths()
    if isa == "auto":
        path = paths[0]
    elif isa in paths:
        path = isa
    else:
        raise ValueError(f"{isa_name}={isa}, but this CPU ({cpu().describe()}) cannot run it; "
                         f"it runs {', '.join(paths)} (or auto)")
    if gemm == "avx512" and path != "avx512":
        why = "this CPU has no AVX-512" if "avx512" not in paths else f"{isa_name}={path}"
        raise ValueError(f"{gemm_name}=avx512 needs the avx512 path, but {why} "
                         f"(use auto or blas)")
    if gemm == "avx2" and (path == "portable" or not avx2_gemm_available()):
        why = f"{isa_name}=portable" if path == "portable" else \
            "this CPU (or build) has no AVX2+FMA kernel"
        raise ValueError(f"{gemm_name}=avx2 needs the avx512 or avx2 path of a CPU with "
                         f"AVX2+FMA, but {why} (use auto or blas)")
    if gemm == "blas" or path == "portable":
        chosen = "blas"
    elif gemm == "avx2":
        chosen = "avx2"
    elif path == "avx2":  # auto: the AVX2 kernel where it runs, unless measured slower
        from .calibration import preferred

        chosen = preferred("gemm_avx2") if avx2_gemm_available() else "blas"
    elif gemm == "auto":  # the measured winner on this machine, if calibrated
        from .calibration import preferred

        chosen = preferred("gemm")
    else:
        chosen = "avx512"
    return Selection(path, chosen, isa, gemm)


def from_environment(environ=None) -> Selection:
    """The selection ``$SANDBOX_ISA`` and ``$SANDBOX_GEMM`` ask for (both default ``auto``)."""
    env = os.environ if environ is None else environ
    return resolve(env.get(ISA_ENV_VAR, "").strip() or "auto",
                   env.get(GEMM_ENV_VAR, "").strip() or "auto",
                   isa_name=ISA_ENV_VAR, gemm_name=GEMM_ENV_VAR)


_lock = threading.Lock()
_default: Selection | None = None
_current: contextvars.ContextVar = contextvars.ContextVar("sandbox_simd", default=None)


def default() -> Selection:
    """The selection from the environment, read on the first call."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = from_environment()
    return _default


def current() -> Selection:
    """The selection in force in this context (a :func:`using` block, else the default)."""
    sel = _current.get()
    if sel is not None:
        return sel
    return _default if _default is not None else default()  # read at every kernel call


@contextmanager
def using(isa: str | None = None, gemm: str | None = None):
    """Run a block with another SIMD path or GEMM; restores the previous choice after.

    Parameters
    ----------
    isa : {"auto", "avx512", "avx2", "portable"}, optional
        The path (None keeps the one in force).
    gemm : {"auto", "avx512", "avx2", "blas"}, optional
        The convolutions' float32 GEMM (None keeps the request in force, or ``auto``
        when that request was ``avx512`` and the new path is not, or ``avx2`` and the
        new path is ``portable``).

    Yields
    ------
    Selection
        The choice in force inside the block.

    Raises
    ------
    ValueError
        An unknown name, or a path this CPU lacks (see :func:`resolve`).

    Examples
    --------
    >>> from sandbox.runtime import simd
    >>> with simd.using(isa="portable") as sel:
    ...     sel.gemm
    'blas'
    """
    base = current()
    if isa is None:
        isa = base.requested_isa
    if gemm is None:
        gemm = base.requested_gemm
        if gemm == "avx512" and isa not in ("avx512", "auto") or \
                gemm == "avx2" and isa == "portable":
            gemm = "auto"
    token = _current.set(resolve(isa, gemm))
    try:
        yield _current.get()
    finally:
        _current.reset(token)
