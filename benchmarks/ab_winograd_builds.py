"""In-process A/B of two builds of the Winograd convolution module: the classic UNet's 3x3
layers, forward and both gradients, with an old build of ``_winograd_fused`` against this
tree's, call by call in one process.

An old build of an extension module can share a process with the new one when it is
loaded from its own file under its own name (``sandbox.bench._builds``); the array-level
convolution looks the module up at call time (``sandbox.array.conv._winograd.
_winograd_fused``), so swapping that reference switches builds between calls
(``sandbox.bench._timing``'s ``time_pair`` interleaves them).  Interleaved calls see the same
phases of a VM whose speed drifts between minutes (see ``ab_checkouts.py`` for whole
steps in alternating processes).  Both builds' outputs and gradients are compared equal,
bit for bit, before timing.

    git worktree add /tmp/old HEAD~1 && (cd /tmp/old && python setup.py build_ext --inplace)
    python benchmarks/ab_winograd_builds.py \\
        /tmp/old/sandbox/_C/_winograd_fused.cpython-311-x86_64-linux-gnu.so --threads 1 2
    python benchmarks/ab_winograd_builds.py OLD_SO --layers 256-256-4 --parts fwd dx dw

``--parts`` times the forward (``fwd``), the input gradient (``dx``) and the weight
gradient (``dw``) apart instead of all three in one call sequence (``all``).
"""

from __future__ import annotations

import argparse

import numpy as np

import sandbox
from sandbox.array.conv import _winograd, conv2d, conv2d_backward
from sandbox.bench._builds import load_extension
from sandbox.bench._timing import time_pair
from sandbox.runtime import simd

#: (c_in, c_out, size) of the classic UNet's Winograd layers (batch 8)
LAYERS = [(16, 16, 128), (48, 16, 128), (16, 32, 64), (32, 32, 64), (96, 32, 64),
          (32, 64, 32), (64, 64, 32), (64, 128, 16), (128, 128, 16), (128, 256, 8)]


#: what each part runs: the forward, the input gradient, the weight gradient, or all
PARTS = {"fwd": (True, False, False), "dx": (False, True, False), "dw": (False, False, True),
         "all": (True, True, True)}


def _compare(old, new, layer, rounds, rng, part="all"):
    """Median milliseconds of one layer's ``part`` (:data:`PARTS`) on each build."""
    c, o, s = layer
    x = rng.standard_normal((8, c, s, s), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
    g = rng.standard_normal((8, o, s, s), dtype=np.float32)
    forward, input_grad, weight_grad = PARTS[part]

    def run(module):
        _winograd._winograd_fused = module
        y = conv2d(x, w, padding=1) if forward else None
        gx, gw = None, None
        if input_grad or weight_grad:
            gx, gw, _ = conv2d_backward(g, x, w, padding=1,
                                        needs=(input_grad, weight_grad, False))
        return [r for r in (y, gx, gw) if r is not None]

    first, second = run(old), run(new)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True)), \
        f"the two builds differ on layer {layer}"
    new_stats, old_stats = time_pair(lambda: run(new), lambda: run(old), repeat=rounds,
                                     warmup=0, min_sample=0)
    return old_stats.median * 1e3, new_stats.median * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_so", help="the old build's _winograd_fused extension file")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--layers", nargs="+", metavar="CIN-COUT-SIZE",
                        help="layers to time instead of the classic UNet's (e.g. 16-16-32)")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=["all"],
                        help="fwd, dx, dw apart, or all three together (the default)")
    args = parser.parse_args(argv)
    layers = ([tuple(int(v) for v in spec.split("-")) for spec in args.layers]
              if args.layers else LAYERS)
    new = _winograd._winograd_fused
    old = load_extension(args.old_so, "_winograd_fused")
    rng = np.random.default_rng(0)
    print(f"cpu: {simd.cpu().describe()}; ms, medians over {args.rounds} interleaved calls")
    try:
        for threads in args.threads:
            sandbox.set_num_threads(threads)
            for part in args.parts:
                total_old = total_new = 0.0
                for layer in layers:
                    t_old, t_new = _compare(old, new, layer, args.rounds, rng, part)
                    total_old, total_new = total_old + t_old, total_new + t_new
                    c, o, s = layer
                    print(f"{threads} thread(s) {part:3s} {c:3d}->{o:3d}@{s:<3d} old "
                          f"{t_old:8.3f} new {t_new:8.3f} new/old {t_new / t_old:.3f}")
                print(f"{threads} thread(s) {part:3s} all layers old {total_old:.3f} new "
                      f"{total_new:.3f} new/old {total_new / total_old:.3f}")
    finally:
        _winograd._winograd_fused = new


if __name__ == "__main__":
    main()
