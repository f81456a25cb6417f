"""The resize's separable passes in each of their vector forms, in one process.

``apply_last`` (the contiguous axis, pyx/_resample.pyx) runs float32 rows 16 at a time
with AVX-512 or 8 at a time with AVX2 (pyx/resample_simd.h), else one to four with
scalar loads; ``apply_mid`` (outer axes) sums rows 16 floats a vector with AVX-512, else
in a loop compiled for AVX2 and the baseline.  Every form gives the same values.  This
script alternates the forms (``dispatch.simd_code`` fixed to 0, 1 or 2) in rounds and
prints, per shape, the medians of a forward ``resize`` plus its adjoint (2x upsampling,
the user-written UNet's four decoder inputs at 64^2, batch 8; or, with ``--shapes d``,
the bench's non-integer case d, (8, 32, 60, 60) to 90x90) and each form's paired ratio
to the scalar one.

    python benchmarks/ab_resample_simd.py --threads 1 2 --modes bilinear bicubic
    python benchmarks/ab_resample_simd.py --threads 1 2 --modes nearest --shapes d
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

#: input shape -> output size, per --shapes
SHAPES = {"unet": [((8, 256, 4, 4), (8, 8)), ((8, 128, 8, 8), (16, 16)),
                   ((8, 64, 16, 16), (32, 32)), ((8, 32, 32, 32), (64, 64))],
          "d": [((8, 32, 60, 60), (90, 90))]}
FORMS = {"scalar": 0, "avx2": 1, "avx512": 2}  # simd_code values


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--modes", nargs="+", default=["bilinear", "bicubic"])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--shapes", choices=sorted(SHAPES), default="unet")
    args = parser.parse_args(argv)

    import sandbox
    from sandbox._C import _resample
    from sandbox.array.resample import dispatch, resize, resize_adjoint
    from sandbox.runtime import simd

    forms = {k: v for k, v in FORMS.items() if v <= _resample.isa_available()}
    print(f"cpu: {simd.cpu().describe()}; us per resize + adjoint, median of {args.rounds} "
          f"rounds of {args.calls} calls; forms {', '.join(forms)}")
    rng = np.random.default_rng(0)
    original = dispatch.simd_code
    try:
        for mode in args.modes:
            totals = {(n, f): 0.0 for n in args.threads for f in forms}
            for shape, out in SHAPES[args.shapes]:
                x = rng.standard_normal(shape).astype(np.float32)
                g = rng.standard_normal((*shape[:2], *out)).astype(np.float32)

                def call(x=x, g=g, size=shape[2:], out=out, mode=mode):
                    resize(x, size=out, mode=mode)
                    resize_adjoint(g, size, size=out, mode=mode)

                times = {}
                for _ in range(args.rounds):
                    for n in args.threads:
                        sandbox.set_num_threads(n)
                        for form, code in forms.items():
                            dispatch.simd_code = lambda code=code: code
                            call()
                            start = time.perf_counter()
                            for _ in range(args.calls):
                                call()
                            times.setdefault((n, form), []).append(
                                (time.perf_counter() - start) / args.calls * 1e6)
                for n in args.threads:
                    base = times[(n, "scalar")]
                    cells = []
                    for form in forms:
                        t = times[(n, form)]
                        totals[(n, form)] += statistics.median(t)
                        paired = statistics.median([b / a for a, b in zip(base, t, strict=True)])
                        cells.append(f"{form} {statistics.median(t):6.0f} ({paired:.2f})")
                    print(f"{mode:9s} {str(shape):18s} {n} thread(s): " + "  ".join(cells))
            for n in args.threads:
                print(f"{mode:9s} the {args.shapes} resizes, {n} thread(s): " + ", ".join(
                    f"{form} {totals[(n, form)] / 1e3:.2f} ms" for form in forms))
    finally:
        dispatch.simd_code = original


if __name__ == "__main__":
    main()
