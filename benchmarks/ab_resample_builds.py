"""The resize by two builds of its kernel module, in one process.

A change to ``pyx/_resample.pyx`` switches nothing at run time, so its effect is
measured by loading the previous build's ``_resample`` extension beside the current one
(``sandbox.bench._builds``) and calling each in turn through the same wrapper: the
routes of ``sandbox.array.resample.dispatch`` hold the module's kernel functions, so a
swap clears its cache of routes.  Keep a copy of the extension before rebuilding:

    cp sandbox/_C/_resample*.so /tmp/before/          # before editing and rebuilding
    python benchmarks/ab_resample_builds.py /tmp/before --threads 2 1

Per mode, shape and thread count it checks that both builds give the same bits (the
resize to twice the size and its adjoint) and prints the medians per call over
``--rounds`` interleaved rounds, each a block of ``--calls`` calls, with the paired ratio
new / previous (below 1: the new build is faster).  The shapes are the inputs of the
64x64 user UNet's four up-samplings and one map of 64x64 (batch 8, float32).
"""

from __future__ import annotations

import argparse

import numpy as np

#: (N, C, H, W) inputs, each resized to (2H, 2W)
SHAPES = [(8, 256, 4, 4), (8, 128, 8, 8), (8, 64, 16, 16), (8, 32, 32, 32), (8, 16, 64, 64)]


def _use(dispatch, module) -> None:
    """Route the resize through ``module``: the cached routes hold kernel functions."""
    dispatch._kernels = module
    dispatch._schedule.cache_clear()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("previous", help="folder holding the previous build's _resample*.so")
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--modes", nargs="+", default=["bilinear", "bicubic", "nearest"])
    parser.add_argument("--shapes", nargs="+", metavar="N-C-H-W",
                        help="inputs instead of the UNet's (e.g. 8-64-16-16)")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.array import resample
    from sandbox.array.resample import dispatch
    from sandbox.bench._builds import compare_builds, load_from_folder
    from sandbox.runtime import simd

    shapes = ([tuple(int(v) for v in s.split("-")) for s in args.shapes] if args.shapes
              else SHAPES)
    builds = {"previous": load_from_folder(args.previous, "_resample", "ab_resample_builds"),
              "new": dispatch._kernels}
    print(f"cpu: {simd.cpu().describe()}; sandbox path {simd.current().isa}; us per call, "
          "medians; ratio: new / previous, paired by round")
    rng = np.random.default_rng(0)
    previous_threads = sandbox.get_num_threads()
    try:
        for mode in args.modes:
            for shape in shapes:
                size = (2 * shape[2], 2 * shape[3])
                x = rng.standard_normal(shape).astype(np.float32)
                g = rng.standard_normal((*shape[:2], *size)).astype(np.float32)
                calls_of = {
                    "forward": lambda x=x, size=size, mode=mode: resample.resize(
                        x, size=size, mode=mode),
                    "adjoint": lambda g=g, shape=shape, size=size, mode=mode:
                        resample.resize_adjoint(g, shape[2:], size=size, mode=mode),
                }
                for threads in args.threads:
                    sandbox.set_num_threads(threads)
                    line = compare_builds(lambda build: _use(dispatch, build), builds,
                                          calls_of, args.rounds, args.calls)
                    name = "-".join(map(str, shape))
                    print(f"{mode:8s} {name:12s} {threads}t   {line}", flush=True)
    finally:
        sandbox.set_num_threads(previous_threads)


if __name__ == "__main__":
    main()
