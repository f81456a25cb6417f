"""Timing: interleaved repeats of ours and PyTorch's, robust statistics, peak memory.

Each case is timed as ``repeat`` samples after ``warmup`` calls.  When a PyTorch
twin exists, its samples are interleaved with ours (alternating which goes first)
so both see the same background load on a shared machine; the ratio of the two
medians is the stable number, the absolute times drift with the load.  Timed at
several thread counts (:func:`time_pairs`), the counts are interleaved the same way,
round by round, so the speed-up between them is paired too.

A sample is one call, or, for calls shorter than ``min_sample`` (1 ms by default),
as many consecutive calls as fill it (as ``timeit`` loops), its time divided by
their number.  A single call of tens of microseconds, right after the other
library's, measures mostly threads waking up and caches refilling (on the 2-core VM
this was written on, 30-100 % spread for 30 us calls); a training step calls its
kernels back to back.
For the same reason every sample starts with one untimed call of its function (its
*lead-in*, unless ``lead_in=False``), so that it measures a run of calls as a training
loop makes them, each after the library's own.  The other library's sample, or a
sample at another thread count, leaves this library's threads asleep and its data out
of the caches: on an AMD EPYC family 25 model 1 VM a 2-thread grid sampling call of
40 us took 130 us after 2 ms of Python and 240 us after 10 ms, then 74, 53 and 44 us
(``python benchmarks/bench_first_calls.py --part wake``;
``benchmarks/bench_thread_wake.py`` times the same on a ReLU), and the user-written
UNet step (64^2 bilinear, batch 8) gained 1.49x from the second thread without a
lead-in and 1.61x with one, PyTorch's 1.52x and 1.64x, the ratio between the libraries
the same (``python benchmarks/bench_first_calls.py --part lead-in --cases
unet-user/bilinear/64 --threads 1 2 --rounds 4 --repeat 5``).  Both libraries get the
lead-in.

Spread is reported as the interquartile range (IQR) and the median absolute
deviation (MAD); ``1.4826 * MAD`` estimates the standard deviation of normal
noise and is what the regression check uses.

CPU utilisation is the process's CPU time (``time.process_time``: every thread
of the process, ours and PyTorch's pools alike) over the wall time of the same
timed calls, summed over the repeats: 1.0 is one busy core, 2.0 two.  Each
library's calls are counted apart.
Linux adds a thread's CPU time to the process's count when the thread is switched
out or at the scheduler tick (4 ms at ``CONFIG_HZ=250``), except for the calling
thread, so a worker thread that runs through a sample of a few milliseconds is
counted in whichever sample its next tick falls in, often the other library's: a
batch-1 grid sampling case, where PyTorch runs on one thread, showed ours at 1.16
cores and PyTorch at 1.83 with samples of 1 ms.  Cores are therefore given only for
samples of at least :data:`CORES_MIN_SAMPLE` (None otherwise).

Peak memory is measured with :mod:`tracemalloc` in one extra call of our
function, after the timed calls (tracing slows Python allocations, so it never
runs while timing).  numpy reports its array buffers to tracemalloc, so the
number is "bytes of numpy arrays (and Python objects) alive at the peak, above
what was alive before the call".  Scratch that the Cython kernels ``malloc``
themselves, and everything PyTorch allocates, are not seen.
"""

from __future__ import annotations

import gc
import math
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

MAD_TO_SIGMA = 1.4826  # sigma of a normal distribution = 1.4826 * MAD
#: The shortest timed sample, in seconds: shorter calls are repeated within a sample.
MIN_SAMPLE = 1e-3
#: Samples shorter than this (seconds) get no CPU utilisation (the tick's granularity).
CORES_MIN_SAMPLE = 20e-3
_MAX_CALLS = 1000  # calls per sample at most


@dataclass
class Stats:
    """Summary of repeated timings, all in seconds."""

    median: float
    iqr: float
    mad: float
    min: float
    n: int
    cores: float | None = None
    calls: int = 1  # consecutive calls per sample
    #: the per-call time of each sample, in the order taken (rounds, for time_pairs)
    samples: tuple = field(default=(), repr=False)

    @property
    def rel_noise(self) -> float:
        """Robust relative standard deviation: ``1.4826 * MAD / median``."""
        return MAD_TO_SIGMA * self.mad / self.median if self.median > 0 else 0.0

    def as_dict(self) -> dict:
        """JSON-ready dictionary (seconds)."""
        return {"median": self.median, "iqr": self.iqr, "mad": self.mad, "min": self.min,
                "n": self.n, "cores": self.cores, "calls": self.calls}


def summarize(times, cpu_times=None, calls: int = 1) -> Stats:
    """Median, IQR, MAD, minimum and count of a sequence of timings (seconds, per
    call); with the process CPU time of the same calls, the cores busy (sum CPU / sum
    wall) where a sample (``calls`` calls) lasts at least :data:`CORES_MIN_SAMPLE`;
    ``calls`` is recorded as the calls per sample."""
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        raise ValueError("times must not be empty")
    med = float(np.median(t))
    q1, q3 = np.percentile(t, [25, 75])
    cores = None
    if cpu_times is not None and t.sum() > 0 and med * calls >= CORES_MIN_SAMPLE:
        cores = float(np.sum(cpu_times) / t.sum())
    return Stats(median=med, iqr=float(q3 - q1), mad=float(np.median(np.abs(t - med))),
                 min=float(t.min()), n=int(t.size), cores=cores, calls=calls,
                 samples=tuple(t.tolist()))


