"""Exercise 5: ``unbroadcast``, the adjoint of broadcasting.

What it teaches: broadcasting ``x`` of shape ``(3, 1)`` up to ``(2, 3, 4)`` copies
each element to several places, so in backward each element receives the *sum*
of the gradients of its copies: sum over the added leading axes, and over the
axes where ``x`` had size 1 (keeping them).  Every binary op's backward ends with it.
See docs/06-broadcasting.md for the dot-product test that proves it is the adjoint.

Compare with: ``sandbox.autograd.unbroadcast`` (used by add, mul, matmul, where ...).
"""

from __future__ import annotations

import numpy as np


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` (shaped like the broadcast result) back down to ``shape``."""
    shape = tuple(shape)
    lead = grad.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot unbroadcast shape {grad.shape} to more dims {shape}")
    # the axes broadcasting created, then the size-1 axes it stretched
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    return np.sum(grad, axis=axes, keepdims=True).reshape(shape)
