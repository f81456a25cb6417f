"""MSE, L1 and binary cross-entropy on logits, reduced by mean or sum, as one node on the
kernels of :mod:`sandbox.array.pointwise_loss` (the wrappers in :mod:`._loss` take this
path when there is no weight; anything else stays a composition of tensor ops)."""

from __future__ import annotations

import numpy as np

from ..array import pointwise_loss
from ..autograd import Function, Tensor, is_grad_enabled
from ..ops import sigmoid, softplus

__all__ = ["reduced_loss"]


class PointwiseLoss(Function):
    """``scale * sum(loss(x, t))`` for one of :data:`pointwise_loss.KINDS` (``scale``:
    ``1 / n`` for a mean, 1 for a sum); gradients to the input and the target."""

    fresh_grads = True  # every gradient is a new array
    plain_backward_arrays = True

    @staticmethod
    def forward(ctx, x, t, kind, scale, weights):
        ctx.save_for_backward(x, t)
        ctx.kind, ctx.scale, ctx.weights = kind, scale, weights
        return np.asarray(pointwise_loss.loss_sum(kind, x, t, weights) * scale, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        kind, scale, weights = ctx.kind, ctx.scale, ctx.weights
        need_x, need_t = ctx.needs_input_grad[:2]
        none = (None, None, None)  # kind, scale, weights
        if not is_grad_enabled():  # plain backward: the kernel, on arrays
            x, t = ctx.saved_arrays
            g = float(grad) * scale
            gx = pointwise_loss.loss_grad(kind, x, t, g, weights)
            if not need_t:
                return gx if need_x else None, None, *none
            if kind != "bce_with_logits":
                gt = -gx
            elif weights is None:  # d/dt = -x
                gt = np.negative(x * x.dtype.type(g))
            else:  # d/dt = w ((p - 1) softplus(-x) - x)
                w, p = weights
                gt = (w * ((p - 1) * np.logaddexp(0, -x) - x) * g).astype(x.dtype)
            return gx if need_x else None, gt, *none
        # create_graph: the slopes as tensor ops, differentiable in the incoming grad
        x, t = ctx.saved_tensors
        w, p = (1.0, 1.0) if weights is None else map(Tensor, weights)
        if kind == "mse":
            slope = 2.0 * (x - t)
        elif kind == "l1":
            slope = Tensor(np.sign(x.numpy() - t.numpy()))  # its own derivative is 0
        else:
            slope = w * ((1.0 + (p - 1.0) * t) * sigmoid(x) - p * t)
        gx = slope * (grad * scale)
        gt = None
        if need_t:
            if kind != "bce_with_logits":
                gt = -gx
            else:
                gt = w * ((p - 1.0) * softplus(-x, threshold=np.inf) - x) * (grad * scale)
        return gx if need_x else None, gt, *none


def reduced_loss(kind, input, target, reduction, weight=None, pos_weight=None):  # noqa: A002
    """The loss ``kind`` of ``input`` against ``target`` reduced by ``reduction`` as one
    node, or None where the kernels do not take the request (``reduction="none"``, an
    empty or non-float input, a target tensor of another dtype, a weight that requires
    grad or does not broadcast to the input): the caller composes it.

    ``target`` has ``input``'s shape (checked by the caller); a target that is not a
    Tensor becomes a constant of ``input``'s dtype.  ``weight`` and ``pos_weight``
    (binary cross-entropy only) broadcast to the input's shape as in PyTorch."""
    n = input.numel()
    if reduction == "none" or input.dtype not in (np.float32, np.float64) or n == 0:
        return None
    if isinstance(target, Tensor):
        if target.dtype != input.dtype:
            return None
    else:
        target = np.asarray(target, dtype=input.dtype)
    weights = None
    if weight is not None or pos_weight is not None:
        weights = _full_weights(input, weight, pos_weight)
        if weights is None:
            return None
    scale = 1.0 / n if reduction == "mean" else 1.0
    return PointwiseLoss.apply(input, target, kind, scale, weights)


def _full_weights(input, weight, pos_weight):  # noqa: A002
    """``(w, p)``: ``weight`` and ``pos_weight`` as C-contiguous arrays of ``input``'s
    shape and dtype (ones for one that is None), or None for a weight that requires grad
    or does not broadcast (the composition then says what is wrong)."""
    full = []
    for v in (weight, pos_weight):
        if isinstance(v, Tensor) and v.requires_grad:
            return None
        if v is None:
            full.append(np.ones(input.shape, input.dtype))
            continue
        a = v.numpy() if isinstance(v, Tensor) else np.asarray(v)
        try:
            full.append(np.ascontiguousarray(np.broadcast_to(a.astype(input.dtype, copy=False),
                                                             input.shape)))
        except ValueError:
            return None
    return tuple(full)
