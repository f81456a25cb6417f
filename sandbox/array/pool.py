"""Max and average pooling on plain ndarrays, 2-D and 3-D (kernels ``pyx/_pool.pyx``,
``pyx/_pool3d.pyx``).

:func:`max_pool`, :func:`avg_pool` and their backward take the spatial rank ``nd``
(2 or 3) or, by default, dispatch on ``ndim`` as the convolutions do (a batched
``(N, C, *spatial)`` input); ``max_pool2d``, ``avg_pool3d`` ... fix the rank and also
take an unbatched ``(C, *spatial)`` input.  Semantics follow PyTorch (CPU):
``stride=None`` means ``stride=kernel_size``; padding is ``-inf`` for max pooling and
zeros for average pooling and may be at most half the kernel size; with
``ceil_mode`` the last window may run past the input but must start inside the
input or its left padding.  Max pooling returns flat argmax indices inside each
plane or volume (PyTorch's ``return_indices``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._C import _pool, _pool3d
from ..runtime.threads import kernel_threads
from ._validate import check_divisor, check_float, ntuple
from .copy import contiguous

__all__ = [
    "AvgPoolPlan", "avg_pool", "avg_pool2d", "avg_pool2d_backward", "avg_pool3d",
    "avg_pool3d_backward", "avg_pool_backward", "check_pool", "gather_flat", "max_pool",
    "max_pool2d", "max_pool2d_backward", "max_pool2d_gather", "max_pool3d",
    "max_pool3d_backward", "max_pool3d_gather", "max_pool_backward", "max_pool_gather",
    "plan_avg_pool", "pool_output_size",
]  # fmt: skip


def pool_output_size(size: int, kernel: int, stride: int, pad: int, dilation: int = 1,
                     ceil_mode: bool = False) -> int:
    """Output length of a pooling window sweep (PyTorch's ``pooling_output_shape``)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    if ceil_mode:
        out = -(-span // stride) + 1
        # the last window must start inside the input or the left padding
        if (out - 1) * stride >= size + pad:
            out -= 1
    else:
        out = span // stride + 1
    return out


#: spatial rank -> the input layouts pooling accepts, for messages
_LAYOUTS = {2: "3-D (C, H, W) or 4-D (N, C, H, W)", 3: "4-D (C, D, H, W) or 5-D (N, C, D, H, W)"}


def _rank(input, nd):
    """``nd`` if given, else the rank of a batched input (4-D: 2, 5-D: 3)."""
    if nd is not None:
        return nd
    check_float(input, "input")
    if input.ndim not in (4, 5):
        raise ValueError(f"input must be 4-D (N, C, H, W) or 5-D (N, C, D, H, W), got shape "
                         f"{input.shape}")
    return input.ndim - 2


def check_pool(input, kernel_size, stride, padding, dilation, ceil_mode, name, nd=2):
    """Validate a pooling call of spatial rank ``nd``; return ``(geom, out_size)`` with
    ``geom`` = kernel, stride, padding and dilation (``nd`` ints each)."""
    check_float(input, "input")
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"input must be {_LAYOUTS[nd]}, got shape {input.shape}")
    k = ntuple(kernel_size, "kernel_size", 1, nd)
    s = k if stride is None or stride == () else ntuple(stride, "stride", 1, nd)
    p = ntuple(padding, "padding", 0, nd)
    d = ntuple(dilation, "dilation", 1, nd)
    for i in range(nd):
        if p[i] > k[i] // 2:
            raise ValueError(f"padding {p} must be at most half of kernel_size {k}")
    size = input.shape[-nd:]
    ceil_mode = bool(ceil_mode)
    out = tuple([pool_output_size(size[i], k[i], s[i], p[i], d[i], ceil_mode)
                 for i in range(nd)])
    if min(out) <= 0:
        raise ValueError(
            f"{name}: output size {out} is not positive: input spatial size {size} is too "
            f"small for kernel_size {k} (dilation {d}, padding {p})")
    return (*k, *s, *p, *d), out


def _planes(arr, nd):
    """View (..., *spatial) as C-contiguous (P, *spatial)."""
    return contiguous(arr).reshape(-1, *arr.shape[-nd:])


def max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, *,
             nd=None):
    """Max pooling, as ``torch.nn.functional.max_pool2d/3d(..., return_indices=True)``.

    Parameters
    ----------
    input : ndarray, shape (N, C, *spatial) or (C, *spatial), float32 or float64
    kernel_size, stride, padding, dilation : int or tuple of ``nd`` ints
        ``stride=None`` means ``kernel_size``; ``padding <= kernel_size // 2``.
    ceil_mode : bool
        Use ceil instead of floor for the output size.
    nd : int, optional
        Spatial rank (2 or 3); None: ``input.ndim - 2`` (a batched input).

    Returns
    -------
    out : ndarray, shape (..., *out_size), dtype of ``input``
    indices : ndarray of int64, same shape: flat index of each maximum in its plane
        (``h * W + w``) or volume (``(d * H + h) * W + w``); first maximum on ties,
        NaN wins.
    """
    nd = _rank(input, nd)
    geom, out_size = check_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                                f"max_pool{nd}d", nd)
    x = _planes(input, nd)
    out = np.empty((x.shape[0], *out_size), dtype=input.dtype)
    idx = np.empty((x.shape[0], *out_size), dtype=np.int64)
    # the unrolled 2x2(x2) stride-2 kernel needs full windows (not so with ceil_mode)
    unrolled = geom == (2,) * 2 * nd + (0,) * nd + (1,) * nd and all(
        [2 * o <= n for o, n in zip(out_size, x.shape[1:], strict=True)])
    threads = kernel_threads(x.size)
    if nd == 2:
        if unrolled:
            _pool.maxpool2x2_forward(x, out, idx, threads)
        else:
            _pool.maxpool2d_forward(x, out, idx, *geom, threads)
    elif unrolled:
        _pool3d.maxpool2x2x2_forward(x, out, idx, threads)
    else:
        _pool3d.maxpool3d_forward(x, out, idx, *geom, threads)
    shape = (*input.shape[:-nd], *out_size)
    return out.reshape(shape), idx.reshape(shape)


