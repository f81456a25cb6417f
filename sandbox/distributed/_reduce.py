"""Sums across ranks in an order the library fixes, so every rank gets the same bits.

MPI only promises that an allreduce gives every rank the same result; the order of
the additions is the implementation's choice (and implementations have broken even
that promise for floats).  :func:`fixed_order_sum` chooses the order itself:

1. every rank cuts its flat buffer into ``size`` slices and sends slice ``j`` to
   rank ``j`` (an all-to-all);
2. rank ``j`` adds the ``size`` copies of its slice in rank order,
   ``((x0 + x1) + x2) + ...``;
3. every rank collects the summed slices (an all-gather).

Element ``i`` of the result is therefore ``((x0[i] + x1[i]) + x2[i]) + ...`` on every
rank, for any engine, algorithm or node placement, and the bytes moved per rank,
``2 (N-1)/N`` of the buffer, are those of a ring allreduce.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _sum_in_rank_order(rows: np.ndarray) -> np.ndarray:
    acc = rows[0].copy()
    for row in rows[1:]:
        acc += row
    return acc


def fixed_order_sum(comm, part: np.ndarray) -> np.ndarray:
    """The elementwise sum of every rank's 1-D ``part``, added in rank order.

    Parameters
    ----------
    comm : Communicator
    part : ndarray
        This rank's flat buffer; the same length and dtype on every rank.

    Returns
    -------
    ndarray
        The sum, bitwise the same on every rank.
    """
    n = comm.size
    length = part.size
    m = -(-length // n)  # slice length; the buffer is padded to n * m
    padded = np.zeros(n * m, part.dtype)
    padded[:length] = part
    received = comm.alltoall(padded.reshape(n, m))  # row k: slice `rank` of rank k
    return comm.allgather(_sum_in_rank_order(received)).reshape(-1)[:length]


def small_sum(comm, values) -> np.ndarray:
    """Sum a short float64 vector (a loss, flags, counts) over the ranks, in rank order.

    One all-gather of a few numbers: cheap enough for every step, and exact for flags
    and integer counts.
    """
    return _sum_in_rank_order(comm.allgather(np.asarray(values, np.float64)))


def flat_state(model, buffers: bool = True) -> np.ndarray:
    """The model's parameters (and buffers) as one flat float64 vector, in registration
    order (for the broadcast of the initial state and the digest check)."""
    arrays = [p.numpy() for p in model.parameters()]
    if buffers:
        arrays += [np.asarray(b) for b in model.buffers()]
    if not arrays:
        return np.zeros(0)
    return np.concatenate([a.astype(np.float64, copy=False).ravel() for a in arrays])


def load_flat_state(model, flat: np.ndarray, buffers: bool = True) -> None:
    """Inverse of :func:`flat_state`: copy ``flat`` back into the model, in place."""
    arrays = [p.numpy() for p in model.parameters()]
    if buffers:
        arrays += [b for b in model.buffers()]
    offset = 0
    for a in arrays:
        n = a.size
        a[...] = flat[offset : offset + n].reshape(a.shape).astype(a.dtype, copy=False)
        offset += n


def digest(model, buffers: bool = True) -> int:
    """A 63-bit digest of the model's parameters (and buffers), bit for bit."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(np.ascontiguousarray(p.numpy()).tobytes())
    if buffers:
        for b in model.buffers():
            h.update(np.ascontiguousarray(b).tobytes())
    return int.from_bytes(h.digest()[:8], "little") >> 1
