"""Per-layer convolution benchmark: the classic UNet's layers, forward / input grad / weight grad.

Layers of the classic UNet (widths 16-32-64-128-256, batch 8, 3x3 padding 1, plus
the decoder's concatenated inputs and the 1x1 head), float32.  For each layer and
each part (``fwd``, ``dx``: input gradient, ``dw``: weight + bias gradient) ours
and PyTorch's calls are interleaved in one process (alternating which goes
first) and the medians (or minima) compared: ``speed`` = torch ms / sandbox ms (> 1: we are
faster).  GFLOP/s counts direct-convolution FLOPs (2*N*O*C*9*H*W per part).

    python benchmarks/bench_conv_passes.py [--threads 2] [--repeat 15] [--parts fwd dx dw]
        [--layers 384-128-8 ...] [--size 64]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import sandbox
from sandbox.array import conv

#: (c_in, c_out, spatial) of the classic UNet at 64x64 input, batch 8
LAYERS = [(1, 16, 64), (16, 16, 64), (16, 32, 32), (32, 32, 32), (32, 64, 16), (64, 64, 16),
          (64, 128, 8), (128, 128, 8), (128, 256, 4), (256, 256, 4), (384, 128, 8),
          (192, 64, 16), (96, 32, 32), (48, 16, 64)]


def interleaved(fa, fb, repeat, warmup=2, stat=np.median, clock=time.perf_counter):
    """``stat`` (median or min) in ms of ``fa`` and ``fb`` timed alternately with ``clock``."""
    for _ in range(warmup):
        fa()
        fb()
    ta, tb = [], []
    for r in range(repeat):
        pair = ((fa, ta), (fb, tb)) if r % 2 == 0 else ((fb, tb), (fa, ta))
        for f, acc in pair:
            t0 = clock()
            f()
            acc.append(clock() - t0)
    return 1e3 * float(stat(ta)), 1e3 * float(stat(tb))


def parts(torch, rng, n, ci, co, s, k=3):
    """``{part: (ours, torch's)}`` callables for one layer."""
    aten = torch.ops.aten
    p = k // 2
    x = rng.standard_normal((n, ci, s, s), dtype=np.float32)
    w = rng.standard_normal((co, ci, k, k), dtype=np.float32) * 0.05
    b = rng.standard_normal(co, dtype=np.float32)
    gy = rng.standard_normal((n, co, s, s), dtype=np.float32)
    tx, tw, tb, tgy = (torch.from_numpy(a) for a in (x, w, b, gy))

    def tbwd(mask):
        return lambda: aten.convolution_backward(tgy, tx, tw, [co], [1, 1], [p, p], [1, 1],
                                                 False, [0, 0], 1, mask)
    return {
        "fwd": (lambda: conv.conv2d(x, w, b, 1, p),
                lambda: torch.nn.functional.conv2d(tx, tw, tb, 1, p)),
        "dx": (lambda: conv.conv2d_backward(gy, x, w, 1, p, needs=(True, False, False)),
               tbwd([True, False, False])),
        "dw": (lambda: conv.conv2d_backward(gy, x, w, 1, p, needs=(False, True, True)),
               tbwd([False, True, True])),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 1])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--parts", nargs="+", default=["fwd", "dx", "dw"])
    parser.add_argument("--layers", nargs="+", default=None,
                        help="c_in-c_out-size[-k] (default: the classic UNet's layers)")
    parser.add_argument("--head", action="store_true", help="add the 1x1 head 16->2 @64")
    parser.add_argument("--stat", choices=["median", "min"], default="median",
                        help="min is steadier on a loaded machine")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: process CPU time, which on a loaded machine leaves out the "
                             "time the process waits for a core (meaningful at 1 thread only: "
                             "with more, spinning threads count too)")
    parser.add_argument("--tuned", nargs="+", default=[], metavar="KNOB=VALUE",
                        help="run under sandbox.array.conv.tuned(KNOB=VALUE, ...), e.g. "
                             "winograd_min_pixels_input_grad=64 (how the thresholds in "
                             "sandbox/array/conv/_tuning.py were compared)")
    args = parser.parse_args(argv)
    knobs = {}
    for item in args.tuned:
        key, _, value = item.partition("=")
        knobs[key] = int(value) if value.lstrip("-").isdigit() else value == "True"
    with conv.tuned(**knobs):
        run(args)


def run(args):
    import torch

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    layers = LAYERS if args.layers is None else [
        tuple(int(v) for v in spec.split("-")) for spec in args.layers]
    layers = [(*lay, 3) if len(lay) == 3 else lay for lay in layers]
    if args.head:
        layers.append((16, 2, 64, 1))
    for nt in args.threads:
        torch.set_num_threads(nt)
        sandbox.set_num_threads(nt)
        print(f"# {nt} thread(s), batch {args.batch}, float32, {args.stat} of {args.repeat}, "
              f"{args.clock} clock")
        print(f"{'layer':>16} | " + " | ".join(f"{p:>3} ours  torch speed GF/s"
                                               for p in args.parts) + " | total speed")
        rng = np.random.default_rng(0)
        log_sum, count = 0.0, 0
        for ci, co, s, k in layers:
            ops = parts(torch, rng, args.batch, ci, co, s, k)
            flops = 2.0 * args.batch * ci * co * k * k * s * s
            cells, ours_tot, torch_tot = [], 0.0, 0.0
            with torch.no_grad():
                for p in args.parts:
                    a, t = interleaved(*ops[p], args.repeat, stat=getattr(np, args.stat),
                                       clock=clock)
                    ours_tot += a
                    torch_tot += t
                    cells.append(f"{a:7.2f} {t:6.2f} {t / a:5.2f} {flops / a / 1e6:4.0f}")
            speed = torch_tot / ours_tot
            log_sum += np.log(speed)
            count += 1
            name = f"{ci}->{co}@{s}" + ("" if k == 3 else f" {k}x{k}")
            print(f"{name:>16} | " + " | ".join(cells) + f" | {ours_tot:6.2f} {torch_tot:6.2f} "
                  f"{speed:5.2f}", flush=True)
        print(f"# geometric mean speed: {np.exp(log_sum / count):.2f}")


if __name__ == "__main__":
    main()
