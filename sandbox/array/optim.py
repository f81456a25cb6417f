"""Optimiser updates on plain ndarrays: one kernel pass over a parameter and its state."""

from __future__ import annotations

import math

import numpy as np

from .._C import _optim
from ..runtime.threads import kernel_threads

__all__ = ["adam_update", "adam_update_many", "fits_adam_kernel"]


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def fits_adam_kernel(param, grad, exp_avg, exp_avg_sq) -> bool:
    """Whether :func:`adam_update` takes these arrays (float32/float64, one dtype and shape,
    C-contiguous, the updated ones writeable).  Called per parameter and step: one
    expression, no loops or generators."""
    if not (isinstance(param, np.ndarray) and isinstance(grad, np.ndarray)
            and isinstance(exp_avg, np.ndarray) and isinstance(exp_avg_sq, np.ndarray)):
        return False
    dtype, shape = param.dtype, param.shape
    if not (dtype in _KERNEL_DTYPES
            and grad.dtype == dtype and exp_avg.dtype == dtype and exp_avg_sq.dtype == dtype
            and grad.shape == shape and exp_avg.shape == shape and exp_avg_sq.shape == shape
            and grad.flags.c_contiguous):
        return False
    for a in (param, exp_avg, exp_avg_sq):  # written: one flags object each
        flags = a.flags
        if not (flags.c_contiguous and flags.writeable):
            return False
    return True


def _check_step(step) -> None:
    """ValueError unless ``step`` is a positive int (the Adam step number)."""
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")


def adam_update(param, grad, exp_avg, exp_avg_sq, *, step, lr, beta1, beta2, eps,
                weight_decay=0.0, decoupled=False, maximize=False) -> None:
    """One Adam (AdamW with ``decoupled``) update of param, exp_avg and exp_avg_sq, in place.

    Bitwise the same as PyTorch's update rule written with numpy (as in
    :class:`sandbox.optim.Adam`), in one pass and without temporaries.

    Parameters
    ----------
    param, grad, exp_avg, exp_avg_sq : ndarray
        One dtype (float32 or float64) and shape, C-contiguous (see :func:`fits_adam_kernel`).
    step : int
        The step number, from 1 (bias corrections ``1 - beta**step``).
    lr, beta1, beta2, eps, weight_decay : float
    decoupled : bool
        AdamW's decay ``param *= 1 - lr * weight_decay`` instead of L2 on the gradient.
    maximize : bool
        Ascend instead of descend.
    """
    if not fits_adam_kernel(param, grad, exp_avg, exp_avg_sq):
        raise ValueError("adam_update needs param, grad, exp_avg and exp_avg_sq of one float "
                         "dtype and shape, C-contiguous (and the updated ones writeable)")
    _check_step(step)
    _optim.adam_step(param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1),
                     exp_avg_sq.reshape(-1), beta1, beta2, lr / (1 - beta1**step),
                     math.sqrt(1 - beta2**step), eps, lr * weight_decay if decoupled
                     else weight_decay, bool(decoupled), bool(maximize),
                     kernel_threads(param.size))


def adam_update_many(params, grads, exp_avgs, exp_avg_sqs, *, step, lr, beta1, beta2, eps,
                     weight_decay=0.0, decoupled=False, maximize=False) -> None:
    """:func:`adam_update` of several parameters of one dtype at one step number, in one
    kernel call: the same bits, one parallel loop over all their elements.

    Parameters
    ----------
    params, grads, exp_avgs, exp_avg_sqs : sequences of ndarray
        Each quadruple as for :func:`adam_update`; every array of one dtype.
    step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize
        As for :func:`adam_update`.
    """
    quads = list(zip(params, grads, exp_avgs, exp_avg_sqs, strict=True))
    if not quads:
        return
    dtype = quads[0][0].dtype
    for quad in quads:
        if not fits_adam_kernel(*quad) or quad[0].dtype != dtype:
            raise ValueError("adam_update_many needs quadruples as adam_update takes them, "
                             "all of one dtype")
    _adam_update_quads(quads, step=step, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                       weight_decay=weight_decay, decoupled=decoupled, maximize=maximize)


def _adam_update_quads(quads, *, step, lr, beta1, beta2, eps, weight_decay, decoupled,
                       maximize) -> None:
    """:func:`adam_update_many` of quadruples the caller has checked already.

    For the optimiser, which asks :func:`fits_adam_kernel` of each parameter anyway to
    choose between the kernel and numpy: the arrays are not checked again (only
    ``step``).

    Parameters
    ----------
    quads : list of tuple
        Non-empty; ``(param, grad, exp_avg, exp_avg_sq)`` each, every one accepted by
        :func:`fits_adam_kernel`, all of one dtype.
    step, lr, beta1, beta2, eps, weight_decay, decoupled, maximize
        As for :func:`adam_update`.
    """
    _check_step(step)
    # the kernel reads each array's size and data pointer: C-contiguous arrays of any
    # shape, no flat views needed (with fits_adam_kernel's one flags read an array, the
    # optimiser's Python for the user UNet's 56 parameters went 93 -> 69 us a step warm,
    # AMD EPYC family 26 model 2, a throwaway script with the kernel stubbed out)
    columns = [list(column) for column in zip(*quads, strict=True)]
    _optim.adam_step_many(*columns, beta1, beta2, lr / (1 - beta1**step),
                          math.sqrt(1 - beta2**step), eps,
                          lr * weight_decay if decoupled else weight_decay, bool(decoupled),
                          bool(maximize), kernel_threads(sum(q[0].size for q in quads)))
