"""Gradient clipping, as ``torch.nn.utils``."""

from __future__ import annotations

import math

import numpy as np

from ..autograd import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so their joint norm is at most ``max_norm``.

    PyTorch's rule: the total norm is the ``norm_type``-norm of the per-parameter
    norms (``inf``: the largest absolute value); every gradient is multiplied by
    ``min(max_norm / (total + 1e-6), 1)``.  ``foreach`` is accepted and ignored.

    Returns
    -------
    Tensor
        The total norm before clipping (0-d).
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._make(np.zeros((), np.float32))
    arrays = [g.numpy() for g in grads]
    if math.isinf(norm_type):
        norms = [np.abs(a).max() if a.size else 0.0 for a in arrays]
        total = np.max(norms)
    else:
        norms = [np.sum(np.abs(a) ** norm_type) ** (1.0 / norm_type) for a in arrays]
        total = np.sum(np.asarray(norms) ** norm_type) ** (1.0 / norm_type)
    total = np.asarray(total, arrays[0].dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"the total norm of order {norm_type} for gradients is non-finite, so it cannot "
            "be clipped; set error_if_nonfinite=False to scale by it anyway"
        )
    coef = min(float(max_norm) / (float(total) + 1e-6), 1.0)
    for a in arrays:
        a *= np.asarray(coef, a.dtype)
    return Tensor._make(total)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    v = float(clip_value)
    for g in _grads(parameters):
        np.clip(g.numpy(), -v, v, out=g.numpy())
