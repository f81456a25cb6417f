"""How a resize runs: which kernel, in which order of passes (forward and adjoint).

:func:`resample` takes a validated :class:`~sandbox.array.resample._options.Plan`
and a contiguous array and picks (and remembers per shape, ``_schedule``) a route whose
result is bitwise the same for any number of threads:

1. the dedicated nearest / nearest-exact kernels (index gather forward, row
   scatter adjoint) from ``MIN_PLANES`` (n, c) planes on, a constant;
2. one weighted gather when every axis has at most one tap per output
   (e.g. the adjoint of 2x bilinear downsampling, area resampling), from
   ``MIN_PLANES`` planes on too;
3. otherwise the separable passes, one per axis, with the last two axes as two
   passes or one fused pass, chosen by the small cost model below.

The cost model
--------------
``_gather_cost`` and ``_combine_cost`` are rough nanoseconds per output element
of the two kinds of pass, each ``a + b * taps``: a gather along the contiguous
axis (``apply_last``: scalar loads, so each tap costs) and a whole-row combine
along an outer axis (``apply_mid``: vectorised, cheap per tap).  They were
measured single-threaded on float32 data on the development machine (a 2-core
x86-64 VM) when the kernels were written; the timing script was not kept.  To
re-fit them on another machine, time ``apply_last`` and ``apply_mid`` on planes of
a few hundred pixels for several tap counts and fit a line per kernel.  Only
their ratio matters: the model picks the order of the passes, so a poor fit
costs speed, never accuracy.

The model ignores that ``apply_last`` runs float32 rows 16 (``avx512`` path) or 8
(``avx2``) a vector and ``apply_mid`` sums 16 floats a vector on ``avx512``
(:func:`simd_code`; 2-4x faster there): the order of the passes
changes the rounding, and it must not depend on the SIMD path, so that every path
gives the same values.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from ..._C import _resample as _kernels
from ...runtime import simd
from ...runtime.threads import kernel_threads
from ..copy import row_view
from ._options import Plan, make_plan
from ._weights import Table, get_table

__all__ = [
    "Plan",
    "apply_nearest",
    "apply_single_tap",
    "index_maps",
    "make_plan",
    "resample",
    "tables_for",
]


def tables_for(plan: Plan, dtype: np.dtype, adjoint: bool) -> list[Table]:
    return [
        get_table(
            plan.mode, n_in, n_out, sf, plan.align_corners, plan.antialias, dtype.char, adjoint
        )
        for n_in, n_out, sf in zip(plan.in_sizes, plan.out_sizes, plan.scale_factors, strict=True)
    ]


def _taps(t: Table) -> float:
    """Mean taps per output: ``ntap.mean()`` (exact: a sum of small ints, one division),
    without ``ndarray.mean``'s Python wrappers, as this runs at every resize."""
    n = t.ntap.size
    if not n:  # no outputs: numpy's nan (and its warning), as ever
        return float(t.ntap.mean())
    return int(np.add.reduce(t.ntap)) / n


def _max_taps(t: Table) -> int:
    """Most taps of any output (0 for an empty table): ``ntap.max(initial=0)`` without
    its Python wrapper."""
    return np.maximum.reduce(t.ntap, initial=0)


def _gather_cost(k: float) -> float:
    # Rough ns per output of a last-axis gather (scalar loads), measured on the dev box.
    return 0.5 + 0.09 * k


def _combine_cost(k: float) -> float:
    # Rough ns per output element of a whole-row (vectorised) combine.
    return 0.02 + 0.032 * k


def _hw_plan(h, w, th: Table, tw: Table) -> str:
    """Pick 'w-first' (two passes), 'h-first' (two passes) or 'fused' for the last two axes."""
    ho, wo = th.start.shape[0], tw.start.shape[0]
    g, c = _gather_cost(_taps(tw)), _combine_cost(_taps(th))
    if _max_taps(th) <= 1:
        # single-tap rows are gathered in place: one pass, no intermediate
        return "fused"
    costs = {
        "w-first": h * wo * (g + 0.05) + ho * wo * c,
        "h-first": ho * w * (c + 0.05) + ho * wo * g,
        "fused": ho * w * (c + 0.02) + 1.3 * ho * wo * g,
    }
    return min(costs, key=costs.get)