def max_pool_backward(grad_output, indices, input_shape, *, nd=None):
    """Gradient of :func:`max_pool`: scatter ``grad_output`` to ``indices``.

    Parameters
    ----------
    grad_output : ndarray, shape (..., *out_size), float32 or float64
    indices : ndarray of int64, same shape (from :func:`max_pool`)
    input_shape : tuple
        Shape of the pooled input.
    nd : int, optional
        Spatial rank; None: ``len(input_shape) - 2``.
    """
    nd = len(input_shape) - 2 if nd is None else nd
    check_float(grad_output, "grad_output")
    if indices.shape != grad_output.shape:
        raise ValueError(
            f"indices shape {indices.shape} must match grad_output shape {grad_output.shape}")
    if nd == 2:
        g = _planes(grad_output, 2)
        ind = np.ascontiguousarray(indices, dtype=np.int64).reshape(g.shape)
        gin = np.empty((g.shape[0], *input_shape[-2:]), dtype=grad_output.dtype)
        _pool.maxpool2d_backward(g, ind, gin, kernel_threads(gin.size))
        return gin.reshape(input_shape)
    vol = math.prod(input_shape[-3:])
    g = contiguous(grad_output).reshape(-1, math.prod(grad_output.shape[-3:]))
    ind = np.ascontiguousarray(indices, dtype=np.int64).reshape(g.shape)
    gin = np.empty((g.shape[0], vol), dtype=grad_output.dtype)
    _pool3d.maxpool3d_backward(g, ind, gin, kernel_threads(gin.size))
    return gin.reshape(input_shape)


def max_pool_gather(input, indices, *, nd=None):
    """Adjoint of :func:`max_pool_backward`: read ``input`` at ``indices`` per plane.

    ``indices`` (int64, from :func:`max_pool`) has the leading dims of ``input``; the
    result has the shape of ``indices`` and the dtype of ``input``.
    """
    return gather_flat(input, indices, input.ndim - 2 if nd is None else nd)


def gather_flat(input, indices, nd: int):
    """``input`` at flat indices into its last ``nd`` axes (the max-pool gather of any
    rank); ``indices`` has the leading dims of ``input``."""
    check_float(input, "input")
    if indices.ndim != input.ndim or indices.shape[:-nd] != input.shape[:-nd]:
        raise ValueError(
            f"indices shape {indices.shape} must have the leading dims of input shape "
            f"{input.shape}")
    x = contiguous(input).reshape(-1, int(np.prod(input.shape[-nd:])))
    ind = np.ascontiguousarray(indices, dtype=np.int64).reshape(x.shape[0], -1)
    return np.take_along_axis(x, ind, axis=1).reshape(indices.shape)


class AvgPoolPlan(NamedTuple):
    """A validated average-pooling call: rank, kernel/stride/padding (``nd`` ints each),
    spatial output size and the kernels' divisor (0: none)."""

    nd: int
    geom: tuple
    out_size: tuple
    divisor: int


def plan_avg_pool(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                  divisor_override=None, *, nd=None) -> AvgPoolPlan:
    """Validate an :func:`avg_pool` call once; its forward and backward take the plan."""
    nd = _rank(input, nd)
    geom, size = check_pool(input, kernel_size, stride, padding, 1, ceil_mode,
                            f"avg_pool{nd}d", nd)
    return AvgPoolPlan(nd, geom[:3 * nd], size, check_divisor(divisor_override))


