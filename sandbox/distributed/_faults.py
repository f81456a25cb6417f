"""Failing on purpose (for the tests) and ending the whole job when a rank fails.

An exception on one rank would leave the others waiting in the next collective for
ever: :func:`abort_job` prints which rank failed and why, then aborts every process
of the job (``MPI_Abort``).  A rank that dies outright (killed, out of memory) is
noticed by the launcher, which ends the others.

A rank that is alive but stuck (or waits for one that is) is not noticed by MPI:
:class:`Watchdog` aborts the job when no step has finished for a given time
(``sandbox train --watchdog SECONDS``).

``SANDBOX_FAIL_RANK=R:S[:kill|:term|:hang]`` makes rank ``R`` raise (or send itself
``SIGKILL``, or ``SIGTERM`` as ``scancel`` would, or stop making progress) at optimiser
step ``S``: how the tests check these paths.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

FAIL_ENV = "SANDBOX_FAIL_RANK"


class InjectedFailure(RuntimeError):
    """The failure asked for by ``SANDBOX_FAIL_RANK``."""


def maybe_fail(rank: int, step: int) -> None:
    """Fail as ``SANDBOX_FAIL_RANK`` asks, if it names ``rank`` and ``step``."""
    spec = os.environ.get(FAIL_ENV, "").strip()
    if not spec:
        return
    fields = spec.split(":")
    try:
        which, at = int(fields[0]), int(fields[1])
    except (IndexError, ValueError):
        raise ValueError(
            f"{FAIL_ENV} must be RANK:STEP or RANK:STEP:kill|term|hang, got {spec!r}"
        ) from None
    if which == rank and step == at:
        if fields[2:] == ["kill"]:
            os.kill(os.getpid(), signal.SIGKILL)
        if fields[2:] == ["term"]:  # a stop request on this rank only: must stop all
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if fields[2:] == ["hang"]:  # alive, but no progress: for the watchdog
            while True:
                time.sleep(1)
        raise InjectedFailure(f"failure injected by {FAIL_ENV}={spec} at step {step}")


def abort_job(comm, exc: BaseException, prog: str = "sandbox train") -> None:
    """Print ``<prog>: rank R: <error>; aborting all ranks`` and abort the job."""
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    print(f"{prog}: rank {comm.rank}: {what}; aborting all ranks", file=sys.stderr, flush=True)
    comm.abort(1)


class Watchdog:
    """Abort the job when :meth:`progress` has not been called for ``seconds``.

    Parameters
    ----------
    comm : Communicator
    seconds : float
        The longest a step (or a validation, or a checkpoint) may take.
    """

    def __init__(self, comm, seconds: float):
        self.comm, self.seconds = comm, float(seconds)
        self._last = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="sandbox-watchdog",
                                        daemon=True)

    def start(self) -> Watchdog:
        self._last = time.monotonic()
        self._thread.start()
        return self

    def progress(self) -> None:
        self._last = time.monotonic()

    def stop(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(min(1.0, self.seconds / 4)):
            idle = time.monotonic() - self._last
            if idle > self.seconds:
                print(f"sandbox train: rank {self.comm.rank}: no progress for {idle:.0f} s "
                      f"(--watchdog {self.seconds:g}): this rank or one it waits for is "
                      "stuck; aborting all ranks", file=sys.stderr, flush=True)
                self.comm.abort(1)
