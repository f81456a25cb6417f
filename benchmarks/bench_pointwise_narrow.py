"""A 1x1 convolution with a small side (a segmentation head of a few classes) through the
narrow-product kernel against the path it replaced (one BLAS product a sample, on one
thread), interleaved call by call in one process: forward and input gradient, batch 8
unless --batch, medians in ms.  The old path is the same code with
``_pointwise.NARROW_SIDE = 0``.

    python benchmarks/bench_pointwise_narrow.py --threads 1 2
    python benchmarks/bench_pointwise_narrow.py --threads 2 --layers 16-2-64 32-4-128
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _medians(fn_old, fn_new, repeat):
    """Medians (ms) of two callables timed alternately, and the median of the ratios."""
    old, new = [], []
    for r in range(repeat + 2):  # two untimed rounds
        t0 = time.perf_counter()
        fn_old()
        t1 = time.perf_counter()
        fn_new()
        t2 = time.perf_counter()
        if r >= 2:
            old.append(t1 - t0)
            new.append(t2 - t1)
    ratio = statistics.median(n / o for n, o in zip(new, old, strict=True))
    return statistics.median(old) * 1e3, statistics.median(new) * 1e3, ratio


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--layers", nargs="+", metavar="CIN-COUT-SIZE",
                        default=["16-2-64", "16-2-128", "16-1-128", "16-4-128", "32-3-64"])
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.array.conv import _pointwise
    from sandbox.runtime import simd

    print(f"cpu: {simd.cpu().describe()}; path {simd.current().isa}; batch {args.batch}; "
          f"ms, median of {args.repeat} interleaved calls (ratio: median of new / old)")
    rng = np.random.default_rng(0)
    for threads in args.threads:
        sandbox.set_num_threads(threads)
        for layer in args.layers:
            cin, cout, size = (int(v) for v in layer.split("-"))
            x = rng.standard_normal((args.batch, cin, size, size)).astype(np.float32)
            g = rng.standard_normal((args.batch, cout, size, size)).astype(np.float32)
            wmat = rng.standard_normal((cout, cin)).astype(np.float32)
            y = np.empty_like(g)
            gx = np.empty_like(x)

            def forward(side, x=x, wmat=wmat, y=y):
                _pointwise.NARROW_SIDE = side
                _pointwise.forward(x, wmat, None, y)

            def input_grad(side, g=g, wmat=wmat, gx=gx):
                _pointwise.NARROW_SIDE = side
                _pointwise.input_grad(g, wmat, gx)

            try:
                for name, fn in (("forward", forward), ("input grad", input_grad)):
                    old, new, ratio = _medians(lambda fn=fn: fn(0), lambda fn=fn: fn(8),
                                               args.repeat)
                    print(f"{threads} thread(s) {cin:3d}->{cout:2d}@{size:<4d} {name:10s} "
                          f"BLAS a sample {old:6.3f}  narrow {new:6.3f}  ({ratio:.2f})")
            finally:
                _pointwise.NARROW_SIDE = 8


if __name__ == "__main__":
    main()
