"""Where a Winograd convolution's time goes: input transform, point GEMMs, output transform.

For each layer (``c_in-c_out-size``, batch 8, padding 1, float32, forward), the pieces
of ``sandbox.array.conv._winograd.winograd_conv3x3`` are timed one at a time over all of
the layer's chunks, with the tile size the layer uses, and the whole call for
comparison (it overlaps the pieces, so it is less than their sum), and the output-gradient
transform a weight gradient runs (``grad tr``, on the same chunks).  Then the layer's
weight transform (``weight_transform``) and the weight gradient's fold of its points back
onto the taps (``weight_grad_fold``, the last step of a Winograd weight gradient), each
for F(2x2) and F(4x4), whichever the layer uses.  CPU time at
``--threads`` (default 1), minimum of ``--repeat`` calls.  The per-part table of
docs/convolution.md comes from this script; run it with ``PYTHONPATH`` at an older
checkout for the "before" figures.  The points are laid out as the kernels lay them out
(planes a cache line more than a multiple of 4 KiB apart); before 7 December 2026 this
script used plain arrays, whose aliasing planes inflated the transforms' times.

    python benchmarks/bench_winograd_parts.py [--layers 16-16-64 32-64-16 ...]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import sandbox
from sandbox._C import _winograd_weights
from sandbox.array.conv import _winograd as W

try:
    from sandbox.runtime import simd
except ImportError:  # a checkout from before the SIMD switch took the path as an argument
    simd = None

try:
    from sandbox.array._gemm import lhs, matmul
except ImportError:  # a checkout from before the project's own GEMM ("before" runs)
    def lhs(a):
        return a

    def matmul(a, b, out):
        np.matmul(a, b, out=out)

LAYERS = ["16-16-64", "16-32-32", "32-64-16", "128-128-8"]


def best_ms(fn, repeat):
    fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        t = min(t, time.process_time() - t0)
    return t * 1e3


def _point_planes(name, count, rows, cols):
    """(count, rows, cols) float32 points laid out as the kernels lay them out: planes a
    cache line more than ``rows * cols`` apart (``_winograd._points``), which a plain
    ``np.empty`` is not; planes a multiple of 4 KiB apart alias in the cache and made
    the transforms' times here up to 3x what the convolutions see."""
    if hasattr(W, "_points"):
        return W._points(name, count, rows, cols, np.float32)
    return np.empty((count, rows, cols), dtype=np.float32)  # a checkout from before it


def parts(ci, co, s, repeat, threads=1):
    """(tile, whole, input transform, GEMMs, output transform, output-gradient transform,
    weight transform F(2x2), weight transform F(4x4), fold F(2x2), fold F(4x4)) in ms."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, ci, s, s), dtype=np.float32)
    w = rng.standard_normal((co, ci, 3, 3), dtype=np.float32)
    tile = W.tile_size(ci, co, s, s)
    # one module for both tiles since 727d6c3; a tile's own module before ("before" runs)
    count, kernels = (W._KERNELS[tile] if hasattr(W, "_KERNELS")
                      else (W._POINTS[tile], W._winograd))
    u = W.weight_transform(w, tile=tile)
    u_lhs = lhs(u)
    y = np.empty((8, co, s, s), dtype=np.float32)
    th, tw, tiles, blocks = W._tiling(8, ci, co, s, s, x.itemsize, tile)
    _, n0, cnt = blocks[0]
    v = _point_planes("bench_v", count, ci, cnt * tiles)
    m = _point_planes("bench_m", count, co, cnt * tiles)
    g = rng.standard_normal((8, co, s, s), dtype=np.float32)  # an output gradient
    chunks = len(blocks)
    dw = np.empty((co, ci, 3, 3), dtype=np.float32)
    extra = () if simd is None else (simd.current().winograd_avx512,)  # the transforms' path
    return (tile,
            best_ms(lambda: W.winograd_conv3x3(x, u, y, 1, 1), repeat),
            chunks * best_ms(lambda: kernels.input_transform(x, v, n0, cnt, 1, 1, th, tw, 1,
                                                             *extra), repeat),
            chunks * best_ms(lambda: matmul(u_lhs, v, m), repeat),
            chunks * best_ms(lambda: kernels.output_transform(m, y, n0, cnt, th, tw, 1, *extra),
                             repeat),
            chunks * best_ms(lambda: kernels.grad_transform(g, m, n0, cnt, th, tw, 1, *extra),
                             repeat),
            *(best_ms(lambda t=t: W.weight_transform(w, tile=t), repeat) for t in (2, 4)),
            *(best_ms(lambda p=p: _winograd_weights.weight_grad_fold(p, dw, threads), repeat)
              for p in (rng.standard_normal((n, co, ci), dtype=np.float32) for n in (16, 36))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", nargs="+", default=LAYERS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=60)
    args = parser.parse_args(argv)
    sandbox.set_num_threads(args.threads)
    print(f"{'layer':>12}  {'tile':>6}  {'whole':>6}  {'input tr':>8}  {'GEMMs':>6}  "
          f"{'output tr':>9}  {'grad tr':>7}  {'U F(2x2)':>8}  {'U F(4x4)':>8}  "
          f"{'fold F2':>8}  {'fold F4':>8}"
          "   (ms, forward, batch 8; grad tr: the weight gradient's transform of an output "
          "gradient; U and fold: the weights' transform and the weight gradient's fold)")
    for spec in args.layers:
        ci, co, s = map(int, spec.split("-"))
        tile, whole, tin, gemm, tout, tgrad, u2, u4, f2, f4 = parts(ci, co, s, args.repeat,
                                                                    args.threads)
        print(f"{f'{ci}->{co}@{s}':>12}  {f'F({tile}x{tile})':>6}  {whole:6.2f}  {tin:8.2f}  "
              f"{gemm:6.2f}  {tout:9.2f}  {tgrad:7.3f}  {u2:8.3f}  {u4:8.3f}  {f2:8.3f}  "
              f"{f4:8.3f}")


if __name__ == "__main__":
    main()
