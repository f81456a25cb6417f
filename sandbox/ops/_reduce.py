"""Reductions: sum, mean, max/min, var; argmax/argmin (not differentiable)."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor
from ._util import normalize_axes, pick_axis, pick_keep


def _kept_shape(shape, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


class Sum(Function):
    @staticmethod
    def forward(ctx, x, axes, keepdims):
        ctx.shape = x.shape
        ctx.kept = _kept_shape(x.shape, axes)
        return np.sum(x, axis=axes, keepdims=keepdims)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.kept).expand(ctx.shape), None, None


class Mean(Function):
    @staticmethod
    def forward(ctx, x, axes, keepdims):
        ctx.shape = x.shape
        ctx.kept = _kept_shape(x.shape, axes)
        ctx.count = int(np.prod([x.shape[a] for a in axes]))
        if ctx.count == 0:  # the mean of nothing: NaN, as torch (numpy would also warn)
            return np.full(np.sum(x, axis=axes, keepdims=keepdims).shape, np.nan, x.dtype)
        return np.mean(x, axis=axes, keepdims=keepdims)

    @staticmethod
    def backward(ctx, grad):
        scale = 1.0 / (ctx.count or 1)  # count 0: x is empty, and so is its gradient
        return (grad.reshape(ctx.kept) * scale).expand(ctx.shape), None, None


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


def max(x, axis=None, keepdims=False, *, dim=None, keepdim=False):  # noqa: A001
    """Maximum values over ``axis`` (values only, as ``torch.amax``; ties share the grad)."""
    return Amax.apply(x, _axes(x, axis, dim, "max"), pick_keep(keepdims, keepdim), np.max)


def min(x, axis=None, keepdims=False, *, dim=None, keepdim=False):  # noqa: A001
    """Minimum values over ``axis`` (values only, as ``torch.amin``)."""
    return Amax.apply(x, _axes(x, axis, dim, "min"), pick_keep(keepdims, keepdim), np.min)


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
