"""How far a step's kernels scale from one thread count to another, in the step's order and
alone: which part of the speed-up the kernels lose to data that left the caches.

One step of the user-written UNet (``sandbox.bench._cases_user``) is recorded at each thread
count: every call of a kernel function (``sandbox._C.*``, wrapped as
``profile_step_gaps.py`` wraps them) with its arguments.  The backward runs in turn
(``sandbox.runtime.overlap`` mode ``off``), so both records hold the calls of one thread
in the step's order, each with its thread count.  Then, round after round and the counts
alternating, the calls are replayed:

* **in order**: the step's calls one after another, each timed: what each finds in the
  caches is what the step's previous kernels left (the Python between them is not run);
* **alone**: each call run twice more right after itself, the second timed: its data in
  the caches, as a kernel's own benchmark finds it;
* and real steps, timed whole and inside the kernels (as ``profile_step_gaps.py``).

``in order`` over ``alone`` is the time a call loses to cold data (its inputs read back
from memory, its outputs' lines fetched before they are written), and at the second
thread count that part grows with the machine's memory bandwidth, not with its cores.
What a real step spends outside its kernels is its Python and the other serial work
between them; its kernels run a little faster than in the replay, whose calls write into
the recorded arrays (cold), where the step's new arrays often reuse memory just freed.

    python benchmarks/replay_step_kernels.py --size 64 --threads 1 2 --rounds 11
    python benchmarks/replay_step_kernels.py --volume nearest --threads 1 2   # 3-D step

Where the step calls other kernels at the two counts (the 3-D step copies its slabs on
numpy's one thread at one thread), the rows add each count's calls by kernel and shape.
The kernels write into the recorded arrays again and again (the values change, the shapes
and the work do not).  The rows are kernel functions by the shape of their first array,
largest loss first: ``lost`` is the in-order time at the second count minus the first
count's scaled by the thread ratio (what perfect scaling would have saved).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile_step_gaps import _KernelClock  # noqa: E402  (this folder's script)


class _Recorder(_KernelClock):
    """The gaps script's clock (its wrappers time every outermost kernel call into
    ``inside``), which also appends each such call to ``log`` while that is a list:
    ``(name, shape of the first array, function, args, kwargs)``."""

    log = None

    def wrap(self, module: str, name: str, fn):
        key = f"{module}.{name}"
        timed = super().wrap(module, name, fn)

        def recorded(*args, **kwargs):
            if self.log is not None and not self._depth:
                shape = next((a.shape for a in args if isinstance(a, np.ndarray)), None)
                self.log.append((key, shape, fn, args, kwargs))
            return timed(*args, **kwargs)

        return recorded


def _record(step, clock: _Recorder, threads: int) -> list:
    import sandbox

    sandbox.set_num_threads(threads)
    for _ in range(3):
        step()
    clock.log = []
    try:
        step()
        return clock.log
    finally:
        clock.log = None


def _step_times(step, clock: _Recorder, threads: int, steps: int = 3) -> tuple:
    """Median seconds of a real step at ``threads`` and of its time inside the kernels."""
    import sandbox

    sandbox.set_num_threads(threads)
    step()
    times, inside = [], []
    for _ in range(steps):
        clock.reset()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        inside.append(sum(clock.inside.values()))
    return statistics.median(times), statistics.median(inside)


def replay(step, clock: _Recorder, counts, rounds: int) -> dict:
    """Record the step at each count in ``counts`` and replay it ``rounds`` times.

    Returns
    -------
    dict
        Per count: ``calls``, its ``(name, shape)`` per call (a step may call other
        kernels at another count: the 3-D step's copies run on numpy at one thread),
        ``order`` and ``alone`` (median seconds of each call), ``step`` and ``inside``
        (median seconds of a real step and of its time inside the kernels).
    """
    logs = {t: _record(step, clock, t) for t in counts}
    calls = {t: [(k, s) for k, s, *_ in logs[t]] for t in counts}
    clock_ = time.perf_counter
    order = {t: [[] for _ in logs[t]] for t in counts}
    alone = {t: [[] for _ in logs[t]] for t in counts}
    steps = {t: [] for t in counts}
    inside = {t: [] for t in counts}
    for r in range(rounds):
        for t in (counts if r % 2 == 0 else counts[::-1]):
            for i, (_, _, fn, args, kwargs) in enumerate(logs[t]):
                start = clock_()
                fn(*args, **kwargs)
                order[t][i].append(clock_() - start)
            for i, (_, _, fn, args, kwargs) in enumerate(logs[t]):
                fn(*args, **kwargs)
                start = clock_()
                fn(*args, **kwargs)
                alone[t][i].append(clock_() - start)
            whole, kernels = _step_times(step, clock, t)
            steps[t].append(whole)
            inside[t].append(kernels)
    med = statistics.median
    return {t: {"calls": calls[t], "order": [med(v) for v in order[t]],
                "alone": [med(v) for v in alone[t]], "step": med(steps[t]),
                "inside": med(inside[t])} for t in counts}


def report(result: dict, counts, rows: int) -> None:
    a, b = counts[0], counts[-1]
    ra, rb = result[a], result[b]
    oa, ob, la, lb = sum(ra["order"]), sum(rb["order"]), sum(ra["alone"]), sum(rb["alone"])
    sa, sb, ia, ib = ra["step"], rb["step"], ra["inside"], rb["inside"]
    print(f"{'':24s} {a} thread(s)  {b} thread(s)  speed-up")
    for label, x, y in (("step", sa, sb), ("  its kernels", ia, ib),
                        ("  outside them", sa - ia, sb - ib),
                        ("kernels in order", oa, ob), ("kernels alone", la, lb)):
        print(f"  {label:22s} {x * 1e3:8.2f} ms {y * 1e3:9.2f} ms  {x / y:7.2f}x")
    print(f"  cold data (in order - alone): {(oa - la) * 1e3:.2f} ms at {a}, "
          f"{(ob - lb) * 1e3:.2f} ms at {b} ({(oa - la) / (ob - lb):.2f}x)")
    if ra["calls"] != rb["calls"]:
        print(f"  (the step calls other kernels at {a} and {b} threads: the rows below add "
              f"each count's calls by kernel and shape; 'calls' counts the first's)")
    groups = {}
    for side, r in ((0, ra), (1, rb)):
        for i, key in enumerate(r["calls"]):
            g = groups.setdefault(key, [0, 0.0, 0.0, 0.0, 0.0])
            g[0] += side == 0
            g[1 + side] += r["order"][i]
            g[3 + side] += r["alone"][i]
    scale = a / b
    print(f"  {'kernel':32s} {'first array':18s} calls  in order ms  x      alone x  lost ms")
    for (name, shape), (n, xa, xb, ya, yb) in sorted(
            groups.items(), key=lambda kv: -(kv[1][2] - kv[1][1] * scale))[:rows]:
        print(f"  {name:32s} {str(shape):18s} {n:5d}  {xa * 1e3:5.2f} {xb * 1e3:5.2f} "
              f"{_ratio(xa, xb):>5s}  {_ratio(ya, yb):>7s}  {(xb - xa * scale) * 1e3:7.3f}")


def _ratio(x: float, y: float) -> str:
    return f"{x / y:.2f}" if x and y else "-"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs=2, default=[1, 2])
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--mode", default="bilinear")
    p.add_argument("--volume", metavar="MODE", default=None,
                   help="replay the 3-D UNet step of the bench with this upsampling mode")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--rows", type=int, default=20)
    args = p.parse_args(argv)

    import sandbox
    from sandbox.bench._cases_user import profiled_step
    from sandbox.runtime import overlap, simd

    before_mode, before_threads = overlap.mode(), sandbox.get_num_threads()
    overlap.set_mode("off")
    clock = _Recorder()
    clock.install()
    try:
        step = profiled_step(args.volume, args.size, args.batch, args.mode)
        what = (f"3-D UNet step, {args.volume}" if args.volume
                else f"{args.size}^2, batch {args.batch}, {args.mode}")
        print(f"cpu: {simd.cpu().describe()}; path {simd.current().isa}; {what}; "
              f"medians of {args.rounds} rounds")
        report(replay(step, clock, args.threads, args.rounds), args.threads, args.rows)
    finally:
        clock.uninstall()
        overlap.set_mode(before_mode)
        sandbox.set_num_threads(before_threads)


if __name__ == "__main__":
    main()
