"""Which schedule a backward pass runs, chosen by the time it took.

A plain backward pass can run in two ways that give the same bits: every kernel on the
calling thread with all threads, or the gradients that only leaves read (a
convolution's weight and bias: ``Function.deferrable``) beside it on the side worker of
:mod:`sandbox.runtime.overlap`, each side with one thread fewer.  Which is faster
depends on the moment more than on the graph.  Measured on a 2-core AMD EPYC VM
(family 26 model 2), the user-written UNet step at 64², batch 8: while a 2-thread
kernel ran at twice the speed of a 1-thread one, the second way took 0.99-1.03 of the
first's time; in the minutes when it did not (a core shared with other work), 0.88-0.94.

So each kind of graph (its node count and its first and last op) keeps the times of
its last passes under both schedules, runs the faster one, and every
``PROBE_EVERY``-th pass runs the other one, to notice when the machine changed.  Only
the time changes: the results are the same bits either way.
"""

from __future__ import annotations

import collections
import statistics
import time

__all__ = ["Schedule", "schedule_for"]

#: one pass in this many runs the schedule that was slower, to notice a change
PROBE_EVERY = 8
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
        faster = statistics.median(on) <= statistics.median(off)
        return faster if self.passes % PROBE_EVERY else not faster

    def record(self, deferred: bool, seconds: float) -> None:
        self.times[deferred].append(seconds)


_kinds: collections.OrderedDict = collections.OrderedDict()


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
