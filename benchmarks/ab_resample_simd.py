"""The resize's separable passes with and without their AVX-512 forms, in one process.

On the ``avx512`` path (pyx/resample_avx512.h) ``apply_last`` (pyx/_resample.pyx)
runs float32 rows 16 at a time, against one to four otherwise, and ``apply_mid`` sums
rows 16 floats a vector, against the baseline build's 4; the values are the same.
This script alternates the two forms (``dispatch._AVX512``) in rounds and prints, per
shape, the medians of a forward ``resize`` plus its adjoint (2x upsampling, the
user-written UNet's four decoder inputs at 64^2, batch 8) and the paired ratio.

    python benchmarks/ab_resample_simd.py --threads 1 2 --modes bilinear bicubic
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

SHAPES = [(8, 256, 4, 4), (8, 128, 8, 8), (8, 64, 16, 16), (8, 32, 32, 32)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--modes", nargs="+", default=["bilinear", "bicubic"])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.array.resample import dispatch, resize, resize_adjoint
    from sandbox.runtime import simd

    if not dispatch._AVX512:
        raise SystemExit("this CPU has no AVX-512F: there is only one form to time")
    print(f"cpu: {simd.cpu().describe()}; us per resize + adjoint, median of {args.rounds}")
    rng = np.random.default_rng(0)
    try:
        for mode in args.modes:
            totals = {n: [0.0, 0.0] for n in args.threads}
            for shape in SHAPES:
                x = rng.standard_normal(shape).astype(np.float32)
                g = rng.standard_normal((*shape[:2], 2 * shape[2], 2 * shape[3])).astype(
                    np.float32)

                def call(x=x, g=g, size=shape[2:], mode=mode):
                    resize(x, scale_factor=2, mode=mode)
                    resize_adjoint(g, size, scale_factor=2, mode=mode)

                times = {}
                for _ in range(args.rounds):
                    for n in args.threads:
                        sandbox.set_num_threads(n)
                        for blocked in (False, True):
                            dispatch._AVX512 = blocked
                            call()
                            start = time.perf_counter()
                            for _ in range(args.calls):
                                call()
                            times.setdefault((n, blocked), []).append(
                                (time.perf_counter() - start) / args.calls * 1e6)
                for n in args.threads:
                    a, b = times[(n, False)], times[(n, True)]
                    paired = statistics.median([y / x for x, y in zip(a, b, strict=True)])
                    totals[n][0] += statistics.median(a)
                    totals[n][1] += statistics.median(b)
                    print(f"{mode:9s} {str(shape):18s} {n} thread(s): portable "
                          f"{statistics.median(a):7.0f}  avx512 {statistics.median(b):7.0f}"
                          f"  (paired {paired:.2f})")
            for n in args.threads:
                print(f"{mode:9s} the four resizes, {n} thread(s): {totals[n][0] / 1e3:.2f} -> "
                      f"{totals[n][1] / 1e3:.2f} ms")
    finally:
        dispatch._AVX512 = _resample_avx512()


def _resample_avx512() -> bool:
    from sandbox._C import _resample

    return _resample.isa_available() == 2


if __name__ == "__main__":
    main()