def _plan_passes(shape: list, tables: list[Table]) -> list[tuple]:
    """Passes to run: ``("hw",)`` (fused last two axes) or ``("axis", a)``.

    The passes commute (they act on different axes), so the order only changes
    rounding; it depends on shapes alone, never on the thread count.  The last
    two axes run as two passes or one fused pass (no intermediate array),
    whichever a small cost model prefers; for 3-D the depth pass runs before or
    after them, whichever moves less data.
    """
    nd = len(tables)
    active = [not t.identity for t in tables]
    passes = []
    if nd == 1:
        return [("axis", 0)] if active[0] else []
    h, w = nd - 2, nd - 1
    if active[h] and active[w]:
        plan = _hw_plan(shape[-2], shape[-1], tables[h], tables[w])
        if plan == "fused":
            passes.append(("hw",))
        elif plan == "w-first":
            passes += [("axis", w), ("axis", h)]
        else:
            passes += [("axis", h), ("axis", w)]
    elif active[w]:
        passes.append(("axis", w))
    elif active[h]:
        passes.append(("axis", h))
    if nd == 3 and active[0]:
        d_in, d_out = shape[1], tables[0].start.shape[0]
        hw_in = shape[2] * shape[3]
        hw_out = tables[1].start.shape[0] * tables[2].start.shape[0]
        # depth first when that shrinks the planes the other passes see
        passes.insert(0 if d_out * hw_in <= d_in * hw_out else len(passes), ("axis", 0))
    return passes


_NEAREST = ("nearest", "nearest-exact")


