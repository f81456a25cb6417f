"""MSE, L1 and binary cross-entropy on logits, reduced by mean or sum, as one node on the
kernels of :mod:`sandbox.array.pointwise_loss` (the wrappers in :mod:`._loss` take this
path when there is no weight; anything else stays a composition of tensor ops)."""

from __future__ import annotations

import numpy as np

from ..array import pointwise_loss
from ..autograd import Function, Tensor, is_grad_enabled
from ..ops import sigmoid

__all__ = ["reduced_loss"]


class PointwiseLoss(Function):
    """``scale * sum(loss(x, t))`` for one of :data:`pointwise_loss.KINDS` (``scale``:
    ``1 / n`` for a mean, 1 for a sum); gradients to the input and the target."""

    fresh_grads = True  # every gradient is a new array
    plain_backward_arrays = True

    @staticmethod
    def forward(ctx, x, t, kind, scale):
        ctx.save_for_backward(x, t)
        ctx.kind, ctx.scale = kind, scale
        return np.asarray(pointwise_loss.loss_sum(kind, x, t) * scale, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        kind, scale = ctx.kind, ctx.scale
        need_x, need_t = ctx.needs_input_grad[:2]
        if not is_grad_enabled():  # plain backward: the kernel, on arrays
            x, t = ctx.saved_arrays
            g = float(grad) * scale
            gx = pointwise_loss.loss_grad(kind, x, t, g)
            if not need_t:
                return gx if need_x else None, None, None, None
            gt = np.negative(x * x.dtype.type(g)) if kind == "bce_with_logits" else -gx
            return gx if need_x else None, gt, None, None
        # create_graph: the slopes as tensor ops, differentiable in the incoming grad
        x, t = ctx.saved_tensors
        if kind == "mse":
            slope = 2.0 * (x - t)
        elif kind == "l1":
            slope = Tensor(np.sign(x.numpy() - t.numpy()))  # its own derivative is 0
        else:
            slope = sigmoid(x) - t
        gx = slope * (grad * scale)
        gt = None
        if need_t:
            gt = -(x * (grad * scale)) if kind == "bce_with_logits" else -gx
        return gx if need_x else None, gt, None, None


def reduced_loss(kind, input, target, reduction):  # noqa: A002
    """The loss ``kind`` of ``input`` against ``target`` reduced by ``reduction`` as one
    node, or None where the kernels do not take the request (``reduction="none"``, an
    empty or non-float input, a target tensor of another dtype): the caller composes it.

    ``target`` has ``input``'s shape (checked by the caller); a target that is not a
    Tensor becomes a constant of ``input``'s dtype."""
    n = input.numel()
    if reduction == "none" or input.dtype not in (np.float32, np.float64) or n == 0:
        return None
    if isinstance(target, Tensor):
        if target.dtype != input.dtype:
            return None
    else:
        target = np.asarray(target, dtype=input.dtype)
    scale = 1.0 / n if reduction == "mean" else 1.0
    return PointwiseLoss.apply(input, target, kind, scale)
