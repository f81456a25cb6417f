"""A/B of the user-written UNet step under two SIMD selections, interleaved in one process.

Each round takes one Adam step (the bench's ``unet-user`` step) under every selection in
turn (``sandbox.runtime.simd.using``),
after two untimed steps each; the medians are printed.  Selections are ``isa:gemm`` pairs,
e.g. the AVX2 path with its AVX2 GEMM against the same path with numpy's BLAS:

    python benchmarks/ab_simd_step.py --threads 2 --size 64 avx2:avx2 avx2:blas
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("selections", nargs="+", help="isa:gemm, e.g. avx2:blas")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.bench._cases_user import user_step, user_unet
    from sandbox.runtime import simd

    sandbox.set_num_threads(args.threads)
    sandbox.manual_seed(0)
    rng = np.random.default_rng(0)
    batch = 4 if args.size >= 256 else 8
    x = rng.standard_normal((batch, 1, args.size, args.size), dtype=np.float32)
    y = rng.integers(0, 2, (batch, args.size, args.size))
    step = user_step(sandbox, user_unet(sandbox, mode=args.mode), x, y)

    selections = {s: dict(zip(("isa", "gemm"), s.split(":"), strict=True))
                  for s in args.selections}
    for sel in selections.values():
        with simd.using(**sel):
            step()
            step()
    times = {name: [] for name in selections}
    for _ in range(args.rounds):
        for name, sel in selections.items():
            with simd.using(**sel):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
    print(f"cpu: {simd.cpu().describe()}; {args.threads} thread(s), {args.size}^2, batch "
          f"{batch}, {args.mode}; median ms per step of {args.rounds} interleaved rounds")
    for name, t in times.items():
        print(f"  {name:16s} {1e3 * statistics.median(t):8.1f}")


if __name__ == "__main__":
    main()
