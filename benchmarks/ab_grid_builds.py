"""Grid sampling by two builds of its kernel module, in one process.

A change to ``pyx/_grid_sample.pyx`` or its headers switches nothing at run time, so
its effect is measured by loading the previous build's ``_grid_sample`` extension
beside the current one and calling each in turn through the same wrapper
(``sandbox.array.grid_sample._dispatch`` looks the module up on every call).  Build
the earlier commit somewhere, or keep a copy of the extension before rebuilding:

    cp sandbox/_C/_grid_sample*.so /tmp/before/          # before editing and rebuilding
    python benchmarks/ab_grid_builds.py /tmp/before --threads 1 2 --modes bicubic

Per mode, padding, batch and thread count it checks that both builds give the same
bits (forward, input and grid gradients) and prints the medians per call of the forward
and of the backward (input + grid gradients) over ``--rounds`` interleaved rounds, each
a block of ``--calls`` calls, with the paired ratio new / previous (below 1: the new
build is faster).  2-D, (batch, 4, 128, 128) sampled at the 128x128 points of the
bench's smooth warp, or with ``--nd 3`` the bench's volume, (batch, 2, 32, 32, 32) at
32^3 points; float32, ``align_corners=False``.

    python benchmarks/ab_grid_builds.py /tmp/before --nd 3 --modes bilinear
"""

from __future__ import annotations

import argparse
import functools

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("previous", help="folder holding the previous build's "
                        "_grid_sample*.so")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--modes", nargs="+", default=["nearest", "bilinear", "bicubic"])
    parser.add_argument("--paddings", nargs="+", default=["zeros", "border", "reflection"])
    parser.add_argument("--nd", type=int, choices=(2, 3), default=2,
                        help="spatial rank: 2 (4 channels, 128^2) or 3 (2 channels, 32^3)")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.array.grid_sample import _checks, _dispatch
    from sandbox.bench._builds import load_from_folder
    from sandbox.bench._cases_grid import GRID_SHAPES, warp_grid
    from sandbox.runtime import simd

    builds = {"previous": load_from_folder(args.previous, "_grid_sample", "ab_grid_builds"),
              "new": _dispatch._grid_sample}
    print(f"cpu: {simd.cpu().describe()}; sandbox path {simd.current().isa}; us per call, "
          "medians; ratio: new / previous, paired by round")
    rng = np.random.default_rng(0)
    previous_threads = sandbox.get_num_threads()
    try:
        for batch in args.batch:
            channels, side = GRID_SHAPES[args.nd]
            x = rng.standard_normal((batch, channels, *(side,) * args.nd)).astype(np.float32)
            grid = warp_grid(rng, batch, (side,) * args.nd)
            gy = rng.standard_normal(x.shape).astype(np.float32)
            for mode in args.modes:
                for padding in args.paddings:
                    plan = _checks.plan(x, grid, mode, padding, False)
                    for threads in args.threads:
                        sandbox.set_num_threads(threads)
                        line = _compare(_dispatch, builds, x, grid, gy, plan, args.rounds,
                                        args.calls)
                        print(f"{mode}-{padding:10s} b{batch} {threads}t   {line}", flush=True)
    finally:
        sandbox.set_num_threads(previous_threads)

def _compare(dispatch, builds, x, grid, gy, plan, rounds, calls) -> str:
    """One case: the forward and the backward (both gradients) of both builds, bits
    compared, then timed interleaved (``sandbox.bench._builds.compare_builds``)."""
    from sandbox.bench._builds import compare_builds

    def use(build):
        dispatch._grid_sample = build

    funcs = {"forward": functools.partial(dispatch.forward, x, grid, plan),
             "backward": functools.partial(dispatch.backward, gy, x, grid, plan, True, True)}
    return compare_builds(use, builds, funcs, rounds, calls)


if __name__ == "__main__":
    main()
