"""A small persistent worker pool for chunked array ops (one thread pool for the sandbox).

GEMM-heavy ops (convolution) split their work into **fixed chunks that do not
depend on the thread count** (for example one chunk per sample) and run them with
:func:`parallel_map`.  Each chunk calls serial code that releases the GIL: numpy's
``matmul`` (BLAS pinned to one thread, see :mod:`sandbox.runtime.threads`), ufuncs on
large arrays and the ``nogil`` Cython kernels.  So Python threads really run in
parallel, and because each chunk's arithmetic is fixed, results are bitwise
identical for any thread count as long as chunk results are combined in chunk
order (:class:`OrderedSum` does that for reductions).

Scheduling is dynamic: the calling thread and ``get_num_threads() - 1`` pool
threads pull the next chunk index from a shared counter.  On a shared machine a
descheduled thread then delays only the chunk it holds, never a barrier per GEMM
(the failure mode of OpenBLAS's own pool measured in :mod:`sandbox.runtime.threads`).

The pool is created lazily, re-created when the thread count changes or after a
``fork``, and never nests: a :func:`parallel_map` called from inside a chunk runs
inline.  Per-thread scratch buffers (:func:`scratch`) keep temporary memory at
one chunk buffer per worker.
"""

from __future__ import annotations

import contextvars
import itertools
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..runtime.threads import get_num_threads, threads_now

__all__ = ["OrderedSum", "parallel_map", "scratch"]

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_pid = 0
_local = threading.local()


def _reset_after_fork() -> None:
    global _pool, _pool_size
    _pool, _pool_size = None, 0  # the parent's threads do not exist in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _get_pool(workers: int) -> ThreadPoolExecutor:
    """The pool with ``workers`` threads (created or re-created on demand)."""
    global _pool, _pool_size, _pool_pid
    with _lock:
        pid = os.getpid()
        if _pool is None or _pool_size != workers or _pool_pid != pid:
            old = _pool if _pool_pid == pid else None
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sandbox-worker")
            _pool_size, _pool_pid = workers, pid
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _run(fn, chunks, results, counter, errors):
    """Pull chunk indices until none are left (or a chunk failed)."""
    _local.inside = True
    try:
        n = len(chunks)
        while not errors:
            i = next(counter)  # atomic under the GIL (a C-level iterator)
            if i >= n:
                return
            try:
                results[i] = fn(chunks[i])
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append((i, exc))
                return
    finally:
        _local.inside = False


def parallel_map(fn, chunks, num_threads: int | None = None) -> list:
    """``[fn(c) for c in chunks]``, run on the worker pool.

    Parameters
    ----------
    fn : callable
        Called once per chunk, from any thread; it should spend its time in code
        that releases the GIL and write only memory its chunk owns.
    chunks : sequence
        Fixed work items (their number and content must not depend on the thread
        count if results are to be bitwise reproducible).
    num_threads : int, optional
        Defaults to ``sandbox.get_num_threads()``.  With 1 thread, a single
        chunk, or when called from inside a chunk, runs inline in order.

    Returns
    -------
    list
        The results in chunk order.  The first failing chunk's exception (lowest
        index among those that ran) is re-raised after all threads stopped.
    """
    chunks = list(chunks)
    nt = threads_now() if num_threads is None else num_threads
    nt = min(nt, len(chunks))
    if nt <= 1 or getattr(_local, "inside", False):
        return [fn(c) for c in chunks]
    results = [None] * len(chunks)
    counter = itertools.count()
    errors: list = []
    pool = _get_pool(get_num_threads() - 1 if num_threads is None else num_threads - 1)
    # each pool thread runs in a copy of the caller's context, so settings held in
    # context variables (sandbox.runtime.simd.using) reach the chunks
    futures = [pool.submit(contextvars.copy_context().run, _run, fn, chunks, results, counter,
                           errors) for _ in range(nt - 1)]
    _run(fn, chunks, results, counter, errors)
    for f in futures:
        f.result()
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return results


class OrderedSum:
    """Sum of per-chunk partial arrays, added in chunk order (bitwise reproducible).

    ``add(i, partial)`` may be called from any thread in any order; partials are
    accumulated as ``((p0 + p1) + p2) + ...`` as soon as their predecessors are
    in, so at most the out-of-order partials are held at once.  ``out`` (after
    all ``count`` partials were added) is the total, or None when ``count == 0``.
    """

    def __init__(self, count: int):
        self.count = count
        self.out = None
        self._pending: dict = {}
        self._next = 0
        self._lock = threading.Lock()

    def add(self, i: int, partial: np.ndarray) -> None:
        with self._lock:
            self._pending[i] = partial
            while self._next in self._pending:
                p = self._pending.pop(self._next)
                if self.out is None:
                    self.out = p
                else:
                    self.out += p
                self._next += 1


def scratch(name: str, shape, dtype) -> np.ndarray:
    """A per-thread reusable buffer of ``shape`` and ``dtype`` (contents undefined).

    The buffer for ``name`` grows to the largest request seen on this thread and
    is kept for the thread's lifetime, so repeated calls allocate nothing.  Do not
    hold it across calls that may request the same ``name`` again.
    """
    bufs = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = {}
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    buf = bufs.get(name)
    if buf is None or buf.nbytes < size:
        buf = bufs[name] = np.empty(max(size, 1), dtype=np.uint8)
    return buf[:size].view(dtype).reshape(shape)
