"""Differentiable batch and group normalisation (array ops in ``sandbox.array.norm``).

A plain backward (``create_graph=False``) calls the array kernels.  Under
``create_graph=True`` the same formulas are written with Tensor ops (the batch
statistics recomputed inside the graph), so second and higher derivatives work.
"""

from __future__ import annotations

import math

from ..array import norm as _norm
from ..autograd import Function, Tensor, is_grad_enabled

__all__ = ["batch_norm", "batch_norm_relu", "group_norm"]


def _keep(ctx, saved, mean, invstd, **options):
    """Save ``saved`` for backward; note the statistics and ``options`` on ``ctx``."""
    ctx.save_for_backward(*saved)
    ctx.stats = (mean, invstd)
    for name, value in options.items():
        setattr(ctx, name, value)


class _Normalization(Function):
    """What the normalisation ops share: the forward keeps what the backward needs
    (:func:`_keep`); a plain backward calls the array kernel (``_kernel_grads``),
    one under ``create_graph=True`` the Tensor-op formulas (``_graph_grads``).  Both
    take ``(ctx, grad, saved, needs)`` and return the (input, weight, bias) gradients;
    the other arguments get None."""

    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    fresh_grads = True  # the array backwards allocate every gradient they return

    @classmethod
    def backward(cls, ctx, grad):
        needs = ctx.needs_input_grad[:3]
        if is_grad_enabled():
            grads = cls._graph_grads(ctx, grad, ctx.saved_tensors, needs)
        else:
            grads = cls._kernel_grads(ctx, grad, ctx.saved_arrays, needs)
        return (*grads, *(None,) * (len(ctx.needs_input_grad) - 3))


