"""Second by second, what a 2-thread step and the machine under it do: to tell a slow
phase of a VM from a change of the code.

Each row times a few user-UNet steps (``sandbox.bench._cases_user``) at 2 threads and at
1, an empty OpenMP region back to back and after 0.3 ms idle
(``sandbox.bench._env.region_cost``), how evenly fast the CPUs are
(``_env.cpu_balance``), the bandwidth of a one-thread ``np.copyto`` and how much longer
two pinned threads take to read what the other one wrote than their own data
(``_env.cross_core_cost``: ``cross``, 1.0 where the cores share a cache), then prints one
line.  On the 2-core Zen 5 VM of 7 December 2026 the slow phases showed as the region
back to back at 2.5 us instead of 1.6 (the 2-thread step 37 ms instead of 28.5, the rest
unchanged), and in the session after as ``cross`` at 1.6-1.8 instead of 1.0:

    python benchmarks/monitor_phases.py --seconds 300 > phases.log
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0,
                        help="how long to go on (at least one row is printed)")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5, help="timed steps a row and count")
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.bench import _env
    from sandbox.bench._cases_user import profiled_step
    from sandbox.runtime import simd

    step = profiled_step(size=args.size, batch=args.batch)
    src = np.ones(2**22, np.float32)  # 16 MiB
    dst = np.empty_like(src)
    print(f"cpu: {simd.cpu().describe()}; {args.size}^2, batch {args.batch}; ms medians of "
          f"{args.steps} steps; region in us; balance: slowest / fastest CPU; copy GB/s; cross: "
          "the other core's data / one's own")
    print("time      step_2t  step_1t  region  region_woken  balance  copy  cross")
    before = sandbox.get_num_threads()
    end = time.monotonic() + args.seconds
    try:
        while True:
            row = []
            for threads in (2, 1):
                sandbox.set_num_threads(threads)
                step()  # untimed: the count just changed
                times = []
                for _ in range(args.steps):
                    start = time.perf_counter()
                    step()
                    times.append(time.perf_counter() - start)
                row.append(1e3 * statistics.median(times))
            region = _env.region_cost(2, calls=500, idle_calls=10, idle_seconds=0.0003)
            balance = _env.cpu_balance(0.2)
            start = time.perf_counter()
            for _ in range(5):
                np.copyto(dst, src)
            copy = 5 * 2 * src.nbytes / (time.perf_counter() - start) / 1e9
            cross = _env.cross_core_cost(0.2)
            print(f"{time.strftime('%H:%M:%S')}  {row[0]:7.1f}  {row[1]:7.1f}  "
                  f"{region['spinning_us']:6.2f}  {region['waking_us']:12.1f}  "
                  f"{balance['median'] if balance else float('nan'):7.2f}  {copy:5.1f}  "
                  f"{cross['ratio'] if cross else float('nan'):5.2f}", flush=True)
            if time.monotonic() >= end:
                break
    finally:
        sandbox.set_num_threads(before)


if __name__ == "__main__":
    main()
