"""2-D max and average pooling on plain ndarrays (kernels in ``pyx/_pool.pyx``).

Semantics follow PyTorch (CPU): ``stride=None`` means ``stride=kernel_size``;
padding is ``-inf`` for max pooling and zeros for average pooling and may be at
most half the kernel size; with ``ceil_mode`` the last window may run past the
input but must start inside the input or its left padding.  Max pooling returns
flat argmax indices inside each ``H * W`` plane (PyTorch's ``return_indices``).
"""

from __future__ import annotations

import numpy as np

from .._C import _pool
from ..runtime.threads import kernel_threads
from ._validate import check_divisor, check_float, ntuple

__all__ = [
    "avg_pool2d",
    "avg_pool2d_backward",
    "max_pool2d",
    "max_pool2d_backward",
    "max_pool2d_gather",
    "pool_output_size",
]


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


def check_pool(input, kernel_size, stride, padding, dilation, ceil_mode, name, nd=2):
    """Validate a pooling call of spatial rank ``nd``; return ``(geom, out_size)`` with
    ``geom`` = kernel, stride, padding and dilation (``nd`` ints each)."""
    check_float(input, "input")
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError(f"input must be {_LAYOUTS[nd]}, got shape {input.shape}")
    what = {2: "pair", 3: "triple"}[nd]
    k = ntuple(kernel_size, "kernel_size", 1, nd, what)
    s = k if stride is None or stride == () else ntuple(stride, "stride", 1, nd, what)
    p = ntuple(padding, "padding", 0, nd, what)
    d = ntuple(dilation, "dilation", 1, nd, what)
    if any(p[i] > k[i] // 2 for i in range(nd)):
        raise ValueError(f"padding {p} must be at most half of kernel_size {k}")
    size = tuple(input.shape[-nd:])
    out = tuple(pool_output_size(size[i], k[i], s[i], p[i], d[i], bool(ceil_mode))
                for i in range(nd))
    if min(out) <= 0:
        raise ValueError(
            f"{name}: output size {out} is not positive: input spatial size {size} is too "
            f"small for kernel_size {k} (dilation {d}, padding {p})")
    return (*k, *s, *p, *d), out


def _check_pool(input, kernel_size, stride, padding, dilation, ceil_mode, name):
    return check_pool(input, kernel_size, stride, padding, dilation, ceil_mode, name, 2)


def _planes(arr):
    """View (..., H, W) as C-contiguous (P, H, W)."""
    return np.ascontiguousarray(arr).reshape(-1, *arr.shape[-2:])


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling, as ``torch.nn.functional.max_pool2d(..., return_indices=True)``.

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W) or (C, H, W), float32 or float64
    kernel_size, stride, padding, dilation : int or (int, int)
        ``stride=None`` means ``kernel_size``; ``padding <= kernel_size // 2``.
    ceil_mode : bool
        Use ceil instead of floor for the output size.

    Returns
    -------
    out : ndarray, shape (..., H_out, W_out), dtype of ``input``
    indices : ndarray of int64, same shape: flat index ``h * W + w`` of each
        maximum in its plane (first maximum on ties; NaN wins).
    """
    (kh, kw, sh, sw, ph, pw, dh, dw), (ho, wo) = _check_pool(
        input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    x = _planes(input)
    out = np.empty((x.shape[0], ho, wo), dtype=input.dtype)
    idx = np.empty((x.shape[0], ho, wo), dtype=np.int64)
    full_windows = 2 * ho <= x.shape[1] and 2 * wo <= x.shape[2]  # not so with ceil_mode
    if (kh, kw, sh, sw, ph, pw, dh, dw) == (2, 2, 2, 2, 0, 0, 1, 1) and full_windows:
        _pool.maxpool2x2_forward(x, out, idx, kernel_threads(x.size))
    else:
        _pool.maxpool2d_forward(x, out, idx, kh, kw, sh, sw, ph, pw, dh, dw, kernel_threads(x.size))
    shape = (*input.shape[:-2], ho, wo)
    return out.reshape(shape), idx.reshape(shape)


def max_pool2d_backward(grad_output, indices, input_shape):
    """Gradient of :func:`max_pool2d`: scatter ``grad_output`` to ``indices``.

    Parameters
    ----------
    grad_output : ndarray, shape (..., H_out, W_out), float32 or float64
    indices : ndarray of int64, same shape (from :func:`max_pool2d`)
    input_shape : tuple
        Shape of the pooled input.
    """
    check_float(grad_output, "grad_output")
    if indices.shape != grad_output.shape:
        raise ValueError(
            f"indices shape {indices.shape} must match grad_output shape {grad_output.shape}")
    g = _planes(grad_output)
    ind = np.ascontiguousarray(indices, dtype=np.int64).reshape(g.shape)
    gin = np.empty((g.shape[0], *input_shape[-2:]), dtype=grad_output.dtype)
    _pool.maxpool2d_backward(g, ind, gin, kernel_threads(gin.size))
    return gin.reshape(input_shape)


def max_pool2d_gather(input, indices):
    """Adjoint of :func:`max_pool2d_backward`: read ``input`` at ``indices`` per plane.

    Parameters
    ----------
    input : ndarray, shape (..., H, W), float32 or float64
    indices : ndarray of int64, shape (..., H_out, W_out) with the leading dims of
        ``input``: flat indices ``h * W + w`` inside each plane (from :func:`max_pool2d`).

    Returns
    -------
    ndarray, shape of ``indices``, dtype of ``input``: ``input[..., h, w]`` at each index.
    """
    return gather_flat(input, indices, 2)


def gather_flat(input, indices, nd: int):
    """``input`` at flat indices into its last ``nd`` axes (the max-pool gather of any
    rank); ``indices`` has the leading dims of ``input``."""
    check_float(input, "input")
    if indices.ndim != input.ndim or indices.shape[:-nd] != input.shape[:-nd]:
        raise ValueError(
            f"indices shape {indices.shape} must have the leading dims of input shape "
            f"{input.shape}")
    x = np.ascontiguousarray(input).reshape(-1, int(np.prod(input.shape[-nd:])))
    ind = np.ascontiguousarray(indices, dtype=np.int64).reshape(x.shape[0], -1)
    return np.take_along_axis(x, ind, axis=1).reshape(indices.shape)


def _check_avg(input, kernel_size, stride, padding, ceil_mode, divisor_override):
    geom, size = _check_pool(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    return geom[:6], size, check_divisor(divisor_override)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling, as ``torch.nn.functional.avg_pool2d``.

    Parameters
    ----------
    input : ndarray, shape (N, C, H, W) or (C, H, W), float32 or float64
    kernel_size, stride, padding : int or (int, int)
        ``stride=None`` means ``kernel_size``; ``padding <= kernel_size // 2``.
    ceil_mode : bool
    count_include_pad : bool
        Count zero padding in the divisor.
    divisor_override : int, optional
        Fixed positive divisor.
    """
    geom, (ho, wo), divisor = _check_avg(input, kernel_size, stride, padding, ceil_mode,
                                         divisor_override)
    x = _planes(input)
    out = np.empty((x.shape[0], ho, wo), dtype=input.dtype)
    _pool.avgpool2d_forward(x, out, *geom, bool(count_include_pad), divisor, kernel_threads(x.size))
    return out.reshape(*input.shape[:-2], ho, wo)


def avg_pool2d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Gradient of :func:`avg_pool2d` with respect to its input (shape ``input_shape``)."""
    check_float(grad_output, "grad_output")
    probe = np.empty((1, 1, *input_shape[-2:]), dtype=grad_output.dtype)
    geom, (ho, wo), divisor = _check_avg(probe, kernel_size, stride, padding, ceil_mode,
                                         divisor_override)
    if grad_output.shape[-2:] != (ho, wo):
        raise ValueError(f"grad_output spatial shape {grad_output.shape[-2:]} must be "
                         f"{(ho, wo)} for input shape {tuple(input_shape)}")
    g = _planes(grad_output)
    gin = np.empty((g.shape[0], *input_shape[-2:]), dtype=grad_output.dtype)
    threads = kernel_threads(gin.size)
    _pool.avgpool2d_backward(g, gin, *geom, bool(count_include_pad), divisor, threads)
    return gin.reshape(input_shape)
