"""Dropout: zero elements (or whole channels) with probability ``p``, scale the rest."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..runtime.rng import default_generator

__all__ = ["dropout", "dropout2d"]



def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability p must be in [0, 1], got {p}")


def _apply_mask(x, keep_shape, p, rng):
    rng = default_generator() if rng is None else rng
    if p == 1.0:
        return x * np.zeros(keep_shape, x.dtype)
    # mask = keep / (1 - p), so E[output] = input; a constant for backward (x * mask).
    keep = rng.random(keep_shape, dtype=np.float32) >= p
    return x * (keep * np.asarray(1.0 / (1.0 - p), x.dtype))


def dropout(input: Tensor, p=0.5, training=True, rng=None) -> Tensor:
    """Zero each element with probability ``p`` and scale the others by ``1/(1-p)``.

    Parameters
    ----------
    input : Tensor
        Float tensor.
    p : float
        Drop probability in [0, 1].
    training : bool
        When False, return ``input`` unchanged.
    rng : numpy.random.Generator, optional
        Source of the mask (a module-level generator by default).
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    return _apply_mask(input, input.shape, p, rng)


def dropout2d(input: Tensor, p=0.5, training=True, rng=None) -> Tensor:
    """Zero whole channels with probability ``p`` (``(N, C, H, W)`` or unbatched ``(C, H, W)``)."""
    _check_p(p)
    if input.ndim not in (3, 4):
        raise ValueError(
            f"dropout2d expects a 3-d (C, H, W) or 4-d (N, C, H, W) input, got shape {input.shape}"
        )
    if not training or p == 0.0:
        return input
    keep_shape = input.shape[:-2] + (1, 1)
    return _apply_mask(input, keep_shape, p, rng)
