"""Exercise 7: resize's backward from the weight table's transpose.

What it teaches: resizing one axis is ``y = A x`` with a banded matrix ``A`` that
depends only on the sizes and the mode, so its backward is ``gx = Aᵀ gy``.
Stored as a band table (per output: first input, tap count, weights), ``Aᵀ`` is
again a band table (per input: the outputs that read it), so the backward is the
same *gather* as the forward: no scatter, no races, the same bits on any number
of threads.

Compare with: ``sandbox.resample.resize_adjoint`` and the tables behind
``sandbox.resample.weight_matrix`` (docs/03-resampling-as-a-linear-map.md).

Run: ``python -m pytest exercises/test_ex07_resize_backward.py --student``

Get a matrix to play with: ``sandbox.resample.weight_matrix(4, 8, mode="bilinear")``.
A table is a tuple ``(start, ntap, weights)``.
"""

from __future__ import annotations

import numpy as np

from .._track import todo


def band_table(A: np.ndarray):
    """``(start, ntap, weights)`` of the banded (n_out, n_in) matrix ``A``.

    Row ``o`` reads inputs ``start[o] .. start[o] + ntap[o] - 1`` with weights
    ``weights[o, :ntap[o]]`` (zeros inside the band are kept); ``weights`` has
    ``max(ntap)`` columns, zero-padded.  An all-zero row has ``ntap = 0`` and
    ``start = 0``.  ``start`` and ``ntap`` are ``np.intp`` arrays.
    """
    todo("band_table")


def apply_table(x: np.ndarray, table) -> np.ndarray:
    """Gather along the last axis: ``y[..., o] = Σₖ w[o, k] · x[..., start[o] + k]``.

    Hint: loop over ``k`` (a few taps), not over outputs; fancy indexing
    ``x[..., start + k]`` reads one tap of every output at once.
    """
    todo("apply_table")


def transpose_table(table, n_in: int):
    """The band table of ``Aᵀ`` (shape (n_in, n_out)): for each input ``j``, the
    outputs that read it, ``start``-ed at the first one, with their weights.
    """
    todo("transpose_table")


def resize2d(x: np.ndarray, A_h: np.ndarray, A_w: np.ndarray) -> np.ndarray:
    """``y = A_h · x · A_wᵀ`` on the last two axes, as two table gathers (W, then H)."""
    todo("resize2d")


def resize2d_backward(grad: np.ndarray, A_h: np.ndarray, A_w: np.ndarray) -> np.ndarray:
    """``gx = A_hᵀ · grad · A_w``, as two gathers with the transposed tables."""
    todo("resize2d_backward")


# A small helper for your own experiments (not part of the exercise).
def dense(table, n_in: int) -> np.ndarray:
    """The dense matrix of a band table."""
    start, ntap, weights = table
    A = np.zeros((start.size, n_in), dtype=weights.dtype)
    for o in range(start.size):
        A[o, start[o] : start[o] + ntap[o]] = weights[o, : ntap[o]]
    return A
