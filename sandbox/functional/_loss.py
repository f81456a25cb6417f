"""Losses: cross-entropy, NLL, BCE-with-logits, soft Dice, MSE.

All have second derivatives and are computed stably: cross-entropy through the
log-sum-exp with a max shift, BCE through ``softplus``.  Class weights and targets are
constants.  They are compositions of differentiable Tensor ops, except cross-entropy
with class-index targets and no label smoothing (what a segmentation step computes):
one node, :class:`_IndexCrossEntropy`, whose values and gradient replay the
composition's operations (same bits) without its six nodes and dense coefficients;
and MSE, L1 and BCE-with-logits (with its weights) reduced by a mean or a sum: one node
on kernels each (:mod:`._pointwise_loss`).
"""

from __future__ import annotations

import numpy as np

from ..array import activation
from ..array._validate import FLOAT_DTYPES
from ..array.classes import softmax_cross_entropy_grad, take_classes
from ..autograd import Function, Tensor, is_grad_enabled
from ..ops import log_softmax, sigmoid, softmax, softplus
from ._pointwise_loss import reduced_loss

__all__ = [
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "dice_loss",
    "l1_loss",
    "mse_loss",
    "nll_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _array(x):
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _class_weights(weight, n_classes, dtype, op):
    if weight is None:
        return np.ones(n_classes, dtype)
    w = _array(weight).astype(dtype, copy=False)
    if w.shape != (n_classes,):
        raise ValueError(f"{op}: weight must have shape ({n_classes},), got {w.shape}")
    return w


def _all_ignored(total):
    """The mean loss when every target is ignored (or weighted 0), from the summed loss
    ``total``: NaN, with a zero gradient, as torch."""
    return total * 0.0 + np.asarray(np.nan, total.dtype)


def _index_coef(input, target, weight, ignore_index, label_smoothing, op):
    """Constant ``coef`` with ``loss_i = -sum_c coef[i, c] * logp[i, c]``, and the mean's divisor.

    ``coef[i, c] = (1 - s) * w[t_i] * [c == t_i] + (s / C) * w[c]`` for non-ignored ``i``
    (``s`` the label smoothing); the mean divides by ``sum_i w[t_i]`` over non-ignored
    ``i``, as PyTorch.
    """
    n_classes = input.shape[1]
    t_safe, valid, w, wt = _index_targets(input, target, weight, ignore_index, op)
    coef = np.zeros(input.shape, input.dtype)
    np.put_along_axis(coef, t_safe[:, None], ((1.0 - label_smoothing) * wt)[:, None], axis=1)
    if label_smoothing:
        bshape = (1, n_classes) + (1,) * (input.ndim - 2)
        coef += (label_smoothing / n_classes) * valid[:, None] * w.reshape(bshape)
    return coef, float(wt.sum())


#: the most elements whose float32 weights of 1 sum to their count exactly (2**24): up to
#: it, an unweighted cross-entropy's mean divides by the count itself
_EXACT_COUNT = 2**24


def _index_targets(input, target, weight, ignore_index, op, unit=False):
    """The checked class-index ``target`` of ``input`` and its weights: ``(t_safe, valid,
    w, wt)``, ignored elements' classes replaced by 0 in ``t_safe``, ``w`` the class
    weights and ``wt`` each element's target weight, 0 where ignored (TypeError /
    ValueError as PyTorch's checks).  With ``unit``, ``valid`` and ``wt`` are None where
    every element counts with weight 1 (no class weights, none ignored, at most
    :data:`_EXACT_COUNT` elements): the caller needs no arrays of ones."""
    n_classes = input.shape[1]
    t = _array(target)
    if t.dtype.kind not in "iu":
        raise TypeError(f"{op}: class-index target must be an integer tensor, got {t.dtype}")
    expected = input.shape[:1] + input.shape[2:]
    if t.shape != expected:
        raise ValueError(
            f"{op}: target shape {t.shape} does not match input shape {input.shape} "
            f"(expected {expected} for an (N, C, ...) input)"
        )
    w = _class_weights(weight, n_classes, input.dtype, op)
    if t.size and 0 <= t.min() and t.max() < n_classes and not 0 <= ignore_index < n_classes:
        # the common case: every class in range, so none is ignore_index; without a
        # weight each element's is 1 (a fill, not a gather: 60 -> 25 us for a 32^3 batch
        # of 2, numpy on one thread, timeit, AMD EPYC family 26 model 2)
        t_safe = t.copy()  # kept for the backward: a copy
        if unit and weight is None and t.size <= _EXACT_COUNT:
            return t_safe, None, w, None
        wt = np.ones(t.shape, input.dtype) if weight is None else w[t_safe]
        return t_safe, np.ones(t.shape, bool), w, wt
    valid = t != ignore_index
    every = bool(valid.all())  # nothing ignored
    t_safe = t.copy() if every else np.where(valid, t, 0)  # kept for the backward: a copy
    if t_safe.size and (t_safe.min() < 0 or t_safe.max() >= n_classes):
        bad = t_safe[(t_safe < 0) | (t_safe >= n_classes)][0]
        raise ValueError(
            f"{op}: target value {bad} is out of range for {n_classes} classes "
            f"(valid: 0..{n_classes - 1} or ignore_index={ignore_index})"
        )
    return t_safe, valid, w, (w[t_safe] if every else w[t_safe] * valid)


class _IndexCrossEntropy(Function):
    """Cross-entropy of logits ``x`` (N, C, ...) with class indices, in one node.

    ``loss_i = -wt_i * logp_i[t_i]`` with ``logp = log_softmax(x, 1)`` (the
    composition's ``-coef * log_softmax``, whose other classes add zeros), then
    ``reduction``; ``wt`` is each element's class weight, 0 where ignored, or None where
    every weight is 1 (``x * 1`` is ``x``: the same bits without the array).  The
    gradient is ``(softmax(x) * wt - onehot(t) * wt) * g``, written as the
    composition's backward computes it: ``gl - exp(logp) * S`` with ``S = -g * wt``
    (the same kernels: the same bits).
    """

    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    fresh_grads = True  # softmax_cross_entropy_grad allocates the input gradient

    @staticmethod
    def forward(ctx, x, t_safe, wt, divisor, reduction):
        logp = activation.softmax(x, 1, log=True)
        loss = -take_classes(logp, t_safe, check=False)
        if wt is not None:
            loss = wt * loss
        ctx.logp, ctx.t, ctx.wt = logp, t_safe, wt
        ctx.divisor, ctx.reduction = divisor, reduction
        ctx.save_for_backward(x)
        if reduction == "none":
            return loss
        total = loss.sum()
        return total / np.asarray(divisor, x.dtype) if reduction == "mean" else total

    @staticmethod
    def backward(ctx, grad):
        # d loss_i / d x_ic = wt_i * (softmax_ic - [c == t_i]), times the reduction's g_i
        dtype = ctx.logp.dtype
        if ctx.reduction == "mean":
            grad = grad / np.asarray(ctx.divisor, dtype)
        # S = -g wt: the composition's class sum of its Mul's gradient (-g where every
        # weight is 1: the same values)
        if is_grad_enabled():  # create_graph: the same formula in differentiable ops
            wt = np.ones(ctx.t.shape, dtype) if ctx.wt is None else ctx.wt
            s = (-grad) * wt
            (x,) = ctx.saved_tensors
            onehot = np.zeros(ctx.logp.shape, dtype)
            np.put_along_axis(onehot, ctx.t[:, None], 1.0, axis=1)
            s = s.unsqueeze(1) if isinstance(s, Tensor) else Tensor(np.asarray(s)[:, None])
            return s * (onehot - softmax(x, 1)), None, None, None, None
        s = -grad if ctx.wt is None else (-grad) * ctx.wt
        # prob = exp(log_softmax) as the composition's backward takes it (in the kernel);
        # s - prob * s at the target class, 0 * s - prob * s = -(prob * s) elsewhere
        return (softmax_cross_entropy_grad(ctx.logp, ctx.t, s, check=False, log=True), None,
                None, None, None)


def _nll(logp, target, weight, ignore_index, reduction, label_smoothing, op, probs_ok=True):
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{op}: label_smoothing must be in [0, 1], got {label_smoothing}")
    t = _array(target)
    if t.dtype.kind == "f" and probs_ok:  # class probabilities, same shape as the input
        if t.shape != logp.shape:
            raise ValueError(
                f"{op}: probability target shape {t.shape} must equal input shape {logp.shape}"
            )
        n_classes = logp.shape[1]
        w = _class_weights(weight, n_classes, logp.dtype, op).reshape(
            (1, n_classes) + (1,) * (logp.ndim - 2)
        )
        probs = target if isinstance(target, Tensor) else Tensor(t)
        if label_smoothing:
            probs = probs * (1.0 - label_smoothing) + label_smoothing / n_classes
        loss = -(logp * (probs * w)).sum(axis=1)
        return _reduce(loss, reduction)  # the mean is over elements, as torch
    coef, divisor = _index_coef(logp, t, weight, ignore_index, label_smoothing, op)
    loss = -(logp * coef).sum(axis=1)
    if reduction == "mean":
        if divisor == 0:
            return _all_ignored(loss.sum())
        return loss.sum() / np.asarray(divisor, logp.dtype)
    return _reduce(loss, reduction)


def _batched(input, target):
    """Promote an unbatched ``(C,)`` input with a scalar target to a batch of one."""
    if input.ndim == 1:
        if isinstance(target, Tensor):  # keeps a probability target's graph
            return input.unsqueeze(0), target.reshape(1, *target.shape), True
        t = _array(target)
        return input.unsqueeze(0), t.reshape(1, *t.shape), True
    if input.ndim < 1:
        raise ValueError(f"expected an (N, C, ...) or (C,) input, got shape {input.shape}")
    return input, target, False


def cross_entropy(
    input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """Cross-entropy between logits and targets, as ``torch.nn.functional.cross_entropy``.

    Parameters
    ----------
    input : Tensor
        Logits of shape ``(N, C, d1, ...)`` (or ``(C,)``); the class axis is 1.
    target : Tensor or ndarray
        Class indices of shape ``(N, d1, ...)`` (integers), or class probabilities of
        the input's shape (floats).
    weight : array-like of shape (C,), optional
        Per-class weights (constants).
    ignore_index : int
        Index targets with this value contribute nothing (index targets only).
    reduction : {"mean", "sum", "none"}
        ``"mean"`` divides by the summed weights of the non-ignored targets (PyTorch's
        weighted mean); for probability targets by the number of elements.
    label_smoothing : float in [0, 1]
        Mix the target with the uniform distribution over classes.

    Returns
    -------
    Tensor
        The loss (shape ``(N, d1, ...)`` for ``reduction="none"``).
    """
    x, t, unbatched = _batched(input, target)
    if (not label_smoothing and x.dtype in FLOAT_DTYPES and _array(t).dtype.kind != "f"
            and reduction in _REDUCTIONS):  # the kernels' dtypes; float16 composes
        t_safe, _, _, wt = _index_targets(x, t, weight, ignore_index, "cross_entropy",
                                          unit=True)
        divisor = float(t_safe.size) if wt is None else float(wt.sum())
        if reduction == "mean" and divisor == 0:
            return _all_ignored(_IndexCrossEntropy.apply(x, t_safe, wt, 1.0, "sum"))
        loss = _IndexCrossEntropy.apply(x, t_safe, wt, divisor, reduction)
    else:
        loss = _nll(log_softmax(x, 1), t, weight, ignore_index, reduction, label_smoothing,
                    "cross_entropy")
    return loss.squeeze(0) if unbatched and reduction == "none" else loss


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of log-probabilities ``input`` ``(N, C, ...)``, as torch."""
    x, t, unbatched = _batched(input, target)
    loss = _nll(x, t, weight, ignore_index, reduction, 0.0, "nll_loss", probs_ok=False)
    return loss.squeeze(0) if unbatched and reduction == "none" else loss


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction="mean"):
    """Binary cross-entropy on logits, as ``torch.nn.functional.binary_cross_entropy_with_logits``.

    ``loss = (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``, times ``weight``;
    ``softplus`` is evaluated stably, so large logits do not overflow.  ``weight`` and
    ``pos_weight`` broadcast against the input (``pos_weight`` along the class axis,
    as torch: give it shape ``(C, 1, 1)`` for ``(N, C, H, W)`` inputs).
    """
    _check_reduction(reduction)
    if tuple(np.shape(target)) != input.shape:
        raise ValueError(
            "binary_cross_entropy_with_logits: target shape "
            f"{tuple(np.shape(target))} must equal input shape {input.shape}"
        )
    fused = reduced_loss("bce_with_logits", input, target, reduction, weight, pos_weight)
    if fused is not None:
        return fused
    t = target if isinstance(target, Tensor) else Tensor(np.asarray(target, input.dtype))
    if pos_weight is None:
        loss = softplus(input, threshold=np.inf) - input * t  # = (1 - t) x + softplus(-x)
    else:
        pw = _array(pos_weight).astype(input.dtype, copy=False)
        loss = (1.0 - t) * input + (t * (pw - 1.0) + 1.0) * softplus(-input, threshold=np.inf)
    if weight is not None:
        loss = loss * (weight if isinstance(weight, Tensor) else _array(weight))
    return _reduce(loss, reduction)


def dice_loss(input, target, num_classes=None, eps=1.0, ignore_index=None, sums=None):
    """Soft Dice loss ``1 - mean_c (2 |P_c T_c| + eps) / (|P_c| + |T_c| + eps)``.

    Parameters
    ----------
    input : Tensor
        Logits ``(N, C, d1, ...)``.  With ``C > 1`` the probabilities are
        ``softmax(input, 1)`` and every class counts (multiclass); with ``C == 1`` they
        are ``sigmoid(input)`` and the single foreground class counts (binary).
    target : Tensor or ndarray
        Class indices ``(N, d1, ...)`` (multiclass), or 0/1 values of shape
        ``(N, d1, ...)`` or ``(N, 1, d1, ...)`` (binary).
    num_classes : int, optional
        If given, must equal ``C`` (a guard against mismatched heads).
    eps : float
        Smoothing added to numerator and denominator (avoids 0/0 for absent classes).
    ignore_index : int, optional
        Target value whose elements are left out of every sum.
    sums : callable, optional
        ``sums(inter, denom) -> (inter, denom)``, applied to the per-class sums (Tensors
        of shape ``(C,)``) before the ratio: a data-parallel run adds the ranks' sums
        there, so that the loss is the Dice of the global batch.

    Notes
    -----
    The sums run over the batch and the spatial dims together ("batch Dice"), one
    ratio per class, then the classes are averaged.
    """
    if input.ndim < 2:
        raise ValueError(f"dice_loss: expected an (N, C, ...) input, got shape {input.shape}")
    n_classes = input.shape[1]
    if (
        num_classes is not None
        and num_classes != n_classes
        and not (n_classes == 1 and num_classes == 2)
    ):
        raise ValueError(
            f"dice_loss: num_classes={num_classes} but the input has {n_classes} channels"
        )
    t = _array(target)
    spatial = input.shape[:1] + input.shape[2:]
    if n_classes == 1 and t.shape == input.shape:
        t = t[:, 0]
    if t.shape != spatial:
        raise ValueError(
            f"dice_loss: target shape {t.shape} does not match input shape {input.shape} "
            f"(expected {spatial})"
        )
    valid = np.ones(t.shape, bool) if ignore_index is None else t != ignore_index
    if n_classes == 1:
        probs = sigmoid(input)
        onehot = (np.where(valid, t, 0) > 0)[:, None]
    else:
        t_safe = np.where(valid, t, 0).astype(np.int64)
        if np.any((t_safe < 0) | (t_safe >= n_classes)):
            raise ValueError(f"dice_loss: target values must be in 0..{n_classes - 1}")
        probs = softmax(input, 1)
        onehot = np.zeros(input.shape, bool)
        np.put_along_axis(onehot, t_safe[:, None], True, axis=1)
    mask = valid[:, None].astype(input.dtype)
    onehot = onehot.astype(input.dtype) * mask
    if ignore_index is not None:
        probs = probs * mask
    axes = (0,) + tuple(range(2, input.ndim))
    inter = (probs * onehot).sum(axis=axes)
    denom = probs.sum(axis=axes) + onehot.sum(axis=axes)
    if sums is not None:
        inter, denom = sums(inter, denom)
    dice = (inter * 2.0 + eps) / (denom + eps)
    return 1.0 - dice.mean()


def mse_loss(input, target, reduction="mean"):
    """Mean squared error ``(input - target)**2`` reduced as ``reduction``."""
    _check_reduction(reduction)
    if tuple(np.shape(target)) != input.shape:
        raise ValueError(
            f"mse_loss: target shape {tuple(np.shape(target))} must equal input shape {input.shape}"
        )
    fused = reduced_loss("mse", input, target, reduction)
    if fused is not None:
        return fused
    d = input - target
    return _reduce(d * d, reduction)


def _same_shape(input, target, op):  # noqa: A002
    if tuple(np.shape(target)) != input.shape:
        raise ValueError(
            f"{op}: target shape {tuple(np.shape(target))} must equal input shape {input.shape}"
        )


def l1_loss(input, target, reduction="mean"):
    """Mean absolute error ``|input - target|`` reduced as ``reduction``."""
    _check_reduction(reduction)
    _same_shape(input, target, "l1_loss")
    fused = reduced_loss("l1", input, target, reduction)
    if fused is not None:
        return fused
    return _reduce((input - target).abs(), reduction)

