"""What a kernel pays for reading the other core's data, second by second.

A 2-thread kernel (the 2x2 max pool of an (8, 32, 64, 64) float32 map, 4 MB) is timed right
after its input was written by two pinned threads, each scaling one half: either the half
the kernel's thread on that CPU then reads (``own``), or the other half (``swapped``: every
value the kernel reads was just written by the other core).  The OpenMP threads must be
bound to CPUs 0 and 1 for the halves to mean anything, so the script re-runs itself with
``OMP_PROC_BIND=true OMP_PLACES={0},{1}`` unless they are set.  Each line gives the VM's
phase (``sandbox.bench._env.cross_core_cost``) and both medians:

    python benchmarks/bench_owned_data.py --seconds 60

On the 2-core Zen 5 VM of 7 December 2026 (AMD EPYC family 26 model 2), quiet phases
(``cross`` 0.97-0.99) gave 107-113 us either way; slow ones (``cross`` 1.5-2.3) 112-128 us
own and 125-167 us swapped: a kernel that reads what another partition of the work wrote
loses most of what a slow phase costs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np


def _write_halves(halves, swap: bool) -> None:
    """Two threads pinned to CPUs 0 and 1 scale one half each (CPU 0 the first half, or the
    second with ``swap``)."""
    def work(cpu, half):
        os.sched_setaffinity(0, {cpu})
        np.multiply(half, 1.0, out=half)

    threads = [threading.Thread(target=work, args=(cpu, halves[cpu ^ swap])) for cpu in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _measure(seconds: float, rounds: int) -> None:
    import sandbox
    from sandbox.array.pool import max_pool
    from sandbox.bench._env import cross_core_cost
    from sandbox.runtime import simd

    sandbox.set_num_threads(2)
    x = np.ones((8, 32, 64, 64), np.float32)
    flat = x.reshape(-1)
    halves = (flat[: flat.size // 2], flat[flat.size // 2:])

    def pool() -> float:
        start = time.perf_counter()
        max_pool(x, 2, 2)
        return time.perf_counter() - start

    print(f"cpu: {simd.cpu().describe()}; 2x2 max pool of {x.shape} float32 at 2 threads, "
          f"median us of {rounds} calls after each kind of write")
    os.sched_setaffinity(0, {0})  # OpenMP thread 0, the caller, on CPU 0
    for _ in range(3):
        _write_halves(halves, False)
        pool()
    end = time.perf_counter() + seconds
    while True:
        os.sched_setaffinity(0, {0, 1})
        cross = cross_core_cost(0.1)
        os.sched_setaffinity(0, {0})
        own, swapped = [], []
        for _ in range(rounds):
            _write_halves(halves, False)
            own.append(pool())
            _write_halves(halves, True)
            swapped.append(pool())
        print(f"cross {cross['ratio']:.2f}  own {statistics.median(own) * 1e6:6.0f} us  "
              f"swapped {statistics.median(swapped) * 1e6:6.0f} us", flush=True)
        if time.perf_counter() >= end:
            return


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=20, help="calls of each kind a line")
    args = parser.parse_args(argv)
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:  # not Linux
        raise SystemExit("bench_owned_data: needs Linux (CPU pinning)") from None
    if not {0, 1} <= cpus:
        raise SystemExit("bench_owned_data: needs CPUs 0 and 1")
    if os.environ.get("OMP_PLACES") != "{0},{1}":
        env = dict(os.environ, OMP_PROC_BIND="true", OMP_PLACES="{0},{1}")
        argv = sys.argv[1:] if argv is None else list(argv)
        raise SystemExit(subprocess.call([sys.executable, os.path.abspath(__file__), *argv],
                                         env=env))
    _measure(args.seconds, args.rounds)


if __name__ == "__main__":
    main()
