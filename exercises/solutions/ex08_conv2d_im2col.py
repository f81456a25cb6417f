"""Exercise 8: conv2d's backward via im2col.

What it teaches: ``im2col`` copies every receptive field into a column, which
turns a convolution into one matrix product ``Y = W · cols``; the backward is
then the matmul backward of exercise 6 (``dW = G · colsᵀ``, ``dcols = Wᵀ · G``)
followed by ``col2im``, the adjoint of ``im2col``, which adds overlapping
columns back into the image.

Compare with: ``sandbox.array.conv.conv2d`` and ``sandbox.array.conv.conv2d_backward`` (the
same unfold/fold structure, blocked over images and run by Cython kernels).
"""

from __future__ import annotations

import numpy as np


def out_size(n: int, k: int, stride: int, padding: int) -> int:
    return (n + 2 * padding - k) // stride + 1


def im2col(x, kh, kw, stride=1, padding=0):
    """(N, C, H, W) -> (N, C·kh·kw, Ho·Wo); row ``(c, i, j)`` holds
    ``x_padded[n, c, i + stride·oh, j + stride·ow]`` at column ``oh·Wo + ow``."""
    n, c, h, w = x.shape
    ho, wo = out_size(h, kh, stride, padding), out_size(w, kw, stride, padding)
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    cols = np.empty((n, c, kh, kw, ho, wo), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride]
    return cols.reshape(n, c * kh * kw, ho * wo)


def col2im(cols, x_shape, kh, kw, stride=1, padding=0):
    """The adjoint of :func:`im2col`: add each column entry back where it was read."""
    n, c, h, w = x_shape
    ho, wo = out_size(h, kh, stride, padding), out_size(w, kw, stride, padding)
    cols = cols.reshape(n, c, kh, kw, ho, wo)
    xp = np.zeros((n, c, h + 2 * padding, w + 2 * padding), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            xp[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride] += cols[:, :, i, j]
    return xp[:, :, padding : padding + h, padding : padding + w]


def conv2d_forward(x, w, b=None, stride=1, padding=0):
    """Cross-correlation of (N, C, H, W) with (F, C, kh, kw), plus bias (F,)."""
    n, _, h, width = x.shape
    f, _, kh, kw = w.shape
    cols = im2col(x, kh, kw, stride, padding)
    y = w.reshape(f, -1) @ cols  # (F, CKK) @ (N, CKK, L) -> (N, F, L)
    if b is not None:
        y += b[:, None]
    ho, wo = out_size(h, kh, stride, padding), out_size(width, kw, stride, padding)
    return y.reshape(n, f, ho, wo)


def conv2d_backward(grad, x, w, stride=1, padding=0):
    """``(gx, gw, gb)`` of :func:`conv2d_forward` for the output gradient ``grad``."""
    n, f = grad.shape[:2]
    kh, kw = w.shape[2:]
    cols = im2col(x, kh, kw, stride, padding)
    g = grad.reshape(n, f, -1)  # (N, F, L)
    gw = np.einsum("nfl,nkl->fk", g, cols).reshape(w.shape)  # sum_n G_n cols_nᵀ
    gcols = w.reshape(f, -1).T @ g  # (CKK, F) @ (N, F, L) -> (N, CKK, L)
    gx = col2im(gcols, x.shape, kh, kw, stride, padding)
    gb = grad.sum(axis=(0, 2, 3))
    return gx, gw, gb
