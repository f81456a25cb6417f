"""Ordering and selection: ``sort``, ``topk``, ``unique``.

``sort`` and ``topk`` return PyTorch's named pairs ``(values, indices)``; the
values are differentiable (the gradient goes back to the positions they were
taken from), the int64 indices are not.  ``sort`` is stable (ties keep their order,
also when descending); NaN sorts as the largest value, as in PyTorch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..autograd import Function, Tensor
from ._util import normalize_axes

__all__ = ["sort", "topk", "unique"]

SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])


class TakeAlong(Function):
    """``np.take_along_axis(x, idx, axis)``; its backward scatters (adds) back."""

    @staticmethod
    def forward(ctx, x, idx, axis):
        ctx.shape, ctx.idx, ctx.axis = x.shape, idx, axis
        return np.take_along_axis(x, idx, axis)

    @staticmethod
    def backward(ctx, grad):
        return PutAlong.apply(grad, ctx.idx, ctx.axis, ctx.shape), None, None


class PutAlong(Function):
    """Zeros of ``shape`` with ``g`` added at ``idx`` along ``axis`` (TakeAlong's adjoint)."""

    @staticmethod
    def forward(ctx, g, idx, axis, shape):
        ctx.idx, ctx.axis = idx, axis
        out = np.zeros(shape, g.dtype)
        # Indices along an axis are distinct here (a permutation or its first k), so
        # put_along_axis (which overwrites) is an add.
        np.put_along_axis(out, idx, g, axis)
        return out

    @staticmethod
    def backward(ctx, grad):
        return TakeAlong.apply(grad, ctx.idx, ctx.axis), None, None, None


def _axis(x, dim, op):
    if x.ndim == 0:
        return None
    (a,) = normalize_axes(dim, x.ndim, op)
    return a


def _stable_order(data, axis, descending):
    """Indices that sort ``data`` along ``axis``, ties in their original order."""
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    # Sorting the reversed array ascending and reading it backwards gives a
    # descending order whose ties keep their original order.
    n = data.shape[axis]
    rev = np.argsort(np.flip(data, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis)


def _take(x, order, axis):
    idx = Tensor._make(order.astype(np.int64))
    return TakeAlong.apply(x, order, axis), idx


def sort(x, dim=-1, descending=False, stable=False):
    """Sort along ``dim``: a ``(values, indices)`` pair, as ``torch.sort`` (always stable)."""
    axis = _axis(x, dim, "sort")
    if axis is None:
        return SortResult(x, Tensor._make(np.zeros((), np.int64)))
    values, idx = _take(x, _stable_order(x._data, axis, descending), axis)
    return SortResult(values, idx)


def topk(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's argument names
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` and their
    indices, as ``torch.topk`` (ordered from the extreme, ties by position)."""
    axis = _axis(x, dim, "topk")
    n = 1 if axis is None else x.shape[axis]
    if not isinstance(k, int | np.integer) or not 0 <= k <= n:
        raise ValueError(f"topk: k must be an int in [0, {n}] (the size of dim {dim}), got {k!r}")
    if axis is None:
        return TopkResult(x, Tensor._make(np.zeros((), np.int64)))
    order = _stable_order(x._data, axis, largest)
    order = np.take(order, np.arange(k), axis=axis)
    values, idx = _take(x, order, axis)
    return TopkResult(values, idx)


def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values of ``x`` (flattened, or the distinct slices along ``dim``),
    sorted, as ``torch.unique``; optionally the inverse indices and the counts.
    Not differentiable."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    axis = None if dim is None else normalize_axes(dim, data.ndim, "unique")[0]
    out = np.unique(data, return_inverse=return_inverse, return_counts=return_counts, axis=axis)
    if not (return_inverse or return_counts):
        return Tensor._make(out)
    values, *rest = out
    results = [Tensor._make(values)]
    if return_inverse:
        inverse = rest.pop(0)
        shape = data.shape if axis is None else (data.shape[axis],)
        results.append(Tensor._make(inverse.reshape(shape).astype(np.int64)))
    if return_counts:
        results.append(Tensor._make(rest.pop(0).astype(np.int64)))
    return tuple(results)
