"""Pointwise losses reduced to one number on every thread: MSE, L1 and binary
cross-entropy on logits, and their input gradients (``pyx/_loss.pyx``).

PyTorch runs each as one pass; composed of tensor ops (a difference, a square, a mean
and their backward) MSE had made eight passes over the batch and taken 1.95x PyTorch's
time at 1 thread and 1.94x at 2, BCE on logits (softplus, a product, a difference, a
mean) 3.67x and 4.13x; on these kernels 0.88x / 0.80x and 0.52x / 0.49x (forward +
backward of a (8, 16, 64, 64) float32 map, ``python benchmarks/bench_ops_vs_torch.py
--threads 1 2 --ops mse_loss bce_with_logits``; AMD EPYC family 25 model 1 VM).  The
sum is cut into chunks of :data:`CHUNK` elements whatever the thread count, each
chunk's summed in blocks in the input's dtype and the blocks in double
(``pyx/lane_sums.h``), the chunks added in order: the same bits for any thread count.
"""

from __future__ import annotations

import numpy as np

from .._C import _loss
from ..runtime.threads import kernel_threads

__all__ = ["KINDS", "loss_grad", "loss_sum"]

#: the losses by name, as the kernels number them
KINDS = {"mse": _loss.MSE, "l1": _loss.L1, "bce_with_logits": _loss.BCE_LOGITS}

#: elements a chunk of the sum; the chunks, not the threads, fix the order of the sum
CHUNK = 1 << 16


def loss_sum(kind: str, x: np.ndarray, t: np.ndarray, weights=None) -> float:
    """The sum over the elements of the loss ``kind`` (:data:`KINDS`) of ``x`` against
    ``t``.

    Parameters
    ----------
    kind : {"mse", "l1", "bce_with_logits"}
        ``(x - t)**2``, ``|x - t|``, or ``max(x, 0) - x t + log(1 + exp(-|x|))``.
    x, t : ndarray
        One shape and one float dtype, float32 or float64 (the caller checks).
    weights : (ndarray, ndarray), optional
        For ``"bce_with_logits"`` only: the weights ``w`` and positive weights ``p`` as
        arrays of ``x``'s shape and dtype (ones where there are none); the loss is then
        ``w ((1 - t) x + (1 + (p - 1) t) log(1 + exp(-x)))``, PyTorch's ``weight`` and
        ``pos_weight``.

    Returns
    -------
    float
        In double; the caller rounds it to the dtype.
    """
    n = x.size
    parts = np.empty(max(1, -(-n // CHUNK)))
    _loss.loss_sums(KINDS[kind], _flat(x), _flat(t), *_weights(weights, x.dtype), parts,
                    kernel_threads(n))
    return float(sum(parts.tolist()))  # the chunks in order


def loss_grad(kind: str, x: np.ndarray, t: np.ndarray, scale: float,
              weights=None) -> np.ndarray:
    """``scale`` times the derivative of the loss ``kind`` in ``x``, elementwise: ``2 (x -
    t)``, ``sign(x - t)`` or ``sigmoid(x) - t``, with ``weights`` (as for :func:`loss_sum`)
    ``w ((1 + (p - 1) t) sigmoid(x) - p t)`` (a new array of ``x``'s shape)."""
    out = np.empty(x.shape, x.dtype)
    _loss.loss_grad(KINDS[kind], _flat(x), _flat(t), *_weights(weights, x.dtype),
                    x.dtype.type(scale), out.reshape(-1), kernel_threads(x.size))
    return out


def _weights(weights, dtype) -> tuple:
    """The kernels' ``(w, p)``: the weights flat, or two empty arrays (unweighted)."""
    if weights is None:
        none = np.empty(0, dtype)
        return none, none
    return tuple(_flat(a) for a in weights)


def _flat(a: np.ndarray) -> np.ndarray:
    """``a``'s elements as a contiguous 1-D array (a view where ``a`` is C-contiguous)."""
    return a.ravel()