def _fold_rows(tables: list[Table], dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fold every spatial axis but the last into "rows" of a single-tap map.

    Returns, per output row, the input row it reads, its weight (the leading axes'
    weights multiplied in the order the separable passes apply them) and whether it
    reads nothing.
    """
    rows = np.zeros(1, dtype=np.intp)
    row_w = np.ones(1, dtype=dtype)
    row_empty = np.zeros(1, dtype=bool)
    for t in tables[:-1]:
        rows = (rows[:, None] * t.n_in + t.start[None, :]).ravel()
        row_w = (t.weights[None, :, 0] * row_w[:, None]).ravel()
        row_empty = (row_empty[:, None] | (t.ntap == 0)[None, :]).ravel()
    return rows, row_w, row_empty


def index_maps(tables: list[Table]) -> tuple[np.ndarray, np.ndarray]:
    """Row and column source indices of a nearest resize."""
    return _fold_rows(tables, np.float64)[0], tables[-1].start


class _Step(NamedTuple):
    """One kernel call of a resize: the input viewed as ``in_view``, a new output of
    shape ``out_view``, the kernel's table arguments, the elements that set its
    thread count, and whether the kernel takes the SIMD code (:func:`simd_code`)."""

    kernel: object
    in_view: tuple
    out_view: tuple
    args: tuple
    work: int
    simd: bool = False


def simd_code() -> int:
    """The vector forms ``apply_last`` and ``apply_mid`` may run: 2 on the ``avx512`` path
    of :mod:`sandbox.runtime.simd` (16 rows / 16 floats a vector), 1 on the ``avx2``
    path (``apply_last`` 8 rows a vector), 0 on ``portable`` (the scalar loops).  Every
    form gives the same values, so the route (and the bits) never depend on it."""
    isa = simd.current().isa
    if isa == "avx512" and _AVX512:
        return 2
    return 1 if isa != "portable" and _AVX2 else 0


_AVX512 = _kernels.isa_available() == 2
_AVX2 = _kernels.isa_available() >= 1


#: (n, c) planes from which the plane-parallel kernels (nearest, weighted gather) run
#: instead of the separable passes.  A constant, not a multiple of the thread count: the
#: nearest adjoint sums a cell's taps in another order than the passes, and the gather
#: may apply the axes in another order, so a route that changed with the threads would
#: change the bits (the nearest adjoint's did, for 2-7 planes, before this was fixed).
MIN_PLANES = 4


def _nearest_steps(shape, dtype, plan: Plan, adjoint: bool):
    """The dedicated nearest kernel's step, or None where the generic passes fit better
    (fewer than :data:`MIN_PLANES` planes)."""
    planes = shape[0] * shape[1]
    if planes < MIN_PLANES:
        return None
    size = math.prod(shape)
    rows, cols = index_maps(tables_for(plan, dtype, adjoint=False))
    if not adjoint:
        return _Step(_kernels.nearest_forward, (planes, size // (planes * shape[-1]), shape[-1]),
                     (planes, rows.size, cols.size), (rows, cols), size)
    last = get_table(plan.mode, plan.in_sizes[-1], plan.out_sizes[-1], plan.scale_factors[-1],
                     plan.align_corners, plan.antialias, dtype.char, True)
    k = int(last.ntap[0])
    uniform = k if k in (1, 2) and np.array_equal(last.start, k * np.arange(last.start.size)) \
        and np.all(last.ntap == k) else 0
    width = plan.in_sizes[-1]
    return _Step(_kernels.nearest_adjoint, (planes, rows.size, size // (planes * rows.size)),
                 (planes, math.prod(plan.in_sizes) // width, width),
                 (rows, last.start, last.ntap, uniform, last.weights), size, True)


def _single_tap_step(shape, tables: list[Table]):
    """One weighted gather when every table has at most one tap per output, else None.

    The same products as the separable passes (up to the order of the axes); it needs
    :data:`MIN_PLANES` (n, c) planes because it parallelises over planes.
    """
    for t in tables:
        if t.identity or _max_taps(t) > 1:
            return None
    planes = shape[0] * shape[1]
    if planes < MIN_PLANES:
        return None
    rows, row_w, row_empty = _fold_rows(tables, tables[-1].weights.dtype)
    last = tables[-1]
    return _Step(_kernels.weighted_gather, (planes, math.prod(shape) // (planes * shape[-1]),
                                            shape[-1]),
                 (planes, rows.size, last.start.size),
                 (rows, np.ascontiguousarray(row_w), row_empty.view(np.int8), last.start,
                  np.ascontiguousarray(last.weights[:, 0]),
                  np.flatnonzero(last.ntap == 0).astype(np.intp)),
                 math.prod(shape))


def _pass_steps(shape, tables: list[Table]) -> tuple:
    """The separable passes (:func:`_plan_passes`) as steps."""
    shape = [shape[0] * shape[1], *shape[2:]]
    steps = []
    size = math.prod(shape)
    for op in _plan_passes(shape, tables):
        before = list(shape)
        if op[0] == "hw":
            th, tw = tables[-2], tables[-1]
            outer = math.prod(shape[:-2])
            shape[-2:] = [th.start.shape[0], tw.start.shape[0]]
            kernel, args = _kernels.apply_hw, (th.start, th.ntap, th.weights, tw.start,
                                               tw.ntap, tw.weights)
            in_view, out_view = (outer, *before[-2:]), (outer, *shape[-2:])
        else:
            t = tables[op[1]]
            outer = math.prod(shape[: op[1] + 1])
            inner = math.prod(shape[op[1] + 2 :])
            n_in, n_out = shape[op[1] + 1], t.start.shape[0]
            shape[op[1] + 1] = n_out
            args = (t.start, t.ntap, t.weights)
            if inner == 1:
                kernel, in_view, out_view = _kernels.apply_last, (outer, n_in), (outer, n_out)
            else:
                kernel = _kernels.apply_mid
                in_view, out_view = (outer, n_in, inner), (outer, n_out, inner)
        new_size = math.prod(shape)
        steps.append(_Step(kernel, in_view, out_view, args, max(new_size, size),
                           kernel is not _kernels.apply_hw))
        size = new_size
    return tuple(steps)


# A UNet repeats a few resizes (one forward and one adjoint per level); the nearest
# row maps a schedule holds grow with the planes (512 KB for 256^3 volumes), so few.
@lru_cache(maxsize=64)
def _schedule(shape: tuple, dtype_char: str, plan: Plan, adjoint: bool):
    """``(steps, out_shape)`` of a resize of a ``shape`` array: ``steps`` None when there
    is nothing to compute (no (n, c) planes: zeros), empty for identity tables (a copy).

    The route is picked by shape alone; cached, as every call of a layer repeats it.
    """
    dtype = np.dtype(dtype_char)
    if plan.mode in _NEAREST:
        step = _nearest_steps(shape, dtype, plan, adjoint)
        if step is not None:
            return (step,), (*shape[:2], *(plan.in_sizes if adjoint else plan.out_sizes))
    tables = tables_for(plan, dtype, adjoint)
    out_shape = (*shape[:2], *(t.start.shape[0] for t in tables))
    if shape[0] * shape[1] == 0:
        return None, out_shape
    if len(tables) > 1:
        step = _single_tap_step(shape, tables)
        if step is not None:
            return (step,), out_shape
    return _pass_steps(shape, tables), out_shape


def _call(step, x: np.ndarray, out: np.ndarray) -> None:
    """One step's kernel on a C-contiguous view ``x`` into ``out``."""
    if step.simd:
        step.kernel(x, out, *step.args, kernel_threads(step.work), simd_code())
    else:
        step.kernel(x, out, *step.args, kernel_threads(step.work))


def samples_contiguous(x: np.ndarray) -> bool:
    """Whether each sample ``x[n]`` of a non-empty (N, C, ...) array is C-contiguous, the
    samples in order: a slice of channels, as a concatenation's backward hands each of
    its inputs (``copy.row_view``'s contiguous runs, each whole samples)."""
    rows = row_view(x, min_row_bytes=0) if x.size else None
    return rows is not None and x.strides[0] > 0 and rows.shape[1] % math.prod(x.shape[1:]) == 0


def _run(x: np.ndarray, steps, out_shape) -> np.ndarray:
    if steps is None:
        return np.zeros(out_shape, dtype=x.dtype)
    if not steps:
        return x.copy()
    cur = x
    for step in steps:
        out = np.empty(step.out_view, dtype=x.dtype)
        if cur.flags.c_contiguous:
            _call(step, cur.reshape(step.in_view), out)
        else:  # samples each contiguous (samples_contiguous): the first step sample by
            # sample, not a copy of the whole array; every plane's outputs are the same
            n = cur.shape[0]
            ins, outs = (step.in_view[0] // n, *step.in_view[1:]), (-1, *step.out_view[1:])
            # indexed, not np.split: 1.5 against 7.7 us for 8 samples (warm, timeit, AMD
            # EPYC family 26 model 2)
            blocks = out.reshape(n, -1)
            for k in range(n):
                _call(step, cur[k].reshape(ins), blocks[k].reshape(outs))
        cur = out
    return cur.reshape(out_shape)


def apply_nearest(x: np.ndarray, plan: Plan, adjoint: bool):
    """The dedicated nearest kernels, or None where the generic passes fit better."""
    step = _nearest_steps(x.shape, x.dtype, plan, adjoint)
    if step is None:
        return None
    return _run(x, (step,), (*x.shape[:2], *(plan.in_sizes if adjoint else plan.out_sizes)))


def apply_single_tap(x: np.ndarray, tables: list[Table]):
    """One weighted gather when every table has at most one tap per output, else None."""
    step = _single_tap_step(x.shape, tables)
    if step is None:
        return None
    return _run(x, (step,), (*x.shape[:2], *(t.start.shape[0] for t in tables)))


def resample(x: np.ndarray, plan: Plan, adjoint: bool) -> np.ndarray:
    """Run ``plan`` (forward or adjoint) with the best kernel on an array that is
    C-contiguous or whose samples each are (:func:`samples_contiguous`)."""
    return _run(x, *_schedule(x.shape, x.dtype.char, plan, adjoint))

