"""Depthwise convolutions: ``groups`` equal to the input and output channels, each
channel of each sample convolved with its own kernel, in 2-D and 3-D alike.

im2col ran them as one product of one row per group over a column buffer
kernel-size times the input: a 3x3 depthwise layer of a (8, 32, 32, 32) float32 batch,
forward and both gradients, took 6.4 ms at 1 thread and 4.3 at 2 that way, 3.2 and 1.6
this way (AMD EPYC family 25 model 1 VM, interleaved pairs); on (8, 16, 64, 64), forward
and both gradients, it is 1.62x PyTorch's time at 1 thread and 1.31x at 2 (``python
benchmarks/bench_ops_vs_torch.py --threads 1 2 --ops depthwise_conv``; before the weight
gradient's 16 partial sums, 2.36x and 1.99x).

``pyx/_depthwise.pyx`` runs the stencil itself on (N, C, D, H, W) arrays (2-D as depth
1): the forward and the input gradient own a (sample, channel) plane each, the weight
gradient a channel (its samples in order, sums in double), so the bits do not depend
on the thread count.  Any kernel size, stride, padding and dilation; a channel
multiplier (more output channels than groups) and transposed depthwise convolutions
take the im2col loops.
"""

from __future__ import annotations

import numpy as np

from ..._C import _depthwise
from ...runtime.threads import kernel_threads
from ._chunks import add_bias

__all__ = ["backward", "eligible", "forward", "input_grad", "weight_grad"]


def eligible(plan, c_in: int, c_out: int) -> bool:
    """Whether a convolution is depthwise: more than one group, one input and one output
    channel each."""
    return 1 < plan.groups == c_in == c_out


def _geometry(plan) -> tuple:
    """Stride, padding and dilation, three each (depth first; 2-D: depth 1, no padding)."""
    s, p, d = plan.stride, plan.padding, plan.dilation
    if plan.nd == 2:
        s, p, d = (1, *s), (0, *p), (1, *d)
    return (*s, *p, *d)


def _volume(a: np.ndarray, nd: int) -> np.ndarray:
    """``a`` (N, C, ...) as a C-contiguous (N, C, D, H, W) array (a view where it can)."""
    a = np.ascontiguousarray(a)
    return a[:, :, None] if nd == 2 else a


def _kernel(weight: np.ndarray, nd: int) -> np.ndarray:
    """The (C, 1, *k) weight as the kernels' (C, kd, kh, kw)."""
    w = np.ascontiguousarray(weight)
    return w.reshape(w.shape[0], *((1,) if nd == 2 else ()), *w.shape[2:])


def forward(x, weight, bias, plan, y) -> None:
    """``y = conv(x, weight, bias)`` (``y`` (N, C, *out_size) C-contiguous, overwritten)."""
    nd = plan.nd
    _depthwise.forward(_volume(x, nd), _kernel(weight, nd), _volume(y, nd), *_geometry(plan),
                       kernel_threads(y.size))
    add_bias(y, bias)


def input_grad(grad_output, weight, plan, gx) -> None:
    """The input gradient into ``gx`` (the input's shape, C-contiguous, overwritten)."""
    nd = plan.nd
    _depthwise.input_grad(_volume(grad_output, nd), _kernel(weight, nd), _volume(gx, nd),
                          *_geometry(plan), kernel_threads(gx.size))


def weight_grad(grad_output, x, plan, weight_shape) -> np.ndarray:
    """The weight gradient, ``weight_shape`` (C, 1, *k)."""
    nd = plan.nd
    gw = np.empty(weight_shape, dtype=x.dtype)
    _depthwise.weight_grad(_volume(grad_output, nd), _volume(x, nd), _kernel(gw, nd),
                           *_geometry(plan), kernel_threads(x.size))
    return gw


def backward(grad_output, x, weight, plan, gx, needs):
    """``(gx, gw, gb)`` of a depthwise convolution (None where ``needs`` says; ``gx`` the
    preallocated input gradient)."""
    if needs[0]:
        input_grad(grad_output, weight, plan, gx)
    gw = weight_grad(grad_output, x, plan, weight.shape) if needs[1] else None
    gb = grad_output.sum(axis=(0, *range(2, grad_output.ndim))) if needs[2] else None
    return gx, gw, gb
