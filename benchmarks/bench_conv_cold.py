"""A convolution's forward with its data in cache and after a cache flush, alone.

In a training step a layer's convolution runs after other ops have filled the caches with
their own data.  This times ``sandbox.array.conv.conv`` (batch 8, 3x3, padding 1) three
ways, interleaved round by round (medians, microseconds):

* ``hot``: right after the same call;
* ``flushed``: right after a 64 MB copy has pushed everything out of the caches;
* ``flushed, input reread``: the same, then the input summed (back in cache) first.

If the last is close to the second, what comes cold is not the input but the output
array and the transforms' scratch.  At 2 threads the flush also leaves the second thread
asleep (an OpenMP region after hundreds of microseconds of other work wakes it), so the
1-thread figures are the cleaner ones.

    python benchmarks/bench_conv_cold.py --threads 1 --layers 16-16-64 48-16-64 64-64-16
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

#: flushing copy: twice the L3 of the machines measured (32 MiB)
FLUSH_FLOATS = 16 * 2**20


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--layers", nargs="+", default=["16-16-64", "48-16-64", "64-64-16"],
                        help="CIN-COUT-SIZE")
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.array.conv import conv, plan_conv
    from sandbox.runtime import simd

    big = np.ones(FLUSH_FLOATS, np.float32)
    sink = np.empty_like(big)
    rng = np.random.default_rng(0)
    print(f"cpu: {simd.cpu().describe()}; batch 8; us, medians of {args.rounds} rounds")
    for threads in args.threads:
        sandbox.set_num_threads(threads)
        for layer in args.layers:
            ci, co, s = (int(v) for v in layer.split("-"))
            x = rng.standard_normal((8, ci, s, s), dtype=np.float32)
            w = rng.standard_normal((co, ci, 3, 3), dtype=np.float32)
            plan = plan_conv(x, w, None, 1, 1, 1, 1, nd=2)

            def forward(x=x, w=w, plan=plan):
                conv(x, w, None, plan=plan)

            times = {"hot": [], "flushed": [], "flushed, input reread": []}
            for _ in range(args.rounds):
                forward()
                times["hot"].append(_timed(forward))
                np.copyto(sink, big)
                times["flushed"].append(_timed(forward))
                np.copyto(sink, big)
                float(x.sum())
                times["flushed, input reread"].append(_timed(forward))
            print(f"{threads} thread(s) {ci:3d}->{co:3d}@{s:<3d} " + "  ".join(
                f"{k} {1e6 * statistics.median(v):8.1f}" for k, v in times.items()))


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
