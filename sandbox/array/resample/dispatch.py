"""How a resize runs: which kernel, in which order of passes (forward and adjoint).

:func:`resample` takes a validated :class:`~sandbox.array.resample._options.Plan`
and a contiguous array and picks, by shape alone (never by thread count, so the
result is bitwise identical for any number of threads):

1. the dedicated nearest / nearest-exact kernels (index gather forward, row
   scatter adjoint) when there are a few (n, c) planes per thread;
2. one weighted gather when every axis has at most one tap per output
   (e.g. the adjoint of 2x bilinear downsampling, area resampling);
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
"""

from __future__ import annotations

import math

import numpy as np

from ..._C import _resample as _kernels
from ...runtime.threads import kernel_threads
from ._options import Plan, make_plan
from ._weights import Table, get_table

__all__ = [
    "Plan",
    "apply_nearest",
    "apply_single_tap",
    "apply_tables",
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


def apply_nearest(x: np.ndarray, plan: Plan, adjoint: bool):
    """The dedicated nearest kernels, or None where the generic passes fit better.

    They parallelise over (n, c) planes, so they need a few planes per thread.
    """
    threads = kernel_threads(x.size)
    planes = x.shape[0] * x.shape[1]
    if planes < 2 * threads:
        return None
    tables = tables_for(plan, x.dtype, adjoint=False)
    rows, cols = index_maps(tables)
    if not adjoint:
        out = np.empty((*x.shape[:2], *plan.out_sizes), dtype=x.dtype)
        _kernels.nearest_forward(
            x.reshape(planes, -1, x.shape[-1]),
            out.reshape(planes, rows.size, cols.size),
            rows,
            cols,
            threads,
        )
        return out
    last = get_table(
        plan.mode,
        plan.in_sizes[-1],
        plan.out_sizes[-1],
        plan.scale_factors[-1],
        plan.align_corners,
        plan.antialias,
        x.dtype.char,
        True,
    )
    out = np.empty((*x.shape[:2], *plan.in_sizes), dtype=x.dtype)
    k = int(last.ntap[0])
    uniform = k if k in (1, 2) and np.array_equal(last.start, k * np.arange(last.start.size)) \
        and np.all(last.ntap == k) else 0
    _kernels.nearest_adjoint(
        x.reshape(planes, rows.size, -1),
        out.reshape(planes, -1, plan.in_sizes[-1]),
        rows,
        last.start,
        last.ntap,
        uniform,
        threads,
    )
    return out


def apply_single_tap(x: np.ndarray, tables: list[Table]):
    """One weighted gather when every table has at most one tap per output, else None.

    The same products as the separable passes (up to the order of the axes); it needs
    a few (n, c) planes per thread because it parallelises over planes.
    """
    for t in tables:
        if t.identity or _max_taps(t) > 1:
            return None
    threads = kernel_threads(x.size)
    planes = x.shape[0] * x.shape[1]
    if planes < 2 * threads:
        return None
    rows, row_w, row_empty = _fold_rows(tables, x.dtype)
    last = tables[-1]
    out = np.empty((*x.shape[:2], *(t.start.shape[0] for t in tables)), dtype=x.dtype)
    _kernels.weighted_gather(
        x.reshape(planes, -1, x.shape[-1]),
        out.reshape(planes, rows.size, last.start.size),
        rows,
        np.ascontiguousarray(row_w),
        row_empty.view(np.int8),
        last.start,
        np.ascontiguousarray(last.weights[:, 0]),
        np.flatnonzero(last.ntap == 0).astype(np.intp),
        threads,
    )
    return out


def resample(x: np.ndarray, plan: Plan, adjoint: bool) -> np.ndarray:
    """Run ``plan`` (forward or adjoint) on a contiguous array with the best kernel."""
    if plan.mode in _NEAREST:
        out = apply_nearest(x, plan, adjoint)
        if out is not None:
            return out
    return apply_tables(x, tables_for(plan, x.dtype, adjoint))


def apply_tables(x: np.ndarray, tables: list[Table]) -> np.ndarray:
    """Apply per-axis tables to the spatial axes of a contiguous (N, C, ...) array."""
    n, c = x.shape[:2]
    out_shape = (n, c, *(t.start.shape[0] for t in tables))
    if n * c == 0:
        return np.zeros(out_shape, dtype=x.dtype)
    if len(tables) > 1:
        out = apply_single_tap(x, tables)
        if out is not None:
            return out
    shape = [n * c, *x.shape[2:]]
    passes = _plan_passes(shape, tables)
    if not passes:
        return x.copy()
    cur = x
    for op in passes:
        before = list(shape)
        threads = kernel_threads(max(math.prod(shape), cur.size))
        if op[0] == "hw":
            th, tw = tables[-2], tables[-1]
            outer = math.prod(shape[:-2])
            shape[-2:] = [th.start.shape[0], tw.start.shape[0]]
            out = np.empty(math.prod(shape), dtype=x.dtype)
            _kernels.apply_hw(
                cur.reshape(outer, *before[-2:]),
                out.reshape(outer, *shape[-2:]),
                th.start,
                th.ntap,
                th.weights,
                tw.start,
                tw.ntap,
                tw.weights,
                threads,
            )
        else:
            a = op[1]
            t = tables[a]
            outer = math.prod(shape[: a + 1])
            inner = math.prod(shape[a + 2 :])
            shape[a + 1] = t.start.shape[0]
            out = np.empty(math.prod(shape), dtype=x.dtype)
            if inner == 1:
                _kernels.apply_last(
                    cur.reshape(outer, -1),
                    out.reshape(outer, -1),
                    t.start,
                    t.ntap,
                    t.weights,
                    threads,
                )
            else:
                _kernels.apply_mid(
                    cur.reshape(outer, -1, inner),
                    out.reshape(outer, -1, inner),
                    t.start,
                    t.ntap,
                    t.weights,
                    threads,
                )
        cur = out
    return cur.reshape(out_shape)
