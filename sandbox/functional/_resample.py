"""Differentiable resampling: ``interpolate`` (PyTorch's signature and defaults).

Resizing is linear in its input, so its backward is the adjoint
(:func:`sandbox.resample.resize_adjoint`) and the adjoint's backward is the
forward again.  Each is a :class:`Function` whose backward applies the other,
so gradients of any order work (``create_graph=True``).
"""

from __future__ import annotations

import numpy as np

from ..array import resample as _resample
from ..array.resample import check_array
from ..autograd import Function, Tensor, is_grad_enabled

__all__ = ["interpolate"]


class Resize(Function):
    """y = resize(x); backward: ResizeAdjoint (itself differentiable), or under a plain
    backward (``create_graph=False``) the adjoint on the array."""

    plain_backward_arrays = True  # outside create_graph, grad is an ndarray

    @staticmethod
    def forward(ctx, x, **opts):
        ctx.opts = opts
        ctx.input_size = x.shape[2:]
        ctx.plan = _resample.plan_resize(x, **opts)  # validated once, for the backward too
        return _resample.resize(x, plan=ctx.plan)

    @staticmethod
    def backward(ctx, grad):
        # one gradient per positional forward argument (x)
        if not is_grad_enabled():
            return _resample.resize_adjoint(grad, ctx.input_size, plan=ctx.plan)
        return ResizeAdjoint.apply(grad, ctx.input_size, **ctx.opts)


class ResizeAdjoint(Function):
    """gx = resize_adjoint(g); backward: Resize (the forward again)."""

    @staticmethod
    def forward(ctx, grad, input_size, **opts):
        ctx.opts = opts
        return _resample.resize_adjoint(grad, input_size, **opts)

    @staticmethod
    def backward(ctx, grad):
        # positional forward arguments: (grad, input_size)
        return Resize.apply(grad, **ctx.opts), None


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    antialias=False,
    recompute_scale_factor=None,
):
    """Resize a (N, C, L), (N, C, H, W) or (N, C, D, H, W) Tensor (differentiable).

    Same signature, defaults and semantics as ``torch.nn.functional.interpolate``
    (PyTorch 2.13 CPU), plus every mode in any number of spatial dims and the
    extra modes ``lanczos3`` (no antialias needed), ``lanczos5`` and ``cubic``;
    see :mod:`sandbox.resample` for the exact rules.  Gradients of any order.

    Parameters
    ----------
    input : Tensor or numpy.ndarray
        float32 or float64.
    size, scale_factor, mode, align_corners, antialias, recompute_scale_factor
        As for :func:`sandbox.resample.resize`.

    Returns
    -------
    Tensor
    """
    check_array(input.numpy() if isinstance(input, Tensor) else input, "input")
    opts = dict(
        size=size,
        scale_factor=scale_factor,
        mode=mode,
        align_corners=align_corners,
        antialias=antialias,
        recompute_scale_factor=recompute_scale_factor,
    )
    if not isinstance(input, Tensor):
        input = Tensor(np.asarray(input))
    return Resize.apply(input, **opts)
