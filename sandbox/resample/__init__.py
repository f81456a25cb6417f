"""Array-level resampling (resize) and its adjoint on plain numpy arrays.

Every mode is a separable linear map: per spatial axis a banded weight table
(see :mod:`sandbox.resample._weights`).  :func:`resize` applies the tables axis
by axis with the Cython kernels in ``sandbox._C._resample``; :func:`resize_adjoint`
applies the transposed tables (the exact adjoint, i.e. the backward of
:func:`resize`), also as a gather, so it needs no atomics and is bitwise
identical for any thread count.

Modes (PyTorch 2.13 semantics unless noted, see DESIGN §2):

``nearest``
    PyTorch's legacy ``floor(o * scale)`` rule, float32 index math, including
    its ``out == in`` and ``out == 2 * in`` shortcuts.
``nearest-exact``
    ``floor((o + 0.5) * scale)`` (Pillow / scikit-image).
``linear`` / ``bilinear`` / ``trilinear``
    Aliases, accepted for any number of spatial axes.
``bicubic``
    Keys cubic with A = -0.75 and replicate border (PyTorch).
``cubic`` (extra)
    Keys cubic with a = -0.5, out-of-range taps skipped and the weights
    renormalised (Pillow / JAX ``cubic``).  With ``antialias`` identical to
    ``bicubic`` with ``antialias``.
``lanczos3``, ``lanczos5`` (``lanczos5`` is an extra)
    ``sinc(x) sinc(x / a)`` with out-of-range taps skipped and renormalised
    (burn's Lanczos3).  Not stretched without ``antialias``; with ``antialias``
    ``lanczos3`` is PyTorch's ``lanczos`` mode.
``lanczos``
    PyTorch's name: ``lanczos3`` that requires ``antialias=True``.
``area``
    Adaptive average pooling bins (PyTorch).

Every mode works for (N, C, L), (N, C, H, W) and (N, C, D, H, W) inputs, with
and without ``antialias`` where the mode has a filter.
"""

from __future__ import annotations

import math

import numpy as np

from .._config import kernel_threads
from ._options import MODES, Plan, _check_mode, check_array, check_input_size, make_plan
from ._weights import Table, dense_matrix, get_table

__all__ = ["MODES", "check_options", "resize", "resize_adjoint", "output_size", "weight_matrix"]


def check_options(mode: str, align_corners=None, antialias: bool = False) -> str:
    """Validate a mode and its options without resampling anything.

    Raises the same ``ValueError``/``TypeError`` as :func:`resize` would (naming the
    valid choices) and returns the canonical mode name.  Layers call it at
    construction so a bad option fails early, not at the first forward.
    """
    return _check_mode(mode, antialias, align_corners)


def _kernels():
    from .._C import _resample

    return _resample


def _tables(plan: Plan, dtype: np.dtype, adjoint: bool) -> list[Table]:
    return [
        get_table(
            plan.mode, n_in, n_out, sf, plan.align_corners, plan.antialias, dtype.char, adjoint
        )
        for n_in, n_out, sf in zip(plan.in_sizes, plan.out_sizes, plan.scale_factors, strict=True)
    ]


def _taps(t: Table) -> float:
    return float(t.ntap.mean())


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
    if th.ntap.max(initial=0) <= 1:
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


def _index_maps(tables: list[Table]) -> tuple[np.ndarray, np.ndarray]:
    """Row and column source indices of a nearest resize."""
    return _fold_rows(tables, np.float64)[0], tables[-1].start


