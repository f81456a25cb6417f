"""The side worker (sandbox.runtime.overlap): results, errors, thread counts."""

import threading

import pytest

import sandbox
from sandbox.runtime import overlap, threads


@pytest.fixture
def two_threads():
    with sandbox.num_threads(2):
        yield


def test_submitted_work_returns_its_value_and_items():
    d = overlap.submit(lambda a, b: (a + b, a * b), 3, 4)
    assert d.result() == (7, 12)
    assert d.item(1).result() == 12
    assert overlap._pending == 0


def test_an_error_raised_by_the_work_is_raised_by_result():
    def fail():
        raise KeyError("in the side worker")

    d = overlap.submit(fail)
    with pytest.raises(KeyError, match="in the side worker"):
        d.result()
    assert overlap._pending == 0


def test_work_not_started_runs_on_the_calling_thread(two_threads):
    gate, started = threading.Event(), threading.Event()
    blocker = overlap.submit(lambda: (started.set(), gate.wait(10))[1])  # holds the worker
    assert started.wait(10)
    ran_on = []
    queued = overlap.submit(lambda: ran_on.append((threading.get_ident(),
                                                   threads.threads_now())) or "done")
    assert queued.result() == "done"  # taken back from the queue, run here
    assert ran_on == [(threading.get_ident(), 1)]  # beside the worker's running work
    gate.set()
    assert blocker.result() is True
    assert overlap._pending == 0


def test_drain_runs_the_queue_and_waits_for_the_rest():
    gate = threading.Event()
    first = overlap.submit(gate.wait, 10)
    later = [overlap.submit(lambda k=k: k * k) for k in range(4)]
    threading.Timer(0.05, gate.set).start()
    overlap.drain()
    assert overlap._pending == 0
    assert first.result() is True
    assert [d.result() for d in later] == [0, 1, 4, 9]


def test_cancel_drops_work_not_started():
    gate, started = threading.Event(), threading.Event()
    blocker = overlap.submit(lambda: (started.set(), gate.wait(10))[1])
    assert started.wait(10)
    ran = []
    dropped = overlap.submit(ran.append, 1)
    dropped.cancel()
    gate.set()
    blocker.result()
    assert ran == [] and overlap._pending == 0


def test_kernels_beside_side_work_take_one_thread_fewer(two_threads):
    assert threads.threads_now() == 2
    gate, started = threading.Event(), threading.Event()
    seen = overlap.submit(lambda: (started.set(), gate.wait(10), threads.threads_now())[2])
    try:
        assert threads.threads_now() == 1  # this thread lends one to the side worker
        assert started.wait(10)
        assert sandbox.get_num_threads() == 2  # the setting itself is unchanged
    finally:
        gate.set()
    assert seen.result() == 1  # the side worker's kernels run on one thread
    assert threads.threads_now() == 2


def test_the_work_runs_in_the_submitting_context():
    from sandbox.runtime import simd

    with simd.using("portable"):
        d = overlap.submit(lambda: simd.current().isa)
        assert d.result() == "portable"


def test_mode_is_checked():
    before = overlap.mode()
    try:
        overlap.set_mode("always")
        assert overlap.mode() == "always"
        with pytest.raises(ValueError, match="'off', 'auto', 'always'"):
            overlap.set_mode("sometimes")
    finally:
        overlap.set_mode(before)


def test_a_bad_environment_value_is_named(monkeypatch):
    monkeypatch.setenv(overlap.ENV_VAR, "maybe")
    with pytest.raises(ValueError, match="SANDBOX_OVERLAP must be one of off, auto, always"):
        overlap._mode_from_env()
    monkeypatch.setenv(overlap.ENV_VAR, "0")
    assert overlap._mode_from_env() == "off"


def test_a_forked_child_starts_its_own_side_worker(two_threads):
    import multiprocessing

    overlap.submit(lambda: None).result()  # the parent's worker exists
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply(_side_work_in_child, ()) == (0, 42, 0)
    assert overlap._pending == 0


def _side_work_in_child():
    before = overlap._pending  # reset after the fork: the parent's thread is not here
    d = overlap.submit(lambda: 42)
    return before, d.result(), overlap._pending
