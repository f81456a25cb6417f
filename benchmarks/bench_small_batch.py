"""The UNet step as users write it at small batches, against PyTorch, at 1 and 2 threads.

The bench's ``unet-user`` cases run batch 8 (4 at 256²); users of larger images often train
with a batch of 1 or 2.  For each size and batch, both libraries' steps (the bench's
``user_step``: ``nn.Conv2d``, ``nn.BatchNorm2d``, ``nn.ReLU`` modules, Adam, the same
initial weights' shapes) are timed interleaved in this process at each thread count
(``sandbox.bench._timing.time_pairs``, medians), and the speed against PyTorch and the
1 -> 2 thread speed-up of each are printed, with the CPU.

    python benchmarks/bench_small_batch.py --cases 64:1 64:2 128:1 128:2 256:1
"""

from __future__ import annotations

import argparse

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["64:1", "64:2", "128:1", "128:2"],
                        help="SIZE:BATCH pairs")
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)

    import torch

    import sandbox
    from sandbox.bench._cases_user import user_step, user_unet
    from sandbox.bench._env import set_threads
    from sandbox.bench._timing import time_pairs
    from sandbox.runtime import simd

    print(f"cpu: {simd.cpu().describe()}; path {simd.current().isa}; torch {torch.__version__}; "
          f"{args.mode}; ms per step, medians of {args.repeat} interleaved samples")
    before = sandbox.get_num_threads()
    try:
        for case in args.cases:
            size, batch = (int(v) for v in case.split(":"))
            rng = np.random.default_rng(0)
            x = rng.standard_normal((batch, 1, size, size)).astype(np.float32)
            y = rng.integers(0, 2, size=(batch, size, size))
            works = {}
            for threads in (1, 2):  # each count its own models: a step changes them
                set_threads(threads, torch)
                sandbox.manual_seed(0)
                torch.manual_seed(0)
                works[threads] = (user_step(sandbox, user_unet(sandbox, mode=args.mode), x, y),
                                  user_step(torch, user_unet(torch, mode=args.mode), x, y))
            timed = time_pairs(works, lambda n: set_threads(n, torch), repeat=args.repeat)
            (o1, t1), (o2, t2) = timed[1], timed[2]
            print(f"{size}^2 batch {batch}: ours {o1.median * 1e3:.1f} / {o2.median * 1e3:.1f} "
                  f"ms at 1 / 2 threads, torch {t1.median * 1e3:.1f} / {t2.median * 1e3:.1f}; "
                  f"vs torch {t1.median / o1.median:.2f}x / {t2.median / o2.median:.2f}x; "
                  f"speed-up ours {o1.median / o2.median:.2f}x, torch "
                  f"{t1.median / t2.median:.2f}x")
    finally:
        sandbox.set_num_threads(before)


if __name__ == "__main__":
    main()