def _apply_nearest(x: np.ndarray, plan: Plan, adjoint: bool):
    """The dedicated nearest kernels, or None where the generic passes fit better.

    They parallelise over (n, c) planes, so they need a few planes per thread.
    """
    threads = kernel_threads(x.size)
    planes = x.shape[0] * x.shape[1]
    if planes < 2 * threads:
        return None
    tables = _tables(plan, x.dtype, adjoint=False)
    rows, cols = _index_maps(tables)
    kernels = _kernels()
    if not adjoint:
        out = np.empty((*x.shape[:2], *plan.out_sizes), dtype=x.dtype)
        kernels.nearest_forward(
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
    status = kernels.nearest_adjoint(
        x.reshape(planes, rows.size, -1),
        out.reshape(planes, -1, plan.in_sizes[-1]),
        rows,
        last.start,
        last.ntap,
        uniform,
        threads,
    )
    if status != 0:
        raise MemoryError("could not allocate the nearest adjoint's row flags")
    return out


def _apply_single_tap(x: np.ndarray, tables: list[Table]):
    """One weighted gather when every table has at most one tap per output, else None.

    The same products as the separable passes (up to the order of the axes); it needs
    a few (n, c) planes per thread because it parallelises over planes.
    """
    if any(t.identity or t.ntap.max(initial=0) > 1 for t in tables):
        return None
    threads = kernel_threads(x.size)
    planes = x.shape[0] * x.shape[1]
    if planes < 2 * threads:
        return None
    rows, row_w, row_empty = _fold_rows(tables, x.dtype)
    last = tables[-1]
    out = np.empty((*x.shape[:2], *(t.start.shape[0] for t in tables)), dtype=x.dtype)
    status = _kernels().weighted_gather(
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
    if status != 0:
        raise MemoryError("could not allocate the resampling scratch row")
    return out


def _resample(x: np.ndarray, plan: Plan, adjoint: bool) -> np.ndarray:
    """Run ``plan`` (forward or adjoint) on a contiguous array with the best kernel."""
    if plan.mode in _NEAREST:
        out = _apply_nearest(x, plan, adjoint)
        if out is not None:
            return out
    return _apply(x, _tables(plan, x.dtype, adjoint))


def _apply(x: np.ndarray, tables: list[Table]) -> np.ndarray:
    """Apply per-axis tables to the spatial axes of a contiguous (N, C, ...) array."""
    n, c = x.shape[:2]
    out_shape = (n, c, *(t.start.shape[0] for t in tables))
    if n * c == 0:
        return np.zeros(out_shape, dtype=x.dtype)
    if len(tables) > 1:
        out = _apply_single_tap(x, tables)
        if out is not None:
            return out
    shape = [n * c, *x.shape[2:]]
    passes = _plan_passes(shape, tables)
    if not passes:
        return x.copy()
    kernels = _kernels()
    cur = x
    for op in passes:
        before = list(shape)
        threads = kernel_threads(max(math.prod(shape), cur.size))
        if op[0] == "hw":
            th, tw = tables[-2], tables[-1]
            outer = math.prod(shape[:-2])
            shape[-2:] = [th.start.shape[0], tw.start.shape[0]]
            out = np.empty(math.prod(shape), dtype=x.dtype)
            status = kernels.apply_hw(
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
            if status != 0:
                raise MemoryError("could not allocate the resampling scratch rows")
        else:
            a = op[1]
            t = tables[a]
            outer = math.prod(shape[: a + 1])
            inner = math.prod(shape[a + 2 :])
            shape[a + 1] = t.start.shape[0]
            out = np.empty(math.prod(shape), dtype=x.dtype)
            if inner == 1:
                kernels.apply_last(
                    cur.reshape(outer, -1),
                    out.reshape(outer, -1),
                    t.start,
                    t.ntap,
                    t.weights,
                    threads,
                )
            else:
                kernels.apply_mid(
                    cur.reshape(outer, -1, inner),
                    out.reshape(outer, -1, inner),
                    t.start,
                    t.ntap,
                    t.weights,
                    threads,
                )
        cur = out
    return cur.reshape(out_shape)


def resize(
    x,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    antialias=False,
    recompute_scale_factor=None,
):
    """Resize the spatial axes of ``x`` (PyTorch ``interpolate`` semantics).

    Parameters
    ----------
    x : numpy.ndarray
        float32 or float64 array of shape (N, C, L), (N, C, H, W) or (N, C, D, H, W).
        Any memory layout; read-only arrays are fine.
    size : int or tuple of int, optional
        Output spatial size (one int for all axes, or one per axis).
    scale_factor : float or tuple of float, optional
        Multiplier for the spatial size; the output size is ``floor(in * scale_factor)``
        and, unless ``recompute_scale_factor`` is true, the sampling step is
        ``1 / scale_factor``.  Exactly one of ``size`` and ``scale_factor``.
    mode : str
        One of :data:`MODES` (see the module docstring).
    align_corners : bool, optional
        Corner-aligned coordinates (``s = o * (in-1)/(out-1)``) for the filter
        modes; must be None for nearest, nearest-exact and area.
    antialias : bool
        Stretch the filter when downsampling (Pillow / PyTorch antialias); for
        linear, bicubic, cubic, lanczos3, lanczos5.
    recompute_scale_factor : bool, optional
        Use ``in / out`` instead of ``1 / scale_factor`` for the sampling step.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array of shape (N, C, *out_size), same dtype as ``x``.
    """
    check_array(x, "x")
    plan = make_plan(
        x.shape[2:], size, scale_factor, mode, align_corners, antialias, recompute_scale_factor
    )
    if min(x.shape[2:]) < 1:
        raise ValueError(f"x must have non-empty spatial axes, got shape {x.shape}")
    return _resample(np.ascontiguousarray(x), plan, adjoint=False)


def resize_adjoint(
    grad,
    input_size,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    antialias=False,
    recompute_scale_factor=None,
):
    """Adjoint (backward) of :func:`resize`: map an output gradient back to the input.

    ``<resize(x, ...), grad> == <x, resize_adjoint(grad, x.shape[2:], ...)>`` for all
    ``x`` and ``grad``.

    Parameters
    ----------
    grad : numpy.ndarray
        float32 or float64 gradient with the shape :func:`resize` returns for an
        input of spatial size ``input_size``.
    input_size : int or tuple of int
        Spatial size of the forward's input (one entry per spatial axis).
    size, scale_factor, mode, align_corners, antialias, recompute_scale_factor
        The forward's options, as for :func:`resize`.

    Returns
    -------
    numpy.ndarray
        Array of shape (N, C, *input_size), same dtype as ``grad``.
    """
    check_array(grad, "grad")
    in_sizes = check_input_size(input_size, grad.ndim - 2)
    plan = make_plan(
        in_sizes, size, scale_factor, mode, align_corners, antialias, recompute_scale_factor
    )
    expected = (*grad.shape[:2], *plan.out_sizes)
    if grad.shape != expected:
        raise ValueError(
            f"grad has shape {grad.shape} but the forward output for input_size={in_sizes} "
            f"with these options has shape {expected}; grad must have shape {expected}"
        )
    return _resample(np.ascontiguousarray(grad), plan, adjoint=True)


def output_size(
    input_size, size=None, scale_factor=None, mode="nearest", recompute_scale_factor=None
):
    """Spatial output size of :func:`resize` for spatial ``input_size`` (a tuple)."""
    in_sizes = check_input_size(input_size, len(np.atleast_1d(input_size)))
    plan = make_plan(in_sizes, size, scale_factor, mode, None, False, recompute_scale_factor)
    return plan.out_sizes


def weight_matrix(
    n_in,
    n_out,
    mode="linear",
    scale_factor=None,
    align_corners=None,
    antialias=False,
    dtype=np.float64,
):
    """Dense (n_out, n_in) matrix of one axis of :func:`resize` (for inspection and docs).

    ``scale_factor`` is the per-axis factor the kernel uses as ``1 / scale_factor``
    (None: ``n_in / n_out``).
    """
    plan = make_plan((n_in,), n_out, None, mode, align_corners, antialias, None)
    sf = None if scale_factor is None else float(scale_factor)
    if plan.mode == "area":
        sf = None
    tab = get_table(
        plan.mode, n_in, n_out, sf, plan.align_corners, plan.antialias, np.dtype(dtype).char
    )
    return dense_matrix(tab)