def avg_pool(input, kernel_size, stride=None, padding=0, ceil_mode=False,
             count_include_pad=True, divisor_override=None, *, nd=None, plan=None):
    """Average pooling, as ``torch.nn.functional.avg_pool2d/3d``.

    Parameters
    ----------
    input : ndarray, shape (N, C, *spatial) or (C, *spatial), float32 or float64
    kernel_size, stride, padding : int or tuple of ``nd`` ints
        ``stride=None`` means ``kernel_size``; ``padding <= kernel_size // 2``.
    ceil_mode : bool
    count_include_pad : bool
        Count zero padding in the divisor.
    divisor_override : int, optional
        Fixed positive divisor.
    nd : int, optional
        Spatial rank (2 or 3); None: ``input.ndim - 2``.
    plan : AvgPoolPlan, optional
        From :func:`plan_avg_pool` for these arguments: skips the validation.
    """
    if plan is None:
        plan = plan_avg_pool(input, kernel_size, stride, padding, ceil_mode, divisor_override,
                             nd=nd)
    nd = plan.nd
    x = _planes(input, nd)
    out = np.empty((x.shape[0], *plan.out_size), dtype=input.dtype)
    kernel = _pool.avgpool2d_forward if nd == 2 else _pool3d.avgpool3d_forward
    kernel(x, out, *plan.geom, bool(count_include_pad), plan.divisor, kernel_threads(x.size))
    return out.reshape(*input.shape[:-nd], *plan.out_size)


def avg_pool_backward(grad_output, input_shape, kernel_size, stride=None, padding=0,
                      ceil_mode=False, count_include_pad=True, divisor_override=None, *,
                      nd=None, plan=None):
    """Gradient of :func:`avg_pool` with respect to its input (shape ``input_shape``);
    ``plan`` (the forward's) skips the validation."""
    if plan is None:
        nd = len(input_shape) - 2 if nd is None else nd
        check_float(grad_output, "grad_output")
        probe = np.empty((1, 1, *input_shape[-nd:]), dtype=grad_output.dtype)
        plan = plan_avg_pool(probe, kernel_size, stride, padding, ceil_mode, divisor_override,
                             nd=nd)
        if grad_output.shape[-nd:] != plan.out_size:
            raise ValueError(f"grad_output spatial shape {grad_output.shape[-nd:]} must be "
                             f"{plan.out_size} for input shape {tuple(input_shape)}")
    nd = plan.nd
    g = _planes(grad_output, nd)
    gin = np.empty((g.shape[0], *input_shape[-nd:]), dtype=grad_output.dtype)
    kernel = _pool.avgpool2d_backward if nd == 2 else _pool3d.avgpool3d_backward
    kernel(g, gin, *plan.geom, bool(count_include_pad), plan.divisor, kernel_threads(gin.size))
    return gin.reshape(input_shape)


# The rank-fixed names (PyTorch's), which also take unbatched inputs.

def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """2-D :func:`max_pool` of ``(N, C, H, W)`` or ``(C, H, W)``; returns (out, indices)."""
    return max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, nd=2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """3-D :func:`max_pool` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    return max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, nd=3)


def max_pool2d_backward(grad_output, indices, input_shape):
    """Gradient of :func:`max_pool2d` (see :func:`max_pool_backward`)."""
    return max_pool_backward(grad_output, indices, input_shape, nd=2)


def max_pool3d_backward(grad_output, indices, input_shape):
    """Gradient of :func:`max_pool3d` (see :func:`max_pool_backward`)."""
    return max_pool_backward(grad_output, indices, input_shape, nd=3)


def max_pool2d_gather(input, indices):
    """Adjoint of :func:`max_pool2d_backward` (see :func:`max_pool_gather`)."""
    return gather_flat(input, indices, 2)


def max_pool3d_gather(input, indices):
    """Adjoint of :func:`max_pool3d_backward` (see :func:`max_pool_gather`)."""
    return gather_flat(input, indices, 3)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D :func:`avg_pool` of ``(N, C, H, W)`` or ``(C, H, W)``."""
    return avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override, nd=2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D :func:`avg_pool` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    return avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override, nd=3)


def avg_pool2d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Gradient of :func:`avg_pool2d` (see :func:`avg_pool_backward`)."""
    return avg_pool_backward(grad_output, input_shape, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override, nd=2)


def avg_pool3d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Gradient of :func:`avg_pool3d` (see :func:`avg_pool_backward`)."""
    return avg_pool_backward(grad_output, input_shape, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override, nd=3)
