"""Losses of a data-parallel step that equal the loss of the global batch.

Cross-entropy is a mean over pixels: with equal shards, the mean of the ranks'
means is the global mean, and :class:`DataParallel` averages them.  Dice is a
ratio of sums over the whole batch, which does not split: here every rank adds its
per-class sums to everyone's (:class:`AllSum`, a differentiable sum over the ranks
in rank order) and takes the ratio of the global sums, so each rank's Dice term is
the global batch's Dice.  Each rank then reports ``CE_r + Dice``, and the average
over the ranks is the 1-rank loss up to rounding.

Why the gradients come out right: the adjoint of "sum over ranks" is "sum over
ranks" of the incoming gradients, which are the same ``dDice/dsums`` on every rank,
so each rank back-propagates ``N`` times its share; the ``1/N`` of the gradient
average then leaves exactly the global Dice's gradient.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..autograd import Function, Tensor
from ..ops import cat
from ._reduce import small_sum


class AllSum(Function):
    """``sum over ranks of x`` (a short vector), the same on every rank; backward alike."""

    @staticmethod
    def forward(ctx, x, comm):
        ctx.comm = comm
        return small_sum(comm, x).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        g = np.asarray(grad)
        return small_sum(ctx.comm, g).astype(g.dtype), None


def global_sums(comm):
    """A ``sums`` hook for :func:`sandbox.functional.dice_loss`: the ranks' sums, added."""

    def sums(inter, denom):
        c = inter.shape[0]
        both = AllSum.apply(cat([inter, denom]), comm)
        return both[:c], both[c:]

    return sums


def distributed_loss(kind: str, logits, target, num_classes: int, comm):
    """:func:`sandbox.train.compute_loss` for one rank's shard of a data-parallel step."""
    target_t = Tensor(target)
    if kind == "ce":
        return F.cross_entropy(logits, target_t)
    dice = F.dice_loss(logits, target_t, num_classes=num_classes, sums=global_sums(comm))
    if kind == "dice":
        return dice
    return F.cross_entropy(logits, target_t) + dice
