"""Shape ops PyTorch users reach for first: ``t``, ``repeat``, ``flip``, ``chunk``, ``split``.

All are differentiable: ``repeat`` sums the copies back, ``flip`` flips the
gradient, and ``chunk``/``split`` are slices (``x[..., a:b]``) of the input.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function
from ._shape import getitem, transpose
from ._util import normalize_axes

__all__ = ["chunk", "flip", "repeat", "split", "t"]


class Repeat(Function):
    @staticmethod
    def forward(ctx, x, reps):
        ctx.in_shape = (1,) * (len(reps) - x.ndim) + x.shape  # leading dims added, as torch
        ctx.reps, ctx.x_shape = reps, x.shape
        return np.tile(x, reps)

    @staticmethod
    def backward(ctx, grad):
        # Output dim i is reps[i] copies of in_shape[i]: view it as (reps[i], in_shape[i])
        # pairs and sum over the copies.
        pairs = [n for r, s in zip(ctx.reps, ctx.in_shape, strict=True) for n in (r, s)]
        summed = grad.reshape(*pairs).sum(axis=tuple(range(0, len(pairs), 2)))
        return summed.reshape(ctx.x_shape), None


class Flip(Function):
    @staticmethod
    def forward(ctx, x, axes):
        ctx.axes = axes
        return np.flip(x, axes).copy()  # a copy, as torch.flip (no negative strides)

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, ctx.axes), None


def t(x):
    """Transpose of a matrix; a 0-d or 1-d tensor unchanged (``torch.t``)."""
    if x.ndim > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but got {x.ndim}-d")
    return x if x.ndim < 2 else transpose(x, 0, 1)


def repeat(x, *sizes):
    """``x`` repeated ``sizes[i]`` times along dim i (``torch.Tensor.repeat``, numpy's tile)."""
    if len(sizes) == 1 and isinstance(sizes[0], tuple | list):
        sizes = tuple(sizes[0])
    if not all(isinstance(n, int | np.integer) and n >= 0 for n in sizes):
        raise ValueError(f"repeat: sizes must be non-negative ints, got {sizes}")
    if len(sizes) < x.ndim:
        raise ValueError(
            f"repeat: number of repeat dims ({len(sizes)}) can not be smaller than the number "
            f"of dims of the tensor ({x.ndim})"
        )
    sizes = tuple(int(n) for n in sizes)
    return Repeat.apply(x, sizes)


def flip(x, dims):
    """Reverse the order of elements along ``dims`` (an int or a sequence), as torch.flip."""
    axes = normalize_axes(dims, x.ndim, "flip")
    return Flip.apply(x, axes)


def _slices(x, axis, bounds):
    pre = (slice(None),) * axis
    return tuple(getitem(x, (*pre, slice(a, b))) for a, b in bounds)


def split(x, split_size_or_sections, dim=0):
    """Pieces of ``x`` along ``dim``: of ``split_size`` each (the last may be shorter), or
    of the listed sizes (which must add up to the dim), as ``torch.split``."""
    (axis,) = normalize_axes(dim, x.ndim, "split")
    n = x.shape[axis]
    sizes = split_size_or_sections
    if isinstance(sizes, int | np.integer):
        if sizes <= 0:
            raise ValueError(f"split: split_size must be a positive int, got {sizes}")
        starts = range(0, max(n, 1), int(sizes))
        bounds = [(a, min(a + int(sizes), n)) for a in starts]
    else:
        sizes = [int(s) for s in sizes]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ValueError(
                f"split: sizes {sizes} must be non-negative and add up to {n} (dim {dim})"
            )
        ends = np.cumsum(sizes).tolist()
        bounds = list(zip([0, *ends[:-1]], ends, strict=True))
    return _slices(x, axis, bounds)


def chunk(x, chunks, dim=0):
    """``x`` split into ``chunks`` pieces along ``dim`` (each ``ceil(n / chunks)`` long, so
    there may be fewer pieces), as ``torch.chunk``."""
    if not isinstance(chunks, int | np.integer) or chunks <= 0:
        raise ValueError(f"chunk: chunks must be a positive int, got {chunks!r}")
    (axis,) = normalize_axes(dim, x.ndim, "chunk")
    n = x.shape[axis]
    return split(x, max(-(-n // int(chunks)), 1), dim)