class BatchNorm(_Normalization):
    """Batch norm; running statistics (plain arrays) are updated in the forward."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        out, mean, invstd = _norm.batch_norm(x, running_mean, running_var, weight, bias,
                                             training, momentum, eps)
        _keep(ctx, (x, weight), mean, invstd, training=training, eps=eps)
        return out

    @staticmethod
    def _graph_grads(ctx, grad, saved, needs):
        return _batch_norm_grads(grad, *saved, ctx, needs)

    @staticmethod
    def _kernel_grads(ctx, grad, saved, needs):
        x, weight = saved
        return _norm.batch_norm_backward(grad, x, *ctx.stats, weight, ctx.training, needs=needs)


class BatchNormReLU(_Normalization):
    """Batch norm then ReLU in one kernel pass; saves the input and the affine
    parameters only (the backward recomputes ReLU's mask from the input).

    Under ``create_graph=True`` the backward is ReLU's mask times the Tensor-op
    batch-norm gradients, like the unfused pair.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        out, mean, invstd = _norm.batch_norm_relu(x, running_mean, running_var, weight, bias,
                                                  training, momentum, eps)
        _keep(ctx, (x, weight, bias), mean, invstd, training=training, eps=eps)
        return out

    @staticmethod
    def _graph_grads(ctx, grad, saved, needs):
        x, weight, bias = saved  # ReLU's mask (a constant), then batch norm's gradients
        mask = _norm.batch_norm_relu_mask(x.numpy(), *ctx.stats, _array(weight), _array(bias))
        return _batch_norm_grads(grad * mask, x, weight, ctx, needs)

    @staticmethod
    def _kernel_grads(ctx, grad, saved, needs):
        x, weight, bias = saved
        return _norm.batch_norm_relu_backward(grad, x, *ctx.stats, weight, bias, ctx.training,
                                              needs=needs)


class GroupNorm(_Normalization):
    """Group norm over ``C / num_groups`` channels and space of each sample."""

    @staticmethod
    def forward(ctx, x, weight, bias, num_groups, eps):
        out, mean, invstd = _norm.group_norm(x, num_groups, weight, bias, eps)
        _keep(ctx, (x, weight), mean, invstd, num_groups=num_groups, eps=eps)
        return out

    @staticmethod
    def _graph_grads(ctx, grad, saved, needs):
        return _group_norm_grads(grad, *saved, ctx.num_groups, ctx.eps, needs)

    @staticmethod
    def _kernel_grads(ctx, grad, saved, needs):
        x, weight = saved
        return _norm.group_norm_backward(grad, x, *ctx.stats, ctx.num_groups, weight,
                                         needs=needs)


class LayerNorm(_Normalization):
    """Layer norm over the last ``nd`` axes (``length`` elements a row) with an
    elementwise affine (``weight``, ``bias`` of the normalised shape, or None)."""

    @staticmethod
    def forward(ctx, x, weight, bias, nd, eps):
        length = math.prod(x.shape[x.ndim - nd:])
        out, mean, rstd = _norm.layer_norm(x, length, weight, bias, eps)
        _keep(ctx, (x, weight), mean, rstd, nd=nd, eps=eps)
        return out

    @staticmethod
    def _graph_grads(ctx, grad, saved, needs):
        x, weight = saved
        axes = tuple(range(x.ndim - ctx.nd, x.ndim))
        lead = tuple(range(x.ndim - ctx.nd))
        xc = x - x.mean(axis=axes, keepdims=True)  # the statistics again, in the graph
        invstd = ((xc * xc).mean(axis=axes, keepdims=True) + ctx.eps) ** -0.5
        xhat = xc * invstd
        gx = gw = gb = None
        if needs[0]:
            dxhat = grad if weight is None else grad * weight
            gx = _normalized_grad(dxhat, xhat, invstd, axes)
        if needs[1]:
            gw = (grad * xhat).sum(axis=lead) if lead else grad * xhat
        if needs[2]:
            gb = grad.sum(axis=lead) if lead else grad
        return gx, gw, gb

    @staticmethod
    def _kernel_grads(ctx, grad, saved, needs):
        x, weight = saved
        gx, gw, gb = _norm.layer_norm_backward(grad, x, *ctx.stats, weight, needs=needs)
        shape = x.shape[x.ndim - ctx.nd:]  # the normalised shape: the weight's and bias's
        return (gx, None if gw is None else gw.reshape(shape),
                None if gb is None else gb.reshape(shape))


def _normalized_grad(dxhat, xhat, invstd, axes):
    """``invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))`` over ``axes``.

    The input gradient of ``xhat = (x - mean(x)) * invstd(x)`` for an incoming
    ``dxhat`` (statistics taken over ``axes``).
    """
    return invstd * (dxhat - dxhat.mean(axis=axes, keepdims=True)
                     - xhat * (dxhat * xhat).mean(axis=axes, keepdims=True))


def _batch_norm_grads(grad, x, weight, ctx, needs):
    """Batch-norm gradients as Tensor ops (differentiable again)."""
    axes = (0, *range(2, x.ndim))
    per_channel = (1, -1) + (1,) * (x.ndim - 2)
    if ctx.training:  # the statistics depend on x: recompute them in the graph
        xc = x - x.mean(axis=axes, keepdims=True)
        invstd = ((xc * xc).mean(axis=axes, keepdims=True) + ctx.eps) ** -0.5
    else:  # running statistics: constants
        mean, invstd = (s.reshape(per_channel) for s in ctx.stats)
        xc = x - mean
    xhat = xc * invstd
    gw = (grad * xhat).sum(axis=axes) if needs[1] else None
    gb = grad.sum(axis=axes) if needs[2] else None
    gx = None
    if needs[0]:
        dxhat = grad if weight is None else grad * weight.reshape(per_channel)
        gx = _normalized_grad(dxhat, xhat, invstd, axes) if ctx.training else dxhat * invstd
    return gx, gw, gb


def _group_norm_grads(grad, x, weight, num_groups, eps, needs):
    """Group-norm gradients as Tensor ops (differentiable again)."""
    n, c = x.shape[:2]
    xg = x.reshape(n, num_groups, -1)
    xc = xg - xg.mean(axis=2, keepdims=True)
    invstd = ((xc * xc).mean(axis=2, keepdims=True) + eps) ** -0.5
    xhat = xc * invstd  # (N, G, C/G * L)
    g3 = grad.reshape(n, c, -1)
    gw = (g3 * xhat.reshape(n, c, -1)).sum(axis=(0, 2)) if needs[1] else None
    gb = g3.sum(axis=(0, 2)) if needs[2] else None
    gx = None
    if needs[0]:
        dxhat = g3 if weight is None else g3 * weight.reshape(c, 1)
        gx = _normalized_grad(dxhat.reshape(n, num_groups, -1), xhat, invstd, 2)
        gx = gx.reshape(x.shape)
    return gx, gw, gb


def _array(x):
    return x.numpy() if isinstance(x, Tensor) else x


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation of a Tensor, as ``torch.nn.functional.batch_norm``.

    ``running_mean``/``running_var`` (Tensors or arrays, shape (C,), or None) are
    read in eval mode and updated in place in training mode (unbiased variance).
    """
    return BatchNorm.apply(input, weight, bias, _array(running_mean), _array(running_var),
                           bool(training), momentum, eps)


def batch_norm_relu(input, running_mean, running_var, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-5):
    """``relu(batch_norm(...))`` of a Tensor in one fused pass, forward and backward.

    Same arguments and results as ``relu(batch_norm(input, ...))`` (bitwise), but
    neither the normalised intermediate nor the ReLU mask is ever materialised:
    the forward writes the output directly, the backward reads the gradient and the
    input (the mask recomputed from it, the forward's bits).

    Parameters
    ----------
    input : Tensor or ndarray, shape (N, C, ...)
    running_mean, running_var, weight, bias, training, momentum, eps
        As for :func:`batch_norm`.

    Returns
    -------
    Tensor
    """
    return BatchNormReLU.apply(input, weight, bias, _array(running_mean), _array(running_var),
                               bool(training), momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation of a Tensor, as ``torch.nn.functional.group_norm``."""
    return GroupNorm.apply(input, weight, bias, num_groups, eps)
