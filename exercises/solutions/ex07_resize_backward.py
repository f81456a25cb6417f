"""Exercise 7: resize's backward from the weight table's transpose.

What it teaches: resizing one axis is ``y = A x`` with a banded matrix ``A`` that
depends only on the sizes and the mode, so its backward is ``gx = Aᵀ gy``.
Stored as a band table (per output: first input, tap count, weights), ``Aᵀ`` is
again a band table (per input: the outputs that read it), so the backward is the
same *gather* as the forward: no scatter, no races, the same bits on any number
of threads.

Compare with: ``sandbox.resample.resize_adjoint`` and the tables behind
``sandbox.resample.weight_matrix`` (docs/03-resampling-as-a-linear-map.md).
"""

from __future__ import annotations

import numpy as np


def band_table(A: np.ndarray):
    """``(start, ntap, weights)`` of the banded (n_out, n_in) matrix ``A``.

    Row ``o`` reads inputs ``start[o] .. start[o] + ntap[o] - 1`` with weights
    ``weights[o, :ntap[o]]``; ``weights`` has ``max(ntap)`` columns, zero-padded.
    An all-zero row has ``ntap = 0`` (and ``start = 0``).
    """
    n_out = A.shape[0]
    nz = A != 0
    any_nz = nz.any(axis=1)
    first = np.where(any_nz, nz.argmax(axis=1), 0)
    last = np.where(any_nz, A.shape[1] - 1 - nz[:, ::-1].argmax(axis=1), -1)
    ntap = np.where(any_nz, last - first + 1, 0)
    weights = np.zeros((n_out, max(int(ntap.max(initial=0)), 1)), dtype=A.dtype)
    for o in range(n_out):
        weights[o, : ntap[o]] = A[o, first[o] : first[o] + ntap[o]]
    return first.astype(np.intp), ntap.astype(np.intp), weights


def apply_table(x: np.ndarray, table) -> np.ndarray:
    """Gather along the last axis: ``y[..., o] = Σₖ w[o, k] · x[..., start[o] + k]``."""
    start, ntap, weights = table
    y = np.zeros(x.shape[:-1] + (start.size,), dtype=np.result_type(x, weights))
    for k in range(weights.shape[1]):
        live = ntap > k  # outputs with a k-th tap
        y[..., live] += weights[live, k] * x[..., start[live] + k]
    return y


def transpose_table(table, n_in: int):
    """The band table of ``Aᵀ``: for each input ``j``, the outputs that read it."""
    start, ntap, weights = table
    n_out = start.size
    t_start = np.zeros(n_in, np.intp)
    t_ntap = np.zeros(n_in, np.intp)
    readers = [[] for _ in range(n_in)]
    for o in range(n_out):  # outputs in increasing order: each list stays sorted
        for k in range(ntap[o]):
            readers[start[o] + k].append((o, weights[o, k]))
    width = max(1, max((r[-1][0] - r[0][0] + 1 for r in readers if r), default=1))
    t_weights = np.zeros((n_in, width), dtype=weights.dtype)
    for j, r in enumerate(readers):
        if r:
            t_start[j] = r[0][0]
            t_ntap[j] = r[-1][0] - r[0][0] + 1
            for o, w in r:
                t_weights[j, o - r[0][0]] = w
    return t_start, t_ntap, t_weights


def resize2d(x: np.ndarray, A_h: np.ndarray, A_w: np.ndarray) -> np.ndarray:
    """``y = A_h · x · A_wᵀ`` on the last two axes, as two table gathers."""
    y = apply_table(x, band_table(A_w))  # along W
    return np.swapaxes(apply_table(np.swapaxes(y, -1, -2), band_table(A_h)), -1, -2)


def resize2d_backward(grad: np.ndarray, A_h: np.ndarray, A_w: np.ndarray) -> np.ndarray:
    """``gx = A_hᵀ · grad · A_w``, as two gathers with the transposed tables."""
    tw = transpose_table(band_table(A_w), A_w.shape[1])
    th = transpose_table(band_table(A_h), A_h.shape[1])
    g = apply_table(grad, tw)
    return np.swapaxes(apply_table(np.swapaxes(g, -1, -2), th), -1, -2)
