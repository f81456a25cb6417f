"""Work that runs beside the calling thread: one side worker and its queue.

A training step's backward pass has two kinds of kernel work.  The input gradients form
a chain (each layer's needs the next one's), and between its kernels the calling thread
runs Python alone; the weight gradients hang off that chain (nothing in the backward
pass reads them).  :func:`submit` hands such off-chain work to one side worker thread,
so that it runs while the calling thread goes on with the chain, the Python between its
kernels included.  Whether that is faster than every kernel on all threads in turn
depends on the moment: :mod:`sandbox.autograd._schedule` measures it (:func:`mode`
``"auto"``).

Threads: while side work is queued or running, the calling thread's kernels take one
thread fewer (:func:`sandbox.runtime.threads.threads_now` asks :func:`threads_here`)
and the side worker's kernels one thread, so the two never ask for more threads than
the thread count: the side worker only gets work from the calling thread, between that
thread's kernels, and every kernel reads its thread count when it starts.  The results
do not depend on which thread computes them, nor with how many threads: every kernel
gives the same bits for any thread count.

A :class:`Deferred` is the promise of a result: :meth:`Deferred.result` waits for it,
or runs the work on the calling thread if the side worker has not started it yet.
Errors raised by the work are raised there.  The side worker is a daemon thread,
started at the first :func:`submit` (and again after a ``fork``); work runs in a copy
of the submitting thread's context, so settings held in context variables (the
convolution settings, the SIMD path) apply to it.
"""

from __future__ import annotations

import collections
import contextvars
import os
import threading

__all__ = ["MODES", "Deferred", "Pending", "drain", "mode", "set_mode", "submit",
           "threads_here"]

_QUEUED, _RUNNING, _DONE = 0, 1, 2

#: seconds the side worker stays awake for more work after each piece before it sleeps:
#: a sleeping thread of a 2-core VM took 60-310 us to wake (median 227 us, the user UNet
#: step at 64², AMD EPYC family 26 model 2), about 5 times a step
SPIN_SECONDS = 300e-6

_cond = threading.Condition(threading.Lock())
_queue: collections.deque = collections.deque()
#: work queued or running on the side worker (not work taken back by the calling thread):
#: while there is any, the calling thread's kernels leave a thread to it
_pending = 0
_worker: threading.Thread | None = None
_worker_ident = 0
ENV_VAR = "SANDBOX_OVERLAP"


