"""A/B of the user-written UNet step under several configurations, interleaved in one process.

Each round takes one Adam step (the bench's ``unet-user`` step) under every
configuration in turn, after two untimed steps each; the medians are printed.  A
configuration is an ``isa:gemm`` pair (``sandbox.runtime.simd.using``), optionally
followed by ``+KNOB=VALUE`` convolution settings (``sandbox.array.conv.tuned``), e.g.
the AVX2 path with its AVX2 GEMM against the same path with numpy's BLAS, or the
Winograd passes with and without their chunks on one thread each:

    python benchmarks/ab_simd_step.py --threads 2 --size 64 avx2:avx2 avx2:blas
    python benchmarks/ab_simd_step.py --threads 2 avx512:avx512 avx512:avx512+winograd_fused=0
    python benchmarks/ab_simd_step.py --threads 1 --volume nearest --rounds 8 \
        avx512:avx512 avx512:avx512+winograd_one_region=0

``--volume MODE`` steps the bench's 3-D UNet instead (``unet3d-step/MODE``: 32³, batch 2;
``--size`` and ``--mode`` ignored).  The order of the configurations rotates from round to
round; besides each one's median, its paired ratio to the first configuration (the median
over rounds of the two steps' ratio) is printed.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("selections", nargs="+",
                        help="isa:gemm[+KNOB=VALUE...], e.g. avx2:blas or "
                             "avx512:avx512+winograd_fused=0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--volume", metavar="MODE", default=None,
                        help="step the bench's 3-D UNet with this upsampling mode")
    args = parser.parse_args(argv)

    import contextlib

    import sandbox
    from sandbox.array import conv
    from sandbox.bench._cases_3d import UNET3D_BATCH
    from sandbox.bench._cases_user import profiled_step
    from sandbox.runtime import simd

    sandbox.set_num_threads(args.threads)
    batch = 4 if args.size >= 256 else 8
    step = profiled_step(args.volume, args.size, batch, args.mode)
    what = (f"3-D UNet step, batch {UNET3D_BATCH}, {args.volume}" if args.volume
            else f"{args.size}^2, batch {batch}, {args.mode}")

    def parse(text):
        pair, *knobs = text.split("+")
        settings = {}
        for item in knobs:
            key, value = item.split("=", 1)
            default = getattr(conv.TUNING, key)
            kind = int if default is None else type(default)  # None: an optional count
            settings[key] = (value.lower() in ("1", "true", "on") if kind is bool
                             else kind(value))
        return dict(zip(("isa", "gemm"), pair.split(":"), strict=True)), settings

    @contextlib.contextmanager
    def configured(sel):
        with simd.using(**sel[0]), conv.tuned(**sel[1]):
            yield

    selections = {s: parse(s) for s in args.selections}
    for sel in selections.values():
        with configured(sel):
            step()
            step()
    names = list(selections)
    times = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotating order
            with configured(selections[name]):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
    print(f"cpu: {simd.cpu().describe()}; {args.threads} thread(s), {what}; median ms per "
          f"step of {args.rounds} interleaved rounds; paired: over the first configuration")
    first = times[names[0]]
    for name, t in times.items():
        paired = statistics.median(a / b for a, b in zip(t, first, strict=True))
        print(f"  {name:36s} {1e3 * statistics.median(t):8.1f}   paired {paired:.3f}")


if __name__ == "__main__":
    main()
