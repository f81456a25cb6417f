"""1x1 and 1x1x1 convolutions (stride 1, no padding, one group): a batch of matrix
products, in 2-D and 3-D alike.

A 1x1 convolution of (N, C, H, W) is, per sample, ``y[n] = W @ x[n]`` with ``W`` (O, C)
and ``x[n]`` (C, H*W): no im2col at all (in 3-D, ``x[n]`` is (C, D*H*W) and there is
no vol2col).  The im2col loops ran it chunk by chunk on the
worker pool, a GEMM and two copies a chunk and 15-25 µs of Python each, 0.2-0.35 ms for
layers of a few MFLOP whatever their size.  Here each pass is one batched product inside
one kernel call (:func:`sandbox.array._gemm.matmul` shares the samples' products among
the threads; each product is one thread's, so the bits do not depend on their number):

* forward ``y[n] = W @ x[n]`` and input gradient ``gx[n] = W.T @ g[n]``, with ``W`` read
  in place by every product (a stride-0 batch of :func:`~sandbox.array._gemm.lhs`'s
  layout);
* weight gradient ``sum_n g[n] @ x[n].T``: one (O, C) product a sample (the dot-product
  form: long K = H*W), then the samples' partial sums added in sample order.

Where the weight has fewer than :data:`NARROW_SIDE` rows or columns (a segmentation
head of a few classes, and its input gradient), forward and input gradient are
:func:`sandbox._C._gemm.narrow_products`: each output row built over blocks of columns on
every thread, instead of one BLAS product a sample on one thread (measured on an AMD EPYC
family 26 model 2, Zen 5, a 16 -> 2 head at 64² and 128², batch 8: see
:data:`NARROW_SIDE`).  Elsewhere, where the project's kernel does not take the products
(float64), one product a sample (:func:`~._chunks.sample_products`).  An empty batch
never reaches here (``sandbox.array.conv`` answers it).
"""

from __future__ import annotations

import math

import numpy as np

from ..._C import _gemm
from ...runtime.threads import kernel_threads
from .._gemm import lhs
from ._chunks import add_bias, sample_products

__all__ = ["NARROW_SIDE", "backward", "eligible", "forward", "input_grad", "weight_grad"]

#: forward and input gradient take the narrow-product kernel when the weight matrix (its
#: transpose for the input gradient) has fewer rows or columns than this: the shapes the
#: GEMMs leave to BLAS (``sandbox.array._gemm.product_form``: a register tile of 8 rows
#: or a depth of 8 wasted there).  Measured on an AMD EPYC family 26 model 2 (Zen 5),
#: batch 8, narrow kernel over BLAS a sample (``python
#: benchmarks/bench_pointwise_narrow.py --threads 1 2``), forward / input gradient of a
#: 16 -> 2 head: 0.61 / 0.68 (64²) and 0.65 / 0.75 (128²) at 1 thread, 0.32 / 0.36 and
#: 0.33 / 0.44 at 2; other heads in docs/convolution.md.
NARROW_SIDE = 8


def _narrow(a, x3, y3) -> bool:
    """``y3[n] = a @ x3[n]`` (``x3`` (N, K, P), ``y3`` (N, M, P) C-contiguous) on the
    narrow-product kernel when ``a`` (M, K) has a side under :data:`NARROW_SIDE`; False
    (nothing done) otherwise."""
    if min(a.shape) >= NARROW_SIDE or x3.dtype not in (np.float32, np.float64):
        return False
    _gemm.narrow_products(np.ascontiguousarray(a, dtype=x3.dtype), x3, y3,
                          kernel_threads(y3.size * a.shape[1]))
    return True


def eligible(plan) -> bool:
    """Whether a convolution's :class:`~._checks.ConvPlan` (2-D or 3-D) is a batch of
    products: a 1x1 (1x1x1) kernel, stride 1, no padding, one group (dilation does
    not matter for a one-tap kernel)."""
    ones, zeros = (1,) * plan.nd, (0,) * plan.nd
    return (plan.groups == 1 and plan.kernel == ones and plan.stride == ones
            and plan.padding == zeros)


def forward(x, wmat, bias, y) -> None:
    """``y = conv(x, W) (+ bias)`` for ``wmat`` (O, C); ``x`` (N, C, *size) and ``y``
    (N, O, *size) C-contiguous, ``y`` overwritten."""
    n, c = x.shape[:2]
    o, plane = wmat.shape[0], math.prod(x.shape[2:])
    if not _narrow(wmat, x.reshape(n, c, plane), y.reshape(n, o, plane)):
        w = lhs(wmat)
        sample_products(np.broadcast_to(w, (n, o, c)), x.reshape(n, c, plane),
                        y.reshape(n, o, plane))
    add_bias(y, bias)


def input_grad(grad_output, wmat, gx) -> None:
    """``gx = W.T @ g`` per sample: the input gradient (N, C, *size), overwritten."""
    n, o = grad_output.shape[:2]
    c, plane = wmat.shape[1], math.prod(grad_output.shape[2:])
    if _narrow(wmat.T, grad_output.reshape(n, o, plane), gx.reshape(n, c, plane)):
        return
    w = lhs(np.ascontiguousarray(wmat.T))
    sample_products(np.broadcast_to(w, (n, c, o)), grad_output.reshape(n, o, plane),
                    gx.reshape(n, c, plane))


def weight_grad(x, grad_output) -> np.ndarray:
    """``sum_n g[n] @ x[n].T``, shape (O, C): the samples' products, added in order."""
    n, c = x.shape[:2]
    o, plane = grad_output.shape[1], math.prod(x.shape[2:])
    if n == 0:
        return np.zeros((o, c), dtype=x.dtype)
    partial = np.empty((n, o, c), dtype=x.dtype)
    sample_products(grad_output.reshape(n, o, plane),
                    x.reshape(n, c, plane).transpose(0, 2, 1), partial)
    if n == 1:
        return partial[0]
    # ((p0 + p1) + p2) + ...: in sample order, whatever the threads; a new array, so that
    # the gradient does not keep the n partials alive
    total = partial[0] + partial[1]
    for i in range(2, n):
        total += partial[i]
    return total


def backward(grad_output, x, weight, gx, needs):
    """``(gx, gw, gb)`` of a pointwise convolution of either rank (None where ``needs``
    says; ``gx`` the preallocated input gradient, ``x`` C-contiguous where ``needs[1]``)."""
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    if needs[0]:
        input_grad(grad_output, wmat, gx)
    gw = weight_grad(x, grad_output).reshape(weight.shape) if needs[1] else None
    gb = grad_output.sum(axis=(0, *range(2, grad_output.ndim))) if needs[2] else None
    return gx, gw, gb
