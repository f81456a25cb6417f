"""Exercise 8: conv2d's backward via im2col.

What it teaches: ``im2col`` copies every receptive field into a column, which
turns a convolution into one matrix product ``Y = W · cols``; the backward is
then the matmul backward of exercise 6 (``dW = G · colsᵀ``, ``dcols = Wᵀ · G``)
followed by ``col2im``, the adjoint of ``im2col``, which adds overlapping
columns back into the image.

Compare with: ``sandbox.array.conv.conv2d`` and ``sandbox.array.conv.conv2d_backward`` (the
same unfold/fold structure, blocked over images and run by Cython kernels).

Run: ``python -m pytest exercises/test_ex08_conv2d_im2col.py --student``
"""

from __future__ import annotations

import numpy as np  # noqa: F401 - you will need it

from .._track import todo


def out_size(n: int, k: int, stride: int, padding: int) -> int:
    """Given: output length of a convolution along one axis."""
    return (n + 2 * padding - k) // stride + 1


def im2col(x, kh, kw, stride=1, padding=0):
    """(N, C, H, W) -> (N, C·kh·kw, Ho·Wo); row ``(c, i, j)`` holds
    ``x_padded[n, c, i + stride·oh, j + stride·ow]`` at column ``oh·Wo + ow``.

    Hint: loop over the kh·kw kernel offsets (not over pixels) and take a strided
    slice of the zero-padded image for each.
    """
    todo("im2col")


def col2im(cols, x_shape, kh, kw, stride=1, padding=0):
    """The adjoint of :func:`im2col`: add each column entry back where it was read
    (``+=``: overlapping receptive fields share pixels), then crop the padding."""
    todo("col2im")


def conv2d_forward(x, w, b=None, stride=1, padding=0):
    """Cross-correlation of (N, C, H, W) with (F, C, kh, kw), plus bias (F,) if given:
    ``w.reshape(F, -1) @ im2col(x, ...)``, reshaped to (N, F, Ho, Wo)."""
    todo("conv2d_forward")


def conv2d_backward(grad, x, w, stride=1, padding=0):
    """``(gx, gw, gb)`` of :func:`conv2d_forward` for the output gradient ``grad``.

    Hint: ``np.einsum("nfl,nkl->fk", ...)`` sums ``G_n · cols_nᵀ`` over the batch.
    """
    todo("conv2d_backward")
