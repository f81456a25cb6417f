"""Optimiser updates on plain ndarrays: one kernel pass over a parameter and its state."""

from __future__ import annotations

import math

import numpy as np

from ..runtime.threads import kernel_threads

__all__ = ["adam_update", "fits_adam_kernel"]


def fits_adam_kernel(param, grad, exp_avg, exp_avg_sq) -> bool:
    """Whether :func:`adam_update` takes these arrays (float32/float64, one dtype and shape,
    C-contiguous, the updated ones writeable)."""
    arrays = (param, grad, exp_avg, exp_avg_sq)
    return (all(isinstance(a, np.ndarray) for a in arrays)
            and param.dtype in (np.float32, np.float64)
            and all(a.dtype == param.dtype and a.shape == param.shape
                    and a.flags.c_contiguous for a in arrays)
            and all(a.flags.writeable for a in (param, exp_avg, exp_avg_sq)))


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
    if isinstance(step, bool) or not isinstance(step, int | np.integer) or step < 1:
        raise ValueError(f"step must be a positive integer, got {step!r}")
    from .._C import _optim

    _optim.adam_step(param.reshape(-1), grad.reshape(-1), exp_avg.reshape(-1),
                     exp_avg_sq.reshape(-1), beta1, beta2, lr / (1 - beta1**step),
                     math.sqrt(1 - beta2**step), eps, lr * weight_decay if decoupled
                     else weight_decay, bool(decoupled), bool(maximize),
                     kernel_threads(param.size))
