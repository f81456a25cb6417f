"""Differentiable batch and group normalisation (array ops in ``sandbox.array.norm``)."""

from __future__ import annotations

from ..array import norm as _norm
from ..autograd import Function, Tensor, once_differentiable

__all__ = ["batch_norm", "group_norm"]


class BatchNorm(Function):
    """Batch norm; running statistics (plain arrays) are updated in the forward."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        out, mean, invstd = _norm.batch_norm(x, running_mean, running_var, weight, bias,
                                             training, momentum, eps)
        ctx.save_for_backward(x, weight)
        ctx.stats = (mean, invstd)
        ctx.training = training
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight = ctx.saved_arrays
        needs = ctx.needs_input_grad
        gx, gw, gb = _norm.batch_norm_backward(grad, x, *ctx.stats, weight, ctx.training,
                                               needs=needs[:3])
        return gx, gw, gb, None, None, None, None, None


class GroupNorm(Function):
    """Group norm over ``C / num_groups`` channels and space of each sample."""

    @staticmethod
    def forward(ctx, x, weight, bias, num_groups, eps):
        out, mean, invstd = _norm.group_norm(x, num_groups, weight, bias, eps)
        ctx.save_for_backward(x, weight)
        ctx.stats = (mean, invstd)
        ctx.num_groups = num_groups
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        x, weight = ctx.saved_arrays
        gx, gw, gb = _norm.group_norm_backward(grad, x, *ctx.stats, ctx.num_groups, weight,
                                               needs=ctx.needs_input_grad[:3])
        return gx, gw, gb, None, None


def _array(x):
    return x.data if isinstance(x, Tensor) else x


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation of a Tensor, as ``torch.nn.functional.batch_norm``.

    ``running_mean``/``running_var`` (Tensors or arrays, shape (C,), or None) are
    read in eval mode and updated in place in training mode (unbiased variance).
    """
    return BatchNorm.apply(input, weight, bias, _array(running_mean), _array(running_var),
                           bool(training), momentum, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation of a Tensor, as ``torch.nn.functional.group_norm``."""
    return GroupNorm.apply(input, weight, bias, num_groups, eps)
