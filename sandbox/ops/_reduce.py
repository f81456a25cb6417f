"""Reductions: sum, mean, max/min (with indices), amax/amin, var; argmax/argmin."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..array.reduce import trailing_mean, trailing_sum
from ..autograd import Function, Tensor, is_grad_enabled
from ._util import normalize_axes, pick_axis, pick_keep


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _spread(grad, kept, shape, scale=None):
    """The gradient of a sum (times ``scale``, a mean's ``1 / count``) over the reduced
    axes: ``grad`` with them kept, broadcast to the input's ``shape`` (a view; whoever
    needs it contiguous fills it on every thread, ``sandbox.array.copy``).  Tensor ops
    under create_graph, arrays otherwise."""
    g = grad.reshape(kept)
    if scale is not None:
        g = g * scale
    if isinstance(g, Tensor):
        return g.expand(shape)
    return np.broadcast_to(g, shape)


class Sum(Function):
    plain_backward_arrays = True  # outside create_graph, grad is an ndarray

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        ctx.shape = x.shape
        ctx.kept = _kept_shape(x.shape, axes)
        return trailing_sum(x, axes, keepdims)

    @staticmethod
    def backward(ctx, grad):
        return _spread(grad, ctx.kept, ctx.shape), None, None


class Mean(Function):
    plain_backward_arrays = True  # outside create_graph, grad is an ndarray

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        ctx.shape = x.shape
        ctx.kept = _kept_shape(x.shape, axes)
        ctx.count = int(np.prod([x.shape[a] for a in axes]))
        if ctx.count == 0:  # the mean of nothing: NaN, as torch (numpy would also warn)
            return np.full(np.sum(x, axis=axes, keepdims=keepdims).shape, np.nan, x.dtype)
        return trailing_mean(x, axes, keepdims)

    @staticmethod
    def backward(ctx, grad):
        scale = 1.0 / (ctx.count or 1)  # count 0: x is empty, and so is its gradient
        return _spread(grad, ctx.kept, ctx.shape, scale), None, None


class Amax(Function):
    """max (``which=np.max``) or min over axes; ties share the gradient equally."""

    @staticmethod
    def forward(ctx, x, axes, keepdims, which):
        if x.size == 0:
            raise ValueError(f"{which.__name__}: cannot reduce an empty tensor")
        y = which(x, axis=axes, keepdims=True)
        ctx.mask = x == y
        ctx.count = ctx.mask.sum(axis=axes, keepdims=True)
        ctx.kept = y.shape
        return y if keepdims else np.squeeze(y, axis=axes)

    @staticmethod
    def backward(ctx, grad):
        coef = ctx.mask / ctx.count.astype(grad.dtype)
        return grad.reshape(ctx.kept) * coef.astype(grad.dtype, copy=False), None, None, None


def _axes(x, axis, dim, op):
    return normalize_axes(pick_axis(axis, dim), x.ndim, op)


def sum(x, axis=None, keepdims=False, *, dim=None, keepdim=False):  # noqa: A001
    """Sum over ``axis`` (int, tuple or None for all); ``dim``/``keepdim`` as in torch."""
    return Sum.apply(x, _axes(x, axis, dim, "sum"), pick_keep(keepdims, keepdim))


def mean(x, axis=None, keepdims=False, *, dim=None, keepdim=False):
    """Mean over ``axis`` (int, tuple or None for all)."""
    return Mean.apply(x, _axes(x, axis, dim, "mean"), pick_keep(keepdims, keepdim))


def amax(x, axis=None, keepdims=False, *, dim=None, keepdim=False):
    """Maximum values over ``axis`` (int, tuple or None), as ``torch.amax``.

    Ties share the gradient equally (PyTorch's ``amax`` rule).
    """
    return Amax.apply(x, _axes(x, axis, dim, "amax"), pick_keep(keepdims, keepdim), np.max)


def amin(x, axis=None, keepdims=False, *, dim=None, keepdim=False):
    """Minimum values over ``axis`` (int, tuple or None), as ``torch.amin``."""
    return Amax.apply(x, _axes(x, axis, dim, "amin"), pick_keep(keepdims, keepdim), np.min)


MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])


class ArgExtreme(Function):
    """Values at ``indices`` along one axis (the max or min with its index, as torch).

    The gradient flows to the chosen index only, as PyTorch's ``max(dim)``.
    """

    @staticmethod
    def forward(ctx, x, axis, keepdims, indices):
        # ``indices`` has the kept shape (size 1 along ``axis``).
        ctx.mask = np.arange(x.shape[axis]).reshape(
            [-1 if i == axis else 1 for i in range(x.ndim)]
        ) == indices
        ctx.kept = indices.shape
        values = np.take_along_axis(x, indices, axis=axis)
        return values if keepdims else np.squeeze(values, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        coef = ctx.mask.astype(grad.dtype)
        return grad.reshape(ctx.kept) * coef, None, None, None


def _extreme(x, dim, keepdim, axis, keepdims, which, result, name):
    dim = pick_axis(axis, dim)
    keep = pick_keep(keepdims, keepdim)
    if isinstance(dim, Tensor | np.ndarray):  # torch.max(a, b): elementwise
        from ._arith import maximum, minimum

        return (maximum if which is np.argmax else minimum)(x, dim)
    if dim is None:
        reduce = np.max if which is np.argmax else np.min
        return Amax.apply(x, _axes(x, None, None, name), keep, reduce)
    if not isinstance(dim, int | np.integer):
        raise TypeError(
            f"{name}: dim must be an int (it returns values and indices), got {dim!r}; "
            f"use a{name}(x, dim=...) to reduce over several dims"
        )
    (a,) = _axes(x, dim, None, name)
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    if data.shape[a] == 0:
        raise ValueError(f"{name}: cannot reduce over dim {dim} of size 0 (shape {data.shape})")
    indices = np.expand_dims(which(data, axis=a), a).astype(np.int64)
    values = ArgExtreme.apply(x, a, keep, indices)
    return result(values, Tensor._make(indices if keep else np.squeeze(indices, axis=a)))


def max(x, dim=None, keepdim=False, *, axis=None, keepdims=False):  # noqa: A001
    """The maximum, as ``torch.max``.

    ``max(x)`` is the largest value (a 0-d tensor); ``max(x, dim)`` is a named pair
    ``(values, indices)`` along ``dim`` (the first index among ties, as PyTorch on
    the CPU; the gradient goes to that index); ``max(x, other)`` with a tensor
    ``other`` is the elementwise maximum.  ``axis``/``keepdims`` are numpy's names
    for ``dim``/``keepdim``; :func:`amax` reduces over several dims.
    """
    return _extreme(x, dim, keepdim, axis, keepdims, np.argmax, MaxResult, "max")


def min(x, dim=None, keepdim=False, *, axis=None, keepdims=False):  # noqa: A001
    """The minimum, as ``torch.min``: the value, a ``(values, indices)`` pair, or elementwise."""
    return _extreme(x, dim, keepdim, axis, keepdims, np.argmin, MinResult, "min")


def var(x, axis=None, correction=1, keepdims=False, *, dim=None, keepdim=False):
    """Variance over ``axis`` with ``correction`` (1: unbiased, torch's default; 0: biased)."""
    axes = _axes(x, axis, dim, "var")
    n = int(np.prod([x.shape[a] for a in axes]))
    d = x - x.mean(axis=axes, keepdims=True)
    return (d * d).sum(axis=axes, keepdims=pick_keep(keepdims, keepdim)) * (
        1.0 / np.maximum(n - correction, 0)
    )


def _arg(which, name):
    def arg(x, axis=None, keepdims=False, *, dim=None, keepdim=False):
        axis = pick_axis(axis, dim)
        data = x._data if isinstance(x, Tensor) else np.asarray(x)
        out = which(data, axis=axis, keepdims=pick_keep(keepdims, keepdim))
        return Tensor._make(np.asarray(out, dtype=np.int64))

    arg.__name__ = name
    arg.__doc__ = f"Indices of the {name[3:]} along ``axis`` (flattened when None), int64."
    return arg


argmax = _arg(np.argmax, "argmax")
argmin = _arg(np.argmin, "argmin")


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=False):
    """Standard deviation, as ``torch.std``: ``sqrt(var)`` over ``dim``.

    ``correction`` (keyword) is subtracted from the count (1, the default: unbiased;
    0: the population value); the older ``unbiased=True/False`` form (also
    ``std(False)``) means correction 1 or 0.
    """
    if isinstance(dim, bool):  # torch.std(x, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("std: give either unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    v = var(x, axis, correction, keepdims, dim=dim, keepdim=keepdim)
    return v.sqrt()


class Norm2(Function):
    """``sqrt(sum(x^2))`` over axes; the gradient at a zero vector is 0, as in torch."""

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        out = np.sqrt(np.sum(x * x, axis=axes, keepdims=True))
        ctx.kept, ctx.axes, ctx.out_keep = out.shape, axes, out
        ctx.save_for_backward(x)
        return out if keepdims else np.squeeze(out, axis=axes)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: the norm as a function of x, in the graph
            out = Norm2.apply(x, ctx.axes, True)
        else:
            out = Tensor._make(ctx.out_keep)
        safe = out + (ctx.out_keep == 0)  # divide by 1 where the norm is 0 (x is 0 there)
        return grad.reshape(ctx.kept) * x / safe, None, None


def norm(x, p="fro", dim=None, keepdim=False, *, axis=None, keepdims=False):
    """The vector p-norm over ``dim`` (all elements when None), as ``torch.norm``.

    ``p``: 2 or ``"fro"`` (Euclidean/Frobenius, the default), 1, ``inf``/``-inf``
    (largest/smallest absolute value), 0 (count of non-zeros) or any other number
    (``sum(|x|^p)^(1/p)``).
    """
    axes = _axes(x, axis, dim, "norm")
    keep = pick_keep(keepdims, keepdim)
    if x.dtype.kind != "f":
        raise TypeError(f"norm: expected a float tensor, got {x.dtype}")
    if p in ("fro", 2, 2.0):
        return Norm2.apply(x, axes, keep)
    if isinstance(p, str) or not isinstance(p, int | float):
        raise ValueError(f"norm: p must be a number or 'fro', got {p!r}")
    a = x.abs()
    if p == np.inf:
        return amax(a, axes, keep)
    if p == -np.inf:
        return amin(a, axes, keep)
    if p == 0:
        return Tensor._make(np.asarray(np.sum(x._data != 0, axis=axes, keepdims=keep),
                                       dtype=x.dtype))
    if p == 1:
        return a.sum(axis=axes, keepdims=keep)
    return (a ** float(p)).sum(axis=axes, keepdims=keep) ** (1.0 / p)
