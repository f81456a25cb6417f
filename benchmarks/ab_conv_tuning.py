"""A convolution tuning knob against its default, interleaved in one process.

Times ``sandbox.array.conv.conv2d`` (``fwd``) or ``conv2d_backward`` (``dw``: weight and
bias gradients; ``dxdw``: input, weight and bias gradients) of each layer, batch
``--batch``, 3x3 padding 1, float32, under ``tuned(KNOB=VALUE, ...)`` and under the
defaults, in alternating blocks of ``--calls`` calls (the order flipping every round),
and prints the medians per call and the paired ratio default / tuned over ``--rounds``
rounds (below 1: the default is faster).  Each thread count runs in turn; the results
are checked to have the same bits under both settings (the knobs only choose routes).
How the figures of ``TUNING.one_pass_max_rows`` were taken:

    python benchmarks/ab_conv_tuning.py one_pass_max_rows=0 --threads 1 2 \\
        --layers 1-16-64 2-16-64 3-16-64 1-16-96 1-16-128 --parts fwd dw dxdw

``--nd 3`` times 3x3x3 convolutions of ``side``^3 volumes instead (the 3-D UNet's layers
run at batch 2: ``--batch 2``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import sandbox
from sandbox.array import conv
from sandbox.runtime.simd import cpu

PARTS = ("fwd", "dw", "dxdw")


def _calls(x, w, g, part):
    if part == "fwd":
        return lambda: conv.conv(x, w, None, 1, 1)
    needs = (False, True, True) if part == "dw" else (True, True, True)
    return lambda: conv.conv_backward(g, x, w, 1, 1, needs=needs)


def _bits(result):
    items = result if isinstance(result, tuple) else (result,)
    return [None if a is None else a.tobytes() for a in items]


def _block(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def compare(knobs: dict, ci: int, co: int, side: int, part: str, batch: int, rounds: int,
            calls: int, rng, nd: int = 2, same_bits: bool = True) -> tuple[float, float, float]:
    """``(default us, tuned us, paired median default / tuned)`` of one layer and part
    (``nd`` spatial axes of ``side``); raises AssertionError when the two settings give
    different bits, unless ``same_bits`` is False (knobs that choose another algorithm)."""
    x = rng.standard_normal((batch, ci, *(side,) * nd)).astype(np.float32)
    w = (0.1 * rng.standard_normal((co, ci, *(3,) * nd))).astype(np.float32)
    g = rng.standard_normal((batch, co, *(side,) * nd)).astype(np.float32)
    fn = _calls(x, w, g, part)
    with conv.tuned(**knobs):
        tuned_bits = _bits(fn())
    if same_bits:
        assert _bits(fn()) == tuned_bits, f"{ci}->{co}@{side} {part}: the settings' bits differ"
    default, tuned = [], []
    for r in range(rounds):
        for which in ((0, 1) if r % 2 else (1, 0)):
            if which:
                with conv.tuned(**knobs):
                    fn()
                    tuned.append(_block(fn, calls))
            else:
                fn()
                default.append(_block(fn, calls))
    ratio = statistics.median(d / t for d, t in zip(default, tuned, strict=True))
    return 1e6 * statistics.median(default), 1e6 * statistics.median(tuned), ratio


def _knob(text: str):
    name, _, value = text.partition("=")
    if not value:
        raise argparse.ArgumentTypeError(f"expected KNOB=VALUE, got {text!r}")
    return name, int(value)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("knobs", nargs="+", type=_knob, help="KNOB=VALUE of ConvTuning")
    parser.add_argument("--layers", nargs="+", default=["1-16-64", "3-16-64"],
                        help="c_in-c_out-size")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--nd", type=int, choices=(2, 3), default=2,
                        help="spatial axes: 3 times 3x3x3 convolutions of side^3 volumes")
    parser.add_argument("--other-bits", action="store_true",
                        help="knobs that choose another algorithm: do not require the same bits")
    args = parser.parse_args(argv)
    knobs = dict(args.knobs)
    print(f"cpu: {cpu().describe()}; tuned({', '.join(f'{k}={v}' for k, v in knobs.items())}) "
          f"against the defaults; us per call, medians; ratio: default / tuned, paired by "
          f"round")
    rng = np.random.default_rng(0)
    for threads in args.threads:
        sandbox.set_num_threads(threads)
        for layer in args.layers:
            ci, co, side = (int(v) for v in layer.split("-"))
            for part in args.parts:
                d, t, ratio = compare(knobs, ci, co, side, part, args.batch, args.rounds,
                                      args.calls, rng, args.nd, not args.other_bits)
                bits = "bits not compared" if args.other_bits else "same bits"
                print(f"{threads}t {layer:>10} {part:>4}   default {d:9.0f}   tuned {t:9.0f}"
                      f"   ({ratio:.2f})   {bits}")


if __name__ == "__main__":
    main()
