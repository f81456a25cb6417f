"""Chunks of samples, shared by the 2-D (``_im2col``) and 3-D (``_vol2col``) loops.

A chunk is ``nb`` consecutive samples of an ``(N, K, *spatial)`` array; the GEMMs
see it as one ``(K, nb * P)`` matrix, ``P`` the size of one sample's spatial block
(pixels in 2-D, voxels in 3-D).
"""

from __future__ import annotations

import numpy as np

from .._parallel import scratch
from ._tuning import TUNING


def _blocks(n: int, nb: int) -> list[tuple[int, int, int]]:
    """``(chunk index, first sample, samples)`` for chunks of ``nb`` samples."""
    return [(i, n0, min(nb, n - n0)) for i, n0 in enumerate(range(0, n, nb))]


def pool_threads(flops: int) -> int | None:
    """Worker-pool threads for a loop of chunks whose GEMMs do ``flops`` flops: 1 (the
    calling thread) below ``TUNING.min_parallel_flops``, else all of them (None).  The
    chunks and their order of sums do not change, so neither do the results."""
    return 1 if flops < TUNING.min_parallel_flops else None


def gemm_flops(m: int, k: int, cols: int, products: int) -> int:
    """Flops of ``products`` (m, k) x (k, cols) matrix products."""
    return 2 * m * k * cols * products


def _gather(arr, n0, nb, name):
    """``arr[n0:n0+nb]`` (N, K, ...) as a (K, nb*P) matrix: a view when nb == 1,
    else a copy into this thread's scratch buffer ``name``."""
    k = arr.shape[1]
    plane = arr[0, 0].size
    if nb == 1:
        return arr[n0].reshape(k, plane)
    mat = scratch(name, (k, nb, plane), arr.dtype)
    np.copyto(mat, arr[n0:n0 + nb].reshape(nb, k, plane).transpose(1, 0, 2))
    return mat.reshape(k, nb * plane)


def _scatter(mat, arr, n0, nb):
    """Inverse of :func:`_gather`: ``arr[n0:n0+nb] = mat`` (K, nb*P)."""
    k = arr.shape[1]
    np.copyto(arr[n0:n0 + nb].reshape(nb, k, -1), mat.reshape(k, nb, -1).transpose(1, 0, 2))
