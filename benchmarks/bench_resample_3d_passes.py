"""What the depth axis costs: a 3-D resize against the 2-D resize of the same planes.

A ``(N, C, D, H, W)`` resize is three 1-D passes (per axis a small weight table).
The sandbox runs the depth pass where its intermediate is smaller: first when
upsampling, last when downsampling, so the height and width passes see
``max(D_in, D_out)`` planes of ``H_in × W_in``.  The 2-D resize of exactly those
planes is the same two passes; the ratio of the two times is what the third
(depth) pass adds, per mode.  Also printed: the multiply-adds per
output voxel of the three passes (from the weight tables) against a direct 3-D
kernel, which reads ``taps³`` inputs for every output.

    python benchmarks/bench_resample_3d_passes.py [--repeat 7] [--threads 1]

Timings are medians of interleaved repeats; on a shared machine only the ratios
measured in the same process mean much.
"""

from __future__ import annotations

import argparse

import numpy as np

import sandbox
from sandbox.array.resample import resize, weight_table
from sandbox.bench._timing import time_pair

# name -> (mode, options, (N, C, side in), side out)
CASES = {
    "trilinear up": ("trilinear", {}, (2, 16, 32), 64),
    "bicubic up": ("bicubic", {}, (2, 16, 32), 64),
    "lanczos3 up": ("lanczos3", {}, (2, 16, 32), 64),
    "lanczos3-aa down": ("lanczos3", {"antialias": True}, (2, 16, 64), 32),
}


def pass_madds(side_in: int, side_out: int, taps: float) -> float:
    """Multiply-adds per output voxel of three 1-D passes over a cube, ``taps`` per output.

    Each pass resizes one more axis; it computes ``taps`` products for every element
    of its output.  (On a cube the total does not depend on the order of the axes.)
    """
    sizes = [side_in] * 3
    total = 0.0
    for axis in range(3):
        sizes[axis] = side_out
        total += np.prod(sizes) * taps
    return total / side_out**3


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    sandbox.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print(f"{'case':18} {'3-D ms':>8} {'2-D ms':>8} {'3-D/2-D':>8} {'taps':>5} "
          f"{'madd/voxel':>10} {'direct':>7}")
    for name, (mode, opts, (n, c, s), s_out) in CASES.items():
        x = rng.standard_normal((n, c, s, s, s), dtype=np.float32)
        # the planes the height and width passes of the 3-D resize see
        planes = rng.standard_normal((n, c * max(s, s_out), s, s), dtype=np.float32)

        def three_d(x=x, mode=mode, opts=opts, s_out=s_out):
            return resize(x, size=(s_out,) * 3, mode=mode, **opts)

        def two_d(planes=planes, mode=mode, opts=opts, s_out=s_out):
            return resize(planes, size=(s_out,) * 2, mode=mode, **opts)

        t3, t2 = time_pair(three_d, two_d, repeat=args.repeat, warmup=2)
        taps = float(weight_table(s, s_out, mode=mode, dtype=np.float32, **opts).ntap.mean())
        madds = pass_madds(s, s_out, taps)
        print(f"{name:18} {1e3 * t3.median:8.2f} {1e3 * t2.median:8.2f} "
              f"{t3.median / t2.median:8.2f} {taps:5.2f} {madds:10.1f} {taps**3:7.0f}")


if __name__ == "__main__":
    main()