class Pending:
    """A value that is being computed beside the calling thread."""

    __slots__ = ()

    def result(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def cancel(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class Deferred(Pending):
    """The result of work handed to the side worker by :func:`submit`."""

    __slots__ = ("_fn", "_args", "_context", "_state", "_value", "_error")

    def __init__(self, fn, args, context):
        self._fn, self._args, self._context = fn, args, context
        self._state = _QUEUED
        self._value = self._error = None

    def result(self):
        """The work's return value: waited for, or computed here if not started yet."""
        if self._state != _DONE:
            with _cond:
                steal = self._state == _QUEUED
                if steal:
                    _take_back(self)
                while not steal and self._state != _DONE:
                    _cond.wait()
            if steal:
                _run(self)
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> None:
        """Drop the work if it has not started; else wait for it (its result unused)."""
        with _cond:
            if self._state == _QUEUED:
                _take_back(self)
                self._state = _DONE
            while self._state != _DONE:
                _cond.wait()
        self._fn = self._args = self._context = self._value = self._error = None

    def item(self, index) -> Pending:
        """``result()[index]``, pending."""
        return _Item(self, index)


class _Item(Pending):
    """One element of a :class:`Deferred` sequence."""

    __slots__ = ("_of", "_index")

    def __init__(self, of: Deferred, index):
        self._of, self._index = of, index

    def result(self):
        return self._of.result()[self._index]

    def cancel(self) -> None:
        self._of.cancel()


def _take_back(task: Deferred) -> None:
    """Take queued ``task`` from the side worker, for this thread (under ``_cond``)."""
    global _pending
    _queue.remove(task)
    task._state = _RUNNING
    _pending -= 1


def _run(task: Deferred, on_worker: bool = False) -> None:
    """Run ``task`` on this thread and publish its result."""
    global _pending
    try:
        task._value = task._context.run(task._fn, *task._args)
    except BaseException as exc:  # noqa: BLE001 - raised again by result()
        task._error = exc
    with _cond:
        task._state = _DONE
        task._fn = task._args = task._context = None
        if on_worker:
            _pending -= 1
        _cond.notify_all()


def _work() -> None:
    global _worker_ident
    _worker_ident = threading.get_ident()
    while True:
        with _cond:
            task = _queue.popleft() if _queue else None
            if task is None:
                seen = _wait.ticket()  # read under the lock: a later submit changes it
            else:
                task._state = _RUNNING
        if task is None:
            # a while awake (without the GIL) for the next piece, then asleep
            if _wait.spin_while(seen, SPIN_SECONDS) == seen:
                with _cond:
                    while not _queue:
                        _cond.wait()
            continue
        _run(task, on_worker=True)


_wait = None  # sandbox._C._wait, loaded with the first worker (not at import)


def _start() -> None:
    """Start the side worker if it is not running (under ``_cond``)."""
    global _worker, _wait
    if _wait is None:
        from .._C import _wait
    if _worker is None or not _worker.is_alive():
        _worker = threading.Thread(target=_work, name="sandbox-side", daemon=True)
        _worker.start()


def _reset_after_fork() -> None:
    """In a forked child: no side worker, no work, and a lock no thread of the parent
    can hold (it may have held it at the fork)."""
    global _worker, _worker_ident, _pending, _cond
    _worker, _worker_ident, _pending = None, 0, 0
    _cond = threading.Condition(threading.Lock())
    _queue.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def submit(fn, *args) -> Deferred:
    """Queue ``fn(*args)`` for the side worker.

    Parameters
    ----------
    fn : callable
        Work that spends its time in kernels that release the GIL and writes only memory
        that nothing else reads before its result is asked for.  It runs in a copy of
        the calling thread's context.
    *args
        Its arguments, held until it has run.

    Returns
    -------
    Deferred
        Its result, pending: :meth:`Deferred.result` waits for it (or runs it here if
        the side worker has not started it).
    """
    global _pending
    task = Deferred(fn, args, contextvars.copy_context())
    with _cond:
        _start()
        _queue.append(task)
        _pending += 1
        _wait.bump()
        _cond.notify_all()
    return task


def drain() -> None:
    """Run the queued work that the side worker has not started on the calling thread,
    the last submitted first, while the side worker takes the first; then wait until
    the side worker is done."""
    while True:
        with _cond:
            if not _queue:
                while _pending:
                    _cond.wait()
                return
            task = _queue[-1]
            _take_back(task)
        _run(task)


def threads_here(n: int) -> int:
    """Threads a kernel called on this thread may use out of ``n``.

    Parameters
    ----------
    n : int
        The thread count set (:func:`sandbox.get_num_threads`).

    Returns
    -------
    int
        ``n`` when no work is queued or running on the side worker; else 1 on the side
        worker and ``max(n - 1, 1)`` on any other thread.
    """
    if not _pending:
        return n
    if threading.get_ident() == _worker_ident:
        return 1
    return max(n - 1, 1)


#: what :func:`set_mode` takes
MODES = ("off", "auto", "always")


def _mode_from_env() -> str:
    value = os.environ.get(ENV_VAR, "auto").strip().lower()
    value = {"0": "off", "1": "auto", "": "auto"}.get(value, value)
    if value not in MODES:
        raise ValueError(f"environment variable {ENV_VAR} must be one of "
                         f"{', '.join(MODES)} (or 0 / 1), got {os.environ[ENV_VAR]!r}")
    return value


def mode() -> str:
    """Whether ops may hand work to the side worker: ``"off"``, ``"auto"`` (where it
    was faster lately: ``sandbox.autograd._schedule``) or ``"always"``."""
    return _mode


def set_mode(value: str) -> None:
    """Set :func:`mode` (the environment variable ``SANDBOX_OVERLAP`` sets it at import).

    Parameters
    ----------
    value : {"off", "auto", "always"}
        ``"auto"`` (the default) runs each backward pass whichever way was faster for
        graphs like it lately; the results are the same bits in every mode.
    """
    global _mode
    if value not in MODES:
        raise ValueError(f"overlap mode must be one of {', '.join(map(repr, MODES))}, "
                         f"got {value!r}")
    _mode = value


_mode = _mode_from_env()
