"""A 1x1 convolution with a small side (a segmentation head of a few classes) through the
narrow-product kernel against the path it replaced (one BLAS product a sample, on one
thread), interleaved in one process (``sandbox.bench._timing.time_pair``, the order
flipping every round): forward and input gradient, batch 8 unless --batch, medians in
ms.  The old path is the same code with
``_pointwise.NARROW_SIDE = 0``.

    python benchmarks/bench_pointwise_narrow.py --threads 1 2
    python benchmarks/bench_pointwise_narrow.py --threads 2 --layers 16-2-64 32-4-128
"""

from __future__ import annotations

import argparse

import numpy as np


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
    from sandbox.bench._timing import paired_ratio, time_pair
    from sandbox.runtime import simd

    print(f"cpu: {simd.cpu().describe()}; path {simd.current().isa}; batch {args.batch}; "
          f"ms, medians of {args.repeat} interleaved samples (sandbox.bench's time_pair; "
          f"ratio: the median of the rounds' new / old)")
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
                    old, new = time_pair(lambda fn=fn: fn(0), lambda fn=fn: fn(8),
                                         repeat=args.repeat)
                    ratio = paired_ratio(new, old)
                    old, new = 1e3 * old.median, 1e3 * new.median
                    print(f"{threads} thread(s) {cin:3d}->{cout:2d}@{size:<4d} {name:10s} "
                          f"BLAS a sample {old:6.3f}  narrow {new:6.3f}  ({ratio:.2f})")
            finally:
                _pointwise.NARROW_SIDE = 8


if __name__ == "__main__":
    main()
