"""Option validation and output-size / scale rules for :mod:`sandbox.resample`.

Everything a user can get wrong is checked here, once, so the kernels never
validate.  The rules follow ``torch.nn.functional.interpolate`` (PyTorch 2.13),
see docs/design.md §2:

* exactly one of ``size`` / ``scale_factor``; ``recompute_scale_factor=True``
  only with ``scale_factor``;
* output size per axis is ``floor(in * scale_factor)``;
* unless recomputed, the kernel coordinate step is ``1 / scale_factor``
  (``area`` always uses ``in / out``, as PyTorch forces the recompute there);
* ``align_corners`` must stay ``None`` for nearest, nearest-exact and area;
* ``antialias=True`` only for the filter modes;
* a request whose arrays and weight tables would exceed the memory limit is
  refused before anything is allocated (:mod:`sandbox.runtime.memory`).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from ...runtime.memory import check_memory
from .._validate import FLOAT_DTYPES, PlanCache

# Public mode name -> canonical mode used by the weight tables.
MODE_ALIASES = {
    "nearest": "nearest",
    "nearest-exact": "nearest-exact",
    "linear": "linear",
    "bilinear": "linear",
    "trilinear": "linear",
    "bicubic": "bicubic",
    "cubic": "cubic",
    "lanczos3": "lanczos3",
    "lanczos5": "lanczos5",
    "lanczos": "lanczos3",  # PyTorch's name: requires antialias=True, no align_corners
    "area": "area",
}
MODES = tuple(MODE_ALIASES)

NO_ALIGN_CORNERS = ("nearest", "nearest-exact", "area")
ANTIALIAS_MODES = ("linear", "bicubic", "cubic", "lanczos3", "lanczos5")
_ANTIALIAS_NAMES = "linear | bilinear | trilinear | bicubic | cubic | lanczos | lanczos3 | lanczos5"
_ALIGN_NAMES = "linear | bilinear | trilinear | bicubic | cubic | lanczos3 | lanczos5"

_LAYOUTS = {3: "(N, C, L)", 4: "(N, C, H, W)", 5: "(N, C, D, H, W)"}


class Plan(NamedTuple):
    """A validated resampling request (per spatial axis: in, out, scale_factor)."""

    mode: str  # canonical mode
    in_sizes: tuple
    out_sizes: tuple
    scale_factors: tuple  # per axis: the user's factor, or None (size given / recomputed)
    align_corners: bool
    antialias: bool


def check_array(x, name: str) -> np.ndarray:
    """Type/dtype/ndim checks shared by the forward input and the gradient."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must have dtype float32 or float64, got {x.dtype} "
            "(cast integer/bool/complex/float16 data with .astype(np.float32) first)"
        )
    if x.ndim not in _LAYOUTS:
        raise ValueError(
            f"{name} must have 3, 4 or 5 dimensions {', '.join(_LAYOUTS.values())}; "
            f"got shape {x.shape}"
        )
    return x


def _check_mode(mode, antialias, align_corners) -> str:
    if not isinstance(mode, str) or mode not in MODE_ALIASES:
        raise ValueError(f"mode must be one of {' | '.join(MODES)}; got {mode!r}")
    if not isinstance(antialias, bool | np.bool_):
        raise TypeError(f"antialias must be a bool, got {antialias!r}")
    if align_corners is not None and not isinstance(align_corners, bool | np.bool_):
        raise TypeError(f"align_corners must be None or a bool, got {align_corners!r}")
    canon = MODE_ALIASES[mode]
    if align_corners is not None and canon in NO_ALIGN_CORNERS:
        raise ValueError(
            f"align_corners option can only be set with the interpolating modes: "
            f"{_ALIGN_NAMES}; got mode={mode!r} (leave align_corners=None)"
        )
    if antialias and canon not in ANTIALIAS_MODES:
        raise ValueError(
            f"antialias=True is only supported for the modes {_ANTIALIAS_NAMES}; got mode={mode!r}"
        )
    if mode == "lanczos":
        # PyTorch's 'lanczos' exists only as the antialiased 2-D filter.
        if not antialias:
            raise ValueError(
                "mode='lanczos' (PyTorch's name) requires antialias=True; "
                "use mode='lanczos3' for the non-antialiased Lanczos3 interpolation"
            )
        if align_corners:
            raise ValueError(
                "mode='lanczos' does not support align_corners=True; "
                "use mode='lanczos3' to combine Lanczos3 with align_corners"
            )
    return canon


def _per_axis(value, nsp: int, name: str) -> tuple:
    if isinstance(value, list | tuple):
        if len(value) != nsp:
            raise ValueError(
                f"{name} must be a single number or a sequence of {nsp} numbers "
                f"(one per spatial axis), got {value!r}"
            )
        return tuple(value)
    return (value,) * nsp