def paired_ratio(a: Stats, b: Stats) -> float:
    """The median over rounds of ``a``'s sample over ``b``'s of the same round, for two
    functions timed in the same rounds (:func:`time_pairs`): a change of the machine's
    speed between rounds moves both samples of a round and cancels in their ratio, where
    it stays in the ratio of the medians (which this falls back to when the samples do
    not pair)."""
    if a.samples and len(a.samples) == len(b.samples):
        return float(np.median(np.divide(a.samples, b.samples)))
    return a.median / b.median


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _timed_cpu(fn, walls: list, cpus: list, calls: int = 1, lead_in: bool = False) -> None:
    """Append the wall time and the process CPU time per call of ``calls`` consecutive
    calls of ``fn`` (after one untimed call with ``lead_in``)."""
    if lead_in:
        fn()
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    walls.append((time.perf_counter() - t0) / calls)
    cpus.append((time.process_time() - c0) / calls)


def calls_per_sample(fn, min_sample: float = MIN_SAMPLE) -> int:
    """Consecutive calls of ``fn`` that fill ``min_sample`` seconds (from the fastest of
    three calls; 1 for a call that long, or for ``min_sample`` <= 0)."""
    if min_sample <= 0:
        return 1
    fastest = min(_timed(fn) for _ in range(3))
    return max(1, min(_MAX_CALLS, math.ceil(min_sample / max(fastest, 1e-9))))


def median_ms(fn, repeat: int = 7, warmup: int = 2) -> float:
    """Median wall time of ``fn()`` in milliseconds, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    return 1e3 * summarize([_timed(fn) for _ in range(repeat)]).median


def time_pair(ours, theirs=None, repeat: int = 7, warmup: int = 2,
              min_sample: float = MIN_SAMPLE, lead_in: bool = True):
    """Time ``ours`` and (optionally) ``theirs`` with interleaved repeats.

    Parameters
    ----------
    ours : callable
        Our work, called without arguments.
    theirs : callable, optional
        PyTorch's version of the same work.
    repeat : int
        Timed calls of each function.
    warmup : int
        Untimed calls of each function before timing (caches, weight tables,
        thread pools, lazy initialisation).
    min_sample : float
        Seconds a sample lasts at least: a shorter call is repeated back to back
        within each sample (:func:`calls_per_sample`, for each function apart); 0
        times single calls.
    lead_in : bool
        Start every sample with an untimed call of its function (not with
        ``min_sample`` 0, which times single calls as they come).

    Returns
    -------
    tuple of (Stats, Stats or None)
        Timings of ours and of theirs, with their CPU utilisation (``cores``).  The
        garbage collector is off while timing.
    """
    return time_pairs({None: (ours, theirs)}, lambda n: None, repeat=repeat, warmup=warmup,
                      min_sample=min_sample, lead_in=lead_in)[None]


def time_pairs(works: dict, switch, repeat: int = 7, warmup: int = 2,
               min_sample: float = MIN_SAMPLE, lead_in: bool = True) -> dict:
    """:func:`time_pair` at several thread counts, interleaved: ``works`` maps each count
    ``n`` to its ``(ours, theirs)`` (``theirs`` may be None), and each round times both
    functions at every count, ``switch(n)`` setting the count before its samples (the
    order of the counts, and of the two functions, alternating from round to round).
    A third function, ``(ours, theirs, baseline)``, is timed in the same rounds (the
    order then ``ours, theirs, baseline`` and reversed); None skips it.

    So the counts see the same background load, and the speed-up from one count to
    another compares samples taken seconds apart rather than a case's runs minutes
    apart (on the 2-core VMs the host's share of the CPU changes within a minute).

    Returns
    -------
    dict
        ``{n: (Stats of ours, Stats of theirs or None)}`` for every ``n`` of ``counts``,
        with a third item, the Stats of the baseline or None, where ``works`` gave three
        functions.  The last count is left in force.
    """
    counts = list(works)
    fns = {n: list(fs) for n, fs in works.items()}
    plans = {}
    for n, fs in fns.items():
        switch(n)
        for _ in range(warmup):
            for fn in fs:
                if fn is not None:
                    fn()
        plans[n] = [(calls_per_sample(fn, min_sample), lead_in and min_sample > 0)
                    if fn is not None else None for fn in fs]
    samples = {n: [([], []) for _ in fs] for n, fs in fns.items()}  # (walls, cpus) each
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for i in range(repeat):
            for n in (counts if i % 2 == 0 else counts[::-1]):
                if len(counts) > 1:
                    switch(n)
                order = range(len(fns[n])) if i % 2 == 0 else reversed(range(len(fns[n])))
                for j in order:
                    if fns[n][j] is not None:
                        _timed_cpu(fns[n][j], *samples[n][j], *plans[n][j])
    finally:
        if was_enabled:
            gc.enable()
    out = {}
    for n, fs in fns.items():
        out[n] = tuple(summarize(walls, cpus, plans[n][j][0]) if fs[j] is not None else None
                       for j, (walls, cpus) in enumerate(samples[n]))
    return out


def peak_memory(fn) -> int:
    """Peak bytes traced by :mod:`tracemalloc` during one call of ``fn``, above the start.

    If tracing was already on (e.g. ``python -X tracemalloc``) it is left on.
    """
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        gc.collect()
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started:
            tracemalloc.stop()
    return max(int(peak - before), 0)
