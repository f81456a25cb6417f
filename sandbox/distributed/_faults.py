"""Failing on purpose (for the tests) and ending the whole job when a rank fails.

An exception on one rank would leave the others waiting in the next collective for
ever: :func:`abort_job` prints which rank failed and why, then aborts every process
of the job (``MPI_Abort``).  A rank that dies outright (killed, out of memory) is
noticed by the launcher, which ends the others.

``SANDBOX_FAIL_RANK=R:S[:kill|:term]`` makes rank ``R`` raise (or send itself
``SIGKILL``, or ``SIGTERM`` as ``scancel`` would) at optimiser step ``S``: how the tests
check these paths.
"""

from __future__ import annotations

import os
import signal
import sys

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
            f"{FAIL_ENV} must be RANK:STEP, RANK:STEP:kill or RANK:STEP:term, got {spec!r}"
        ) from None
    if which == rank and step == at:
        if fields[2:] == ["kill"]:
            os.kill(os.getpid(), signal.SIGKILL)
        if fields[2:] == ["term"]:  # a stop request on this rank only: must stop all
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise InjectedFailure(f"failure injected by {FAIL_ENV}={spec} at step {step}")


def abort_job(comm, exc: BaseException, prog: str = "sandbox train") -> None:
    """Print ``<prog>: rank R: <error>; aborting all ranks`` and abort the job."""
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    what = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    print(f"{prog}: rank {comm.rank}: {what}; aborting all ranks", file=sys.stderr, flush=True)
    comm.abort(1)