def _per_axis_numbers(value, nsp: int, name: str, kind, type_message: str, valid,
                      value_message: str, plain=()) -> tuple:
    """``value`` for each of ``nsp`` axes (:func:`_per_axis`), each entry checked in
    turn: a ``kind`` number and not a bool (else TypeError ``type_message``), then
    ``valid(entry)`` (else ValueError ``value_message``).  Entries whose type is one of
    ``plain`` (builtin types that are ``kind`` numbers) skip the slow ABC test."""
    out = _per_axis(value, nsp, name)
    for s in out:
        if type(s) not in plain and (isinstance(s, bool | np.bool_)
                                     or not isinstance(s, kind)):
            raise TypeError(type_message)
        if not valid(s):
            raise ValueError(value_message)
    return out


def _check_size(size, nsp: int) -> tuple:
    out = _per_axis_numbers(
        size, nsp, "size", numbers.Integral,
        f"size must be a positive int or a sequence of {nsp} ints, got {size!r}",
        lambda s: s >= 1,
        f"size must be positive (output sizes >= 1) for every spatial axis, got {size!r}",
        (int,),
    )
    return tuple(int(s) for s in out)


def _check_scale(scale_factor, nsp: int) -> tuple:
    out = _per_axis_numbers(
        scale_factor, nsp, "scale_factor", numbers.Real,
        f"scale_factor must be a positive number or a sequence of {nsp} numbers, "
        f"got {scale_factor!r}",
        lambda s: math.isfinite(float(s)) and s > 0,
        f"scale_factor must be finite and > 0, got {scale_factor!r}",
        (int, float),
    )
    return tuple(float(s) for s in out)


def make_plan(
    in_sizes,
    size,
    scale_factor,
    mode,
    align_corners,
    antialias,
    recompute_scale_factor,
    lead: int = 1,
    itemsize: int = 4,
) -> Plan:
    """Validate the options for spatial input sizes ``in_sizes`` and return a :class:`Plan`.

    Also refuses, before anything is allocated, a request whose arrays and weight
    tables would exceed the memory limit (:mod:`sandbox.runtime.memory`);
    ``lead`` (batch x channels elements per spatial point) and ``itemsize`` size
    the arrays (the defaults give a lower bound); ``lead=0`` skips the check, for a
    query that allocates nothing.
    """
    options = (tuple(in_sizes), size, scale_factor, mode, align_corners, antialias,
               recompute_scale_factor)
    key = _plan_key(options)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _validated_plan(*options)
        _PLANS.put(key, plan)
    if lead:
        check_memory(plan.in_sizes, plan.out_sizes, lead, itemsize)
    return plan


# Validated plans by their options: a layer repeats the same request at every call.
# The key holds every option's type (and the types inside tuples), so that
# ``antialias=1`` (a TypeError) never finds the plan of ``antialias=True``, equal though
# the two are; unhashable options (lists) are validated every time.
_PLANS = PlanCache(512)


def _plan_key(options):
    """A dictionary key of ``options`` and their types."""
    return (options, tuple(map(type, options)),
            tuple([tuple(map(type, v)) for v in options if type(v) is tuple]))


def _validated_plan(in_sizes, size, scale_factor, mode, align_corners, antialias,
                    recompute_scale_factor) -> Plan:
    """:func:`make_plan` without the memory check (and uncached)."""
    canon = _check_mode(mode, antialias, align_corners)
    nsp = len(in_sizes)
    if recompute_scale_factor is not None and not isinstance(
        recompute_scale_factor, bool | np.bool_
    ):
        raise TypeError(
            f"recompute_scale_factor must be None or a bool, got {recompute_scale_factor!r}"
        )
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined (got both)")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined (got neither)")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(
                "recompute_scale_factor=True is not meaningful with an explicit size; "
                "pass scale_factor instead, or leave recompute_scale_factor=None"
            )
        out_sizes = _check_size(size, nsp)
        factors = (None,) * nsp
    else:
        factors = _check_scale(scale_factor, nsp)
        out_sizes = tuple(math.floor(n * f) for n, f in zip(in_sizes, factors, strict=True))
        if min(out_sizes) < 1:
            raise ValueError(
                f"scale_factor={scale_factor!r} gives an empty output for input spatial size "
                f"{tuple(in_sizes)} (output size floor(in * scale_factor) = {out_sizes}); "
                "use a larger scale_factor"
            )
        if recompute_scale_factor or canon == "area":
            factors = (None,) * nsp
    return Plan(canon, tuple(in_sizes), out_sizes, factors, bool(align_corners), bool(antialias))


def check_input_size(input_size, nsp: int) -> tuple:
    """Validate the adjoint's ``input_size`` (the forward input's spatial size)."""
    if isinstance(input_size, numbers.Integral) and not isinstance(input_size, bool | np.bool_):
        input_size = (input_size,)
    if not isinstance(input_size, list | tuple) or len(input_size) != nsp:
        raise ValueError(
            f"input_size must be a sequence of {nsp} positive ints (the spatial size of the "
            f"forward input, matching grad's {nsp} spatial axes), got {input_size!r}"
        )
    for s in input_size:
        if isinstance(s, bool | np.bool_) or not isinstance(s, numbers.Integral) or s < 1:
            raise ValueError(f"input_size entries must be positive ints, got {input_size!r}")
    return tuple(int(s) for s in input_size)
