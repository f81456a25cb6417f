"""What the bench's short samples measure: the first calls after a pause, and whole cores.

Three measurements behind ``sandbox bench``'s lead-in call and its ``cores`` rule
(``sandbox/bench/_timing.py``), each printed with the CPU:

* ``--part wake``: a 2-D nearest grid sample of (1, 4, 128, 128) (the bench's
  ``grid_sample/2d/nearest-zeros/b1/fwd`` data) called ``--calls`` times right after the
  calling thread was busy in Python for each of ``--gaps`` ms; the median time of each of
  those calls over ``--rounds`` rounds.  On a VM the first call after a pause wakes the
  idle virtual CPU through the host.  ``--pause sleep`` sleeps instead (``time.sleep``:
  the calling thread idles too, as a loop that waits for its data does).
* ``--part torch-cores``: PyTorch's batch-1 grid sample (nearest, bilinear, bicubic) in
  loops of ``--seconds`` at 1 and 2 threads: time per call and the process's CPU time
  over the wall time of the loop (long enough for the kernel's tick-based accounting of
  other threads).  Needs torch.
* ``--part lead-in``: bench cases (``--cases``) timed as ``sandbox bench`` does
  (:func:`time_pairs`, the ``--threads`` counts interleaved) with and without the
  lead-in call, the two settings alternating over ``--rounds`` rounds; medians of
  ours, PyTorch's and the ratio per count.  Needs torch.

    python benchmarks/bench_first_calls.py --part wake --gaps 0.05 0.2 2 10
    python benchmarks/bench_first_calls.py --part wake --pause sleep --threads 1
    python benchmarks/bench_first_calls.py --part torch-cores
    python benchmarks/bench_first_calls.py --part lead-in --rounds 8
    python benchmarks/bench_first_calls.py --part lead-in --cases unet-user/bilinear/64 \\
        --threads 1 2 --rounds 4 --repeat 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import sandbox
from sandbox.runtime.simd import cpu

LEAD_IN_CASES = ("grid_sample/2d/nearest-zeros/b1/fwd", "grid_sample/2d/bilinear-zeros/b1/fwd",
                 "conv-layer/32-64@16")


def _grid_data(batch=1, size=128, channels=4):
    from sandbox.bench._cases_grid import warp_grid

    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, channels, size, size), dtype=np.float32)
    return x, warp_grid(rng, batch, (size, size)).astype(np.float32)


def _busy(ms: float) -> None:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < ms / 1e3:  # busy in Python: the team idles
        pass


def wake(gaps, calls: int, rounds: int, threads: int, pause: str = "busy") -> None:
    """Median µs of each of the first ``calls`` calls after each gap (``pause``: busy in
    Python or asleep)."""
    from sandbox.array.grid_sample import grid_sample

    x, g = _grid_data()
    sandbox.set_num_threads(threads)
    for _ in range(200):
        grid_sample(x, g, mode="nearest")
    print(f"nearest grid sample (1, 4, 128²) at {threads} thread(s): median µs of call "
          f"1..{calls} after a {pause} gap, {rounds} rounds")
    wait = _busy if pause == "busy" else (lambda ms: time.sleep(ms / 1e3))
    for gap in gaps:
        times = np.empty((rounds, calls))
        for r in range(rounds):
            wait(gap)
            for k in range(calls):
                t = time.perf_counter()
                grid_sample(x, g, mode="nearest")
                times[r, k] = time.perf_counter() - t
        row = " ".join(f"{v:.0f}" for v in np.median(times, axis=0) * 1e6)
        print(f"gap {gap:g} ms: {row}")


def torch_cores(seconds: float) -> None:
    """PyTorch's batch-1 grid sample at 1 and 2 threads: µs a call and cores busy."""
    import torch
    import torch.nn.functional as F

    x, g = (torch.from_numpy(a) for a in _grid_data())
    print(f"PyTorch {torch.__version__} grid_sample (1, 4, 128²), zeros padding, loops of "
          f"{seconds:g} s")
    for mode in ("nearest", "bilinear", "bicubic"):
        for n in (1, 2):
            torch.set_num_threads(n)
            for _ in range(20):
                F.grid_sample(x, g, mode=mode, align_corners=False)
            c0, t0, k = time.process_time(), time.perf_counter(), 0
            while time.perf_counter() - t0 < seconds:
                F.grid_sample(x, g, mode=mode, align_corners=False)
                k += 1
            wall = time.perf_counter() - t0
            print(f"{mode:8s} {n} thread(s): {wall / k * 1e6:8.1f} µs a call, "
                  f"{(time.process_time() - c0) / wall:.2f} cores")


def lead_in(cases, rounds: int, threads, repeat: int) -> None:
    """Bench cases with and without the lead-in call, alternating, at each thread count
    of ``threads`` (interleaved as ``sandbox bench --threads 1,2`` does)."""
    import torch

    from sandbox.bench import _timing, all_cases, select
    from sandbox.bench._env import set_threads

    def switch(n):
        set_threads(n, torch)

    results = {}
    for case in select(all_cases(), list(cases)):
        works = {}
        for n in threads:
            switch(n)
            work = case.build(False, torch)
            works[n] = (work.ours, work.theirs)
        for r in range(rounds):
            for label in (("off", "on") if r % 2 == 0 else ("on", "off")):
                timed = _timing.time_pairs(works, switch, repeat=repeat, warmup=1,
                                           lead_in=label == "on")
                for n in threads:
                    ours, theirs = timed[n]
                    results.setdefault((case.name, label, n), []).append(
                        (ours.median, theirs.median))
    print(f"bench cases, {rounds} rounds, lead-in off / on: median ms of ours and "
          "PyTorch's, median ratio")
    for name, label, n in results:
        v = np.array(results[name, label, n])
        print(f"{name:40s} {n}t {label:3s} ours {np.median(v[:, 0]) * 1e3:9.4f} torch "
              f"{np.median(v[:, 1]) * 1e3:9.4f} ratio {np.median(v[:, 0] / v[:, 1]):.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("wake", "torch-cores", "lead-in"), required=True)
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.05, 0.2, 2, 10],
                        help="wake: ms the caller is busy before the calls")
    parser.add_argument("--calls", type=int, default=8, help="wake: calls after each gap")
    parser.add_argument("--pause", choices=("busy", "sleep"), default="busy",
                        help="wake: the caller busy in Python during a gap, or asleep")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--threads", type=int, nargs="+", default=[2],
                        help="wake: the first count; lead-in: each, interleaved")
    parser.add_argument("--seconds", type=float, default=1.0, help="torch-cores: loop length")
    parser.add_argument("--cases", nargs="+", default=list(LEAD_IN_CASES))
    parser.add_argument("--repeat", type=int, default=9, help="lead-in: samples a round")
    args = parser.parse_args(argv)
    print(f"cpu: {cpu().describe()}")
    if args.part == "wake":
        wake(args.gaps, args.calls, args.rounds, args.threads[0], args.pause)
    elif args.part == "torch-cores":
        torch_cores(args.seconds)
    else:
        lead_in(args.cases, args.rounds, args.threads, args.repeat)


if __name__ == "__main__":
    main()
