"""sandbox.array._parallel: parallel_map order/errors/nesting, OrderedSum order, scratch."""

import threading

import numpy as np
import pytest

import sandbox
from sandbox.array import _parallel
from sandbox.array._parallel import OrderedSum, parallel_map, scratch


@pytest.mark.parametrize("nt", [1, 2, 3])
def test_parallel_map_returns_results_in_chunk_order(nt):
    with sandbox.num_threads(nt):
        assert parallel_map(lambda c: c * c, range(23)) == [c * c for c in range(23)]
        assert parallel_map(lambda c: c, []) == []


def test_parallel_map_runs_chunks_concurrently():
    """Two chunks meet at a barrier: only possible if two threads run them at once."""
    barrier = threading.Barrier(2, timeout=30)
    with sandbox.num_threads(2):
        names = parallel_map(lambda c: (barrier.wait(), threading.current_thread().name)[1],
                             range(2))
    assert len(set(names)) == 2
    seen = set()
    with sandbox.num_threads(1):
        parallel_map(lambda c: seen.add(threading.current_thread().name), range(8))
    assert seen == {threading.current_thread().name}


def test_parallel_map_reraises_first_failing_chunk():
    def fn(c):
        if c in (5, 9):
            raise ValueError(f"chunk {c}")
        return c

    with sandbox.num_threads(2), pytest.raises(ValueError, match="chunk 5"):
        parallel_map(fn, range(16))
    with sandbox.num_threads(2):  # the pool still works afterwards
        assert parallel_map(lambda c: c, range(4)) == [0, 1, 2, 3]


def test_nested_parallel_map_runs_inline():
    with sandbox.num_threads(2):
        out = parallel_map(lambda c: parallel_map(lambda d: c * 10 + d, range(3)), range(4))
    assert out == [[c * 10 + d for d in range(3)] for c in range(4)]


def test_pool_is_recreated_when_thread_count_changes():
    with sandbox.num_threads(2):
        parallel_map(lambda c: c, range(4))
        first = _parallel._pool
    with sandbox.num_threads(3):
        parallel_map(lambda c: c, range(4))
        assert _parallel._pool is not first
        assert _parallel._pool_size == 2


@pytest.mark.parametrize("nt", [1, 2, 3])
def test_ordered_sum_is_bitwise_reproducible(nt, rng):
    parts = [rng.standard_normal(1000).astype(np.float32) * 10.0 ** (i % 7) for i in range(17)]
    expected = parts[0].copy()
    for p in parts[1:]:
        expected += p
    total = OrderedSum(len(parts))
    with sandbox.num_threads(nt):
        parallel_map(lambda i: total.add(i, parts[i].copy()), range(len(parts))[::-1])
    assert np.array_equal(total.out, expected)
    assert OrderedSum(0).out is None


def test_scratch_reuses_and_grows_per_thread():
    a = scratch("t", (4, 5), np.float32)
    b = scratch("t", (2, 3), np.float64)
    assert a.shape == (4, 5) and b.shape == (2, 3) and b.dtype == np.float64
    assert np.shares_memory(a, b)
    c = scratch("t", (100,), np.float64)
    assert c.shape == (100,) and not np.shares_memory(a, c)
    other = {}
    t = threading.Thread(target=lambda: other.setdefault("buf", scratch("t", (100,), np.float64)))
    t.start()
    t.join()
    assert not np.shares_memory(other["buf"], c)
