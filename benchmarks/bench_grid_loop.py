"""Grid sampling of one sample in a loop of calls, the sandbox against PyTorch.

``sandbox bench`` times each call on its own, after the other library's call, so a
call of 0.05-0.3 ms also pays the wake-up of threads that slept in between and cold
caches.  A training step calls the kernels back to back instead.  This script times
blocks of ``--calls`` consecutive calls (after 10 untimed ones) of each library in
turn, ``--rounds`` times, and prints the medians per call: 2-D, (1, 4, 128, 128)
sampled at the 128x128 points of the bench's smooth warp, float32,
``align_corners=False``, forward and backward (input and grid gradients).

    python benchmarks/bench_grid_loop.py --threads 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _per_call_us(fn, calls: int) -> float:
    for _ in range(10):
        fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def _pair(torch, x, g, gy, opts):
    """(ours forward, ours backward, torch forward, torch backward) as callables."""
    from sandbox.array.grid_sample import grid_sample, grid_sample_backward

    tx = torch.from_numpy(x).requires_grad_()
    tg = torch.from_numpy(g).requires_grad_()
    ty = torch.nn.functional.grid_sample(tx, tg, **opts)
    tgy = torch.from_numpy(gy)

    def torch_forward():
        with torch.no_grad():
            torch.nn.functional.grid_sample(tx, tg, **opts)

    return (lambda: grid_sample(x, g, **opts),
            lambda: grid_sample_backward(gy, x, g, **opts),
            torch_forward,
            lambda: torch.autograd.grad(ty, (tx, tg), tgy, retain_graph=True))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    import torch

    import sandbox
    from sandbox.bench._cases_grid import warp_grid
    from sandbox.runtime import simd

    sandbox.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 128, 128)).astype(np.float32)
    g = warp_grid(rng, 1, (128, 128))
    gy = rng.standard_normal(x.shape).astype(np.float32)
    print(f"cpu: {simd.cpu().describe()}; threads {args.threads}; torch {torch.__version__}; "
          "us per call (speed = torch / ours)")
    for mode in ("nearest", "bilinear", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            opts = dict(mode=mode, padding_mode=padding, align_corners=False)
            calls = _pair(torch, x, g, gy, opts)
            times = [[] for _ in calls]
            for _ in range(args.rounds):
                for k, fn in enumerate(calls):
                    times[k].append(_per_call_us(fn, args.calls if k % 2 == 0
                                                 else max(1, args.calls // 2)))
            of, ob, tf, tb = (statistics.median(t) for t in times)
            print(f"{mode}-{padding:10s} forward ours {of:6.0f} torch {tf:6.0f} "
                  f"({tf / of:4.2f}x)   backward ours {ob:6.0f} torch {tb:6.0f} ({tb / ob:4.2f}x)")


if __name__ == "__main__":
    main()
