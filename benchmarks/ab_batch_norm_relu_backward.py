"""In-process A/B of batch norm + ReLU's backward kernel: an old build of ``_norm`` that
reads the forward's output for ReLU's mask, against this tree's, which recomputes the mask
from the input.

An old build of an extension module can share a process with the new one when it is
loaded from its own file under its own name (``sandbox.bench._builds``), so the two
kernels are timed interleaved, call by call, in one process (``sandbox.bench._timing``'s
``time_pair``): on a VM whose speed drifts between minutes, that is steadier than
alternating processes (``ab_norm_checkouts.py``).  The gradients of both are checked
equal, bit for bit, before timing.

    git worktree add /tmp/old 3efa315 && (cd /tmp/old && python setup.py build_ext --inplace)
    python benchmarks/ab_batch_norm_relu_backward.py \\
        /tmp/old/sandbox/_C/_norm.cpython-311-x86_64-linux-gnu.so --threads 1 2
"""

from __future__ import annotations

import argparse

import numpy as np

from sandbox._C import _norm as new
from sandbox.array import norm
from sandbox.bench._builds import load_extension
from sandbox.bench._timing import time_pair
from sandbox.runtime import simd

SHAPES = [(8, 16, 128, 128), (8, 16, 64, 64), (8, 32, 64, 64), (8, 32, 32, 32),
          (8, 64, 16, 16), (8, 128, 8, 8), (8, 256, 4, 4)]


def _compare(old, shape, threads, rounds, rng):
    """Median microseconds of the old and the new kernel on one map, interleaved."""
    c = shape[1]
    x = rng.standard_normal(shape, dtype=np.float32).reshape(shape[0], c, -1)
    g = rng.standard_normal(x.shape, dtype=np.float32)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    y, mean, inv = norm.batch_norm_relu(x, None, None, w, b, True)
    scalars = [np.empty(c, np.float32) for _ in range(6)]
    gx_old, gx_new = np.empty_like(x), np.empty_like(x)

    def run_old_kernel():  # the old build: the output y passed, ReLU's mask read from it
        old.backward_fused(g, x, y, mean, inv, w, True, True, *scalars[:5], gx_old, threads)

    def run_same_kernel():  # a build of this tree's kernel (the script's own test)
        old.backward_fused(g, x, mean, inv, w, b, True, True, True, True, *scalars, gx_old,
                           threads)

    try:
        run_old_kernel()
        run_old = run_old_kernel
    except TypeError:  # another argument list: the build is of this tree's kernel
        run_old = run_same_kernel

    def run_new():
        new.backward_fused(g, x, mean, inv, w, b, True, True, True, True, *scalars, gx_new,
                           threads)

    run_old()
    run_new()
    assert np.array_equal(gx_old, gx_new), "the two builds' gradients differ"
    new_stats, old_stats = time_pair(run_new, run_old, repeat=rounds, warmup=0, min_sample=0)
    return old_stats.median * 1e6, new_stats.median * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_so", help="the old build's _norm extension file")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args(argv)
    old = load_extension(args.old_so, "_norm")
    rng = np.random.default_rng(0)
    print(f"cpu: {simd.cpu().describe()}; microseconds, medians over {args.rounds} "
          f"interleaved calls")
    for threads in args.threads:
        for shape in SHAPES:
            t_old, t_new = _compare(old, shape, threads, args.rounds, rng)
            print(f"{threads} thread(s) {str(shape):18s} old {t_old:8.1f} new {t_new:8.1f} "
                  f"new/old {t_new / t_old:.2f}")


if __name__ == "__main__":
    main()
