"""Grid sampling of one sample in a loop of calls, the sandbox against PyTorch.

``sandbox bench`` times each call on its own, after the other library's call, so a
call of 0.05-0.3 ms also pays the wake-up of threads that slept in between and cold
caches.  A training step calls the kernels back to back instead.  This script times
blocks of ``--calls`` consecutive calls (after 10 untimed ones) of each library in
turn, ``--rounds`` times, and prints the medians per call: 2-D, (1, 4, 128, 128)
sampled at the 128x128 points of the bench's smooth warp, float32,
``align_corners=False``, forward and backward (input and grid gradients).
``--batch 8`` times 8 samples; ``--isa avx2`` runs the sandbox's AVX2 path and limits
PyTorch to AVX2 as ``sandbox bench --isa avx2`` does (what a CPU without AVX-512 runs).

    python benchmarks/bench_grid_loop.py --threads 2
    python benchmarks/bench_grid_loop.py --threads 2 --isa avx2 --batch 8 --modes nearest
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
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--isa", choices=["auto", "avx512", "avx2"], default="auto")
    parser.add_argument("--modes", nargs="+", default=["nearest", "bilinear", "bicubic"])
    args = parser.parse_args(argv)

    import os

    if args.isa == "avx2":  # before torch is imported, as the bench's --isa avx2
        os.environ.update(ATEN_CPU_CAPABILITY="avx2", ONEDNN_MAX_CPU_ISA="AVX2",
                          MKL_ENABLE_INSTRUCTIONS="AVX2")
    import torch

    import sandbox
    from sandbox.bench._cases_grid import warp_grid
    from sandbox.runtime import simd

    sandbox.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, 4, 128, 128)).astype(np.float32)
    g = warp_grid(rng, args.batch, (128, 128))
    gy = rng.standard_normal(x.shape).astype(np.float32)
    isa = None if args.isa == "auto" else args.isa
    print(f"cpu: {simd.cpu().describe()}; threads {args.threads}; batch {args.batch}; "
          f"sandbox path {simd.current().isa if isa is None else isa}; torch "
          f"{torch.__version__} ({torch.backends.cpu.get_cpu_capability()}); us per call "
          "(speed = torch / ours)")
    for mode in args.modes:
        for padding in ("zeros", "border", "reflection"):
            opts = dict(mode=mode, padding_mode=padding, align_corners=False)
            calls = _pair(torch, x, g, gy, opts)
            times = [[] for _ in calls]
            for _ in range(args.rounds):
                for k, fn in enumerate(calls):
                    with simd.using(isa=isa):
                        times[k].append(_per_call_us(fn, args.calls if k % 2 == 0
                                                     else max(1, args.calls // 2)))
            of, ob, tf, tb = (statistics.median(t) for t in times)
            print(f"{mode}-{padding:10s} forward ours {of:6.0f} torch {tf:6.0f} "
                  f"({tf / of:4.2f}x)   backward ours {ob:6.0f} torch {tb:6.0f} ({tb / ob:4.2f}x)")


if __name__ == "__main__":
    main()
