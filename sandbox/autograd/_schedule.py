"""Which schedule a backward pass runs, chosen by the time it took.

A plain backward pass can run in two ways that give the same bits: every kernel on the
calling thread with all threads, or the gradients that only leaves read (a
convolution's weight and bias: ``Function.deferrable``) beside it on the side worker of
:mod:`sandbox.runtime.overlap`, each side with one thread fewer.  Which is faster
depends on the moment more than on the graph.  Measured on a 2-core AMD EPYC VM
(family 26 model 2) at 2 threads (the only count with a thread to spare), the
user-written UNet's backward pass at 64², batch 8, took
1.03-1.05 of its time beside while a 2-thread kernel ran at twice the speed of a
1-thread one (each way then keeps both cores busy, and the weight gradients, slightly
more work than the input gradients, end last), and 0.80-0.86 in the minutes when it
did not (a core slowed by other work: the two sides then run apart instead of waiting
for each other in every kernel); ``python benchmarks/ab_overlap.py --size 64 --threads 2
--backward``.

So each kind of graph (its node count and its first and last op) keeps the times of
its last passes under both schedules, runs the faster one, and every
``PROBE_EVERY``-th pass runs the other one, to notice when the machine changed (every
``4 * PROBE_EVERY``-th where it was ``FAR`` behind).  Only
the time changes: the results are the same bits either way.
"""

from __future__ import annotations

import collections
import time

__all__ = ["Schedule", "schedule_for", "worth_timing"]

#: one pass in this many runs the schedule that was slower, to notice a change
PROBE_EVERY = 8
#: by how much the way beside must be faster to be run: it costs a worker thread's
#: wake-ups and holds arrays longer, and the two ways' times scatter by a few per cent
MARGIN = 0.03
#: how much slower the slower way must be to be probed ``4 * PROBE_EVERY`` times as rarely
FAR = 1.25
#: passes remembered per schedule
WINDOW = 5
#: graph kinds remembered (least recently used dropped)
KINDS = 64


class Schedule:
    """The times of one kind of graph's backward passes, by schedule (True: beside)."""

    __slots__ = ("times", "passes")

    def __init__(self):
        self.times = {True: collections.deque(maxlen=WINDOW),
                      False: collections.deque(maxlen=WINDOW)}
        self.passes = 0

    def pick(self) -> bool:
        """Whether the next pass defers (runs its leaf gradients beside)."""
        self.passes += 1
        on, off = self.times[True], self.times[False]
        if len(on) < 2 or len(off) < 2:  # try each a second time (the first is cold)
            return len(on) <= len(off)
        m_on, m_off = _median(on), _median(off)
        faster = m_on < (1 - MARGIN) * m_off  # beside only where clearly faster
        # the slower way far behind (a pass of a single layer, whose weight gradient
        # beside waits for a thread to wake): probed four times as rarely
        every = PROBE_EVERY if max(m_on, m_off) < FAR * min(m_on, m_off) else 4 * PROBE_EVERY
        return faster if self.passes % every else not faster

    def record(self, deferred: bool, seconds: float) -> None:
        self.times[deferred].append(seconds)


def _median(times) -> float:
    """The median of a few times (``statistics`` would add 2 ms to ``import sandbox``:
    its fractions and decimal modules)."""
    ordered = sorted(times)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


_kinds: collections.OrderedDict = collections.OrderedDict()


def worth_timing(order) -> bool:
    """Whether a pass over ``order`` may gain from work beside: it has two Functions with
    ``deferrable`` gradients or more.  With one (a single layer's backward), the work
    beside has nothing to run with but that layer's input gradient, and waking the side
    worker costs more: 256->256 channels at 4x4, batch 8, took 0.86-1.1 ms beside against
    0.56 ms in turn (2 threads, AMD EPYC family 26 model 2)."""
    count = 0
    for node in order:
        if node._fn.deferrable:
            count += 1
            if count == 2:
                return True
    return False


def schedule_for(order) -> Schedule:
    """The :class:`Schedule` of graphs like ``order`` (the nodes a walk visits)."""
    key = (len(order), order[0]._fn, order[-1]._fn)
    entry = _kinds.get(key)
    if entry is None:
        entry = _kinds[key] = Schedule()
        if len(_kinds) > KINDS:
            _kinds.popitem(last=False)
    else:
        _kinds.move_to_end(key)
    return entry


clock = time.perf_counter
