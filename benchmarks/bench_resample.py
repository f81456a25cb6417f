"""Benchmark sandbox.resample against torch.nn.functional.interpolate (same process).

Times forward and backward of every mode, float32, 2 threads for both libraries,
as the median of repeated runs after warm-up.  Torch's backward is timed alone
(``torch.autograd.grad`` on a retained graph with a precomputed output gradient).
Modes torch lacks are timed for the sandbox only.

    python benchmarks/bench_resample.py [--repeat 7] [--threads 2] [--cases a,b,c,d]
                                        [--modes bilinear,bicubic]

The machine is shared: numbers are noisy; ratios measured in the same process are
the meaningful part.  Effective GB/s counts the bytes of the input read and of
the output written once (float32).
"""

from __future__ import annotations

import argparse
import math
from functools import partial

import numpy as np

import sandbox
from sandbox.array.resample import resize, resize_adjoint
from sandbox.bench._timing import median_ms

CASES = {
    "a": ((8, 64, 64, 64), (128, 128)),
    "b": ((4, 32, 128, 128), (256, 256)),
    "c": ((8, 64, 128, 128), (64, 64)),
    "d": ((8, 32, 60, 60), (90, 90)),
}

# name -> (our mode, options, torch mode or None when torch lacks it)
MODES = {
    "nearest": ("nearest", {}, "nearest"),
    "nearest-exact": ("nearest-exact", {}, "nearest-exact"),
    "bilinear": ("bilinear", {}, "bilinear"),
    "bilinear-ac": ("bilinear", {"align_corners": True}, "bilinear"),
    "bicubic": ("bicubic", {}, "bicubic"),
    "area": ("area", {}, "area"),
    "bilinear-aa": ("bilinear", {"antialias": True}, "bilinear"),
    "bicubic-aa": ("bicubic", {"antialias": True}, "bicubic"),
    "lanczos3-aa": ("lanczos3", {"antialias": True}, "lanczos"),
    "lanczos3": ("lanczos3", {}, None),
    "cubic": ("cubic", {}, None),
    "lanczos5-aa": ("lanczos5", {"antialias": True}, None),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args(argv)

    sandbox.set_num_threads(args.threads)
    torch = None
    if not args.no_torch:
        try:
            import torch
            import torch.nn.functional as F

            torch.set_num_threads(args.threads)
        except ImportError:
            torch = None

    rng = np.random.default_rng(0)
    rows = []
    header = (
        f"{'case':4} {'mode':14} {'dir':4} {'ours ms':>9} {'torch ms':>9} "
        f"{'torch/ours':>10} {'ours GB/s':>9}"
    )
    print(f"threads={args.threads} float32 repeat={args.repeat} (median)")
    print(header)
    print("-" * len(header))
    for case in args.cases.split(","):
        shape, out_hw = CASES[case]
        x = rng.standard_normal(shape, dtype=np.float32)
        for name in args.modes.split(","):
            mode, opts, tmode = MODES[name]
            y = resize(x, size=out_hw, mode=mode, **opts)
            g = rng.standard_normal(y.shape, dtype=np.float32)
            nbytes = 4 * (x.size + y.size)
            kw = dict(size=out_hw, mode=mode, **opts)
            t_f = median_ms(partial(resize, x, **kw), args.repeat)
            t_b = median_ms(partial(resize_adjoint, g, shape[2:], **kw), args.repeat)
            tt_f = tt_b = math.nan
            if torch is not None and tmode is not None:
                xt = torch.from_numpy(x)
                tkw = dict(size=out_hw, mode=tmode, **opts)
                with torch.no_grad():
                    tt_f = median_ms(partial(F.interpolate, xt, **tkw), args.repeat)
                xr = xt.clone().requires_grad_(True)
                yt = F.interpolate(xr, **tkw)
                gt = torch.from_numpy(g)
                tt_b = median_ms(
                    partial(torch.autograd.grad, yt, xr, gt, retain_graph=True), args.repeat
                )
            for d, ours, theirs in (("fwd", t_f, tt_f), ("bwd", t_b, tt_b)):
                ratio = theirs / ours
                rows.append((case, name, d, ours, theirs, ratio))
                print(
                    f"{case:4} {name:14} {d:4} {ours:9.2f} {theirs:9.2f} {ratio:10.2f} "
                    f"{nbytes / ours / 1e6:9.2f}",
                    flush=True,
                )
    ratios = [r[5] for r in rows if not math.isnan(r[5])]
    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"\ngeometric mean torch/ours (>1 = sandbox faster): {gm:.2f} over {len(ratios)}")
        for d in ("fwd", "bwd"):
            sub = [r[5] for r in rows if r[2] == d and not math.isnan(r[5])]
            if sub:
                gm = math.exp(sum(math.log(r) for r in sub) / len(sub))
                print(f"  {d}: {gm:.2f}  (min {min(sub):.2f}, max {max(sub):.2f})")


if __name__ == "__main__":
    main()
