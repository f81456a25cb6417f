"""Exercise 5: ``unbroadcast``, the adjoint of broadcasting.

What it teaches: broadcasting ``x`` of shape ``(3, 1)`` up to ``(2, 3, 4)`` copies
each element to several places, so in backward each element receives the *sum*
of the gradients of its copies: sum over the added leading axes, and over the
axes where ``x`` had size 1 (keeping them).  Every binary op's backward ends with it.
See docs/06-broadcasting.md for the dot-product test that proves it is the adjoint.

Compare with: ``sandbox.autograd.unbroadcast`` (used by add, mul, matmul, where ...).

Run: ``python -m pytest exercises/test_ex05_unbroadcast.py --student``
"""

from __future__ import annotations

import numpy as np  # noqa: F401 - you will need it

from .._track import todo


def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` (shaped like the broadcast result) back down to ``shape``.

    Shapes are aligned at the right (as numpy broadcasting does): the first
    ``grad.ndim - len(shape)`` axes were added, and an axis where ``shape`` has 1
    but ``grad`` has more was stretched.  Raise ValueError if ``shape`` has more
    dims than ``grad``.  Hint: ``np.sum(..., axis=axes, keepdims=True)``, then reshape.
    """
    todo("unbroadcast")
