"""3-D max and average pooling on plain ndarrays (kernels in ``pyx/_pool3d.pyx``).

The 3-D twins of :mod:`sandbox.array.pool`, with PyTorch's (CPU) semantics:
``stride=None`` means ``stride=kernel_size``; padding is ``-inf`` for max pooling
and zeros for average pooling and may be at most half the kernel size; with
``ceil_mode`` the last window may run past the input but must start inside the
input or its left padding.  Max pooling returns flat argmax indices inside each
``D * H * W`` volume (PyTorch's ``return_indices``).
"""

from __future__ import annotations

import numpy as np

from .._C import _pool3d
from ..runtime.threads import kernel_threads
from ._validate import check_divisor, check_float
from .pool import check_pool, gather_flat

__all__ = [
    "avg_pool3d",
    "avg_pool3d_backward",
    "max_pool3d",
    "max_pool3d_backward",
    "max_pool3d_gather",
]


def _check_pool(input, kernel_size, stride, padding, dilation, ceil_mode, name):
    return check_pool(input, kernel_size, stride, padding, dilation, ceil_mode, name, 3)


def _volumes(arr):
    """View (..., D, H, W) as C-contiguous (P, D, H, W)."""
    return np.ascontiguousarray(arr).reshape(-1, *arr.shape[-3:])


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling, as ``torch.nn.functional.max_pool3d(..., return_indices=True)``.

    Parameters
    ----------
    input : ndarray, shape (N, C, D, H, W) or (C, D, H, W), float32 or float64
    kernel_size, stride, padding, dilation : int or (int, int, int)
        ``stride=None`` means ``kernel_size``; ``padding <= kernel_size // 2``.
    ceil_mode : bool
        Use ceil instead of floor for the output size.

    Returns
    -------
    out : ndarray, shape (..., D_out, H_out, W_out), dtype of ``input``
    indices : ndarray of int64, same shape: flat index ``(d * H + h) * W + w`` of
        each maximum in its volume (first maximum on ties; NaN wins).
    """
    geom, out_size = _check_pool(input, kernel_size, stride, padding, dilation, ceil_mode,
                                 "max_pool3d")
    x = _volumes(input)
    out = np.empty((x.shape[0], *out_size), dtype=input.dtype)
    idx = np.empty((x.shape[0], *out_size), dtype=np.int64)
    if geom == (2,) * 6 + (0,) * 3 + (1,) * 3 and all(  # not so with ceil_mode
            2 * o <= n for o, n in zip(out_size, x.shape[1:], strict=True)):
        _pool3d.maxpool2x2x2_forward(x, out, idx, kernel_threads(x.size))
    else:
        _pool3d.maxpool3d_forward(x, out, idx, *geom, kernel_threads(x.size))
    shape = (*input.shape[:-3], *out_size)
    return out.reshape(shape), idx.reshape(shape)


def max_pool3d_backward(grad_output, indices, input_shape):
    """Gradient of :func:`max_pool3d`: scatter ``grad_output`` to ``indices``.

    Parameters
    ----------
    grad_output : ndarray, shape (..., D_out, H_out, W_out), float32 or float64
    indices : ndarray of int64, same shape (from :func:`max_pool3d`)
    input_shape : tuple
        Shape of the pooled input.
    """
    check_float(grad_output, "grad_output")
    if indices.shape != grad_output.shape:
        raise ValueError(
            f"indices shape {indices.shape} must match grad_output shape {grad_output.shape}")
    vol = int(np.prod(input_shape[-3:]))
    g = np.ascontiguousarray(grad_output).reshape(-1, int(np.prod(grad_output.shape[-3:])))
    ind = np.ascontiguousarray(indices, dtype=np.int64).reshape(g.shape)
    gin = np.empty((g.shape[0], vol), dtype=grad_output.dtype)
    _pool3d.maxpool3d_backward(g, ind, gin, kernel_threads(gin.size))
    return gin.reshape(input_shape)


def max_pool3d_gather(input, indices):
    """Adjoint of :func:`max_pool3d_backward`: read ``input`` at ``indices`` per volume.

    Parameters
    ----------
    input : ndarray, shape (..., D, H, W), float32 or float64
    indices : ndarray of int64, shape (..., D_out, H_out, W_out) with the leading dims
        of ``input`` (from :func:`max_pool3d`).

    Returns
    -------
    ndarray, shape of ``indices``, dtype of ``input``.
    """
    return gather_flat(input, indices, 3)


def _check_avg(input, kernel_size, stride, padding, ceil_mode, divisor_override):
    geom, size = _check_pool(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool3d")
    return geom[:9], size, check_divisor(divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling, as ``torch.nn.functional.avg_pool3d``.

    Parameters
    ----------
    input : ndarray, shape (N, C, D, H, W) or (C, D, H, W), float32 or float64
    kernel_size, stride, padding : int or (int, int, int)
        ``stride=None`` means ``kernel_size``; ``padding <= kernel_size // 2``.
    ceil_mode : bool
    count_include_pad : bool
        Count zero padding in the divisor.
    divisor_override : int, optional
        Fixed positive divisor.
    """
    geom, out_size, divisor = _check_avg(input, kernel_size, stride, padding, ceil_mode,
                                         divisor_override)
    x = _volumes(input)
    out = np.empty((x.shape[0], *out_size), dtype=input.dtype)
    _pool3d.avgpool3d_forward(x, out, *geom, bool(count_include_pad), divisor,
                              kernel_threads(x.size))
    return out.reshape(*input.shape[:-3], *out_size)


def avg_pool3d_backward(grad_output, input_shape, kernel_size, stride=None, padding=0,
                        ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Gradient of :func:`avg_pool3d` with respect to its input (shape ``input_shape``)."""
    check_float(grad_output, "grad_output")
    probe = np.empty((1, 1, *input_shape[-3:]), dtype=grad_output.dtype)
    geom, out_size, divisor = _check_avg(probe, kernel_size, stride, padding, ceil_mode,
                                         divisor_override)
    if grad_output.shape[-3:] != out_size:
        raise ValueError(f"grad_output spatial shape {grad_output.shape[-3:]} must be "
                         f"{out_size} for input shape {tuple(input_shape)}")
    g = _volumes(grad_output)
    gin = np.empty((g.shape[0], *input_shape[-3:]), dtype=grad_output.dtype)
    _pool3d.avgpool3d_backward(g, gin, *geom, bool(count_include_pad), divisor,
                               kernel_threads(gin.size))
    return gin.reshape(input_shape)
