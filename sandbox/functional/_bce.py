"""Binary cross-entropy of probabilities, with PyTorch's clamps (forward and backward)."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, once_differentiable
from ._loss import _check_reduction, _reduce, _same_shape


def _clamped_logs(p):
    with np.errstate(divide="ignore"):  # log(0) = -inf, clamped to -100 as PyTorch
        return np.maximum(np.log(p), -100.0), np.maximum(np.log1p(-p), -100.0)


class BinaryCrossEntropy(Function):
    """Elementwise ``-(t log p + (1 - t) log(1 - p))``, each log clamped at -100.

    The input gradient is PyTorch's ``(p - t) / max(p (1 - p), 1e-12)``, finite at
    ``p`` = 0 or 1; the target gradient is ``log(1 - p) - log(p)`` (infinite there,
    as in PyTorch).
    """

    @staticmethod
    def forward(ctx, p, t):
        log_p, log_q = _clamped_logs(p)
        ctx.save_for_backward(p, t)
        return -(t * log_p + (1.0 - t) * log_q)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        p, t = ctx.saved_arrays
        gp = gt = None
        if ctx.needs_input_grad[0]:
            gp = grad * (p - t) / np.maximum(p * (1.0 - p), 1e-12)
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore"):  # unclamped here, as PyTorch: +-inf at 0, 1
                gt = grad * (np.log1p(-p) - np.log(p))
        return gp, gt


def binary_cross_entropy(input, target, weight=None, reduction="mean"):  # noqa: A002
    """Binary cross-entropy of probabilities ``input`` in [0, 1], as torch.

    ``loss = -w (t log(p) + (1 - t) log(1 - p))`` with each log clamped at -100, as
    PyTorch does, so ``p`` of exactly 0 or 1 gives a finite loss and gradient.
    Prefer :func:`binary_cross_entropy_with_logits` on logits: it is stabler.
    """
    _check_reduction(reduction)
    _same_shape(input, target, "binary_cross_entropy")
    p = input.numpy()
    if p.size and (np.nanmin(p) < 0 or np.nanmax(p) > 1):
        raise ValueError("binary_cross_entropy: input values must be probabilities in [0, 1]")
    t = target if isinstance(target, Tensor) else np.asarray(target, input.dtype)
    loss = BinaryCrossEntropy.apply(input, t)
    if weight is not None:
        loss = loss * (weight if isinstance(weight, Tensor) else np.asarray(weight))
    return _reduce(loss, reduction)
