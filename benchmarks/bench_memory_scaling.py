"""What a second core adds to streaming work: the project's threaded elementwise add of two
float32 arrays into a third (three streams) at each thread count, from arrays that fit the
last-level cache to arrays far larger, interleaved round by round, medians.

A training step's memory-bound kernels (the optimiser, batch norm on large maps, copies,
the first read of an activation that left the cache) cannot scale from 1 to 2 threads by
more than this does; the bench's header gives the same figure for a plain copy
(``sandbox bench --threads 1,2``: "threaded: 1 thread ..., 2 threads ...").

    python benchmarks/bench_memory_scaling.py --threads 1 2 --mib 4 16 64 256
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--mib", type=int, nargs="+", default=[4, 16, 64, 256],
                        help="size of each of the three arrays, MiB")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sample", type=float, default=0.05, help="seconds a timed sample")
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.array import arith
    from sandbox.runtime import simd

    print(f"cpu: {simd.cpu().describe()}; GB/s of a threaded add (3 streams), medians of "
          f"{args.rounds} interleaved rounds")
    print("MiB  " + "  ".join(f"{t} thread(s)" for t in args.threads) + "  last / first")
    for mib in args.mib:
        n = mib * 2**20 // 4
        a, b = np.ones(n, np.float32), np.ones(n, np.float32)
        out = np.empty(n, np.float32)
        rates = {t: [] for t in args.threads}
        for _ in range(args.rounds):
            for t in args.threads:
                sandbox.set_num_threads(t)
                arith.add(a, b, out=out)  # warm-up (and the pages of out)
                start, calls = time.perf_counter(), 0
                while time.perf_counter() - start < args.sample:
                    arith.add(a, b, out=out)
                    calls += 1
                rates[t].append(3 * out.nbytes * calls / (time.perf_counter() - start) / 1e9)
        med = {t: statistics.median(v) for t, v in rates.items()}
        first, last = args.threads[0], args.threads[-1]
        print(f"{mib:<5d}" + "  ".join(f"{med[t]:11.1f}" for t in args.threads)
              + f"  {med[last] / med[first]:11.2f}")


if __name__ == "__main__":
    main()
