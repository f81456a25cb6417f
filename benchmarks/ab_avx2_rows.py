"""The AVX2 tile rows (pyx/winograd/wino4_avx2.h, wino2_avx2.h: the input, output and
output-gradient transforms) against the row loops, in one process: the switch
``avx2_rows`` of both modules that compile them, flipped round by round.

Per layer (``c_in-c_out-size``, batch 8, padding 1, float32) the forward and the backward
(input and weight gradients), and the step of the UNet as users write it
(``sandbox.bench._cases_user``, bilinear, batch 8) at each ``--sizes``; medians of
``--rounds`` interleaved rounds and the paired ratio AVX2 / row loops (below 1: the AVX2
rows are faster), with a check that both give the layers the same bits.

    python benchmarks/ab_avx2_rows.py --threads 1 2
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

LAYERS = ["16-16-64", "48-16-64", "32-32-32", "96-32-32", "16-32-32"]


def _switch(on: bool) -> None:
    from sandbox._C import _winograd, _winograd_fused

    for module in (_winograd, _winograd_fused):
        module.avx2_rows(on)


def _step_call(step):
    """A training step as an A/B call: it changes the weights, so its outputs are not
    compared (the layers' are); it returns nothing to compare."""
    def call():
        step()
        return ()
    return call


def _ab(calls: dict, rounds: int) -> dict:
    """``{name: (row-loop median, AVX2 median, paired ratio)}`` (ms) of interleaved rounds
    of each callable; raises if the two switch positions give other bits."""
    times = {(name, on): [] for name in calls for on in (False, True)}
    outputs = {}
    for r in range(rounds + 1):  # round 0 warms up
        for on in ((False, True) if r % 2 == 0 else (True, False)):
            _switch(on)
            for name, fn in calls.items():
                start = time.perf_counter()
                out = fn()
                if r:
                    times[name, on].append(time.perf_counter() - start)
                outputs[name, on] = out
    for name in calls:
        if any(a.tobytes() != b.tobytes() for a, b in zip(outputs[name, False],
                                                          outputs[name, True], strict=True)):
            raise SystemExit(f"{name}: the AVX2 tile rows changed the bits")
    return {name: (1e3 * statistics.median(times[name, False]),
                   1e3 * statistics.median(times[name, True]),
                   statistics.median(b / a for a, b in zip(times[name, False],
                                                           times[name, True], strict=True)))
            for name in calls}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--layers", nargs="+", default=LAYERS, metavar="CIN-COUT-SIZE")
    parser.add_argument("--sizes", type=int, nargs="*", default=[64, 128],
                        help="UNet step sizes (none: layers only)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox._C import _winograd
    from sandbox.array.conv import conv2d, conv2d_backward
    from sandbox.bench._cases_user import NUM_CLASSES, user_step, user_unet
    from sandbox.runtime import simd

    if not _winograd.avx2_rows():
        raise SystemExit("this CPU does not run the AVX2 tile rows")
    rng = np.random.default_rng(0)
    calls = {}
    for spec in args.layers:
        c, o, s = (int(v) for v in spec.split("-"))
        x = rng.standard_normal((args.batch, c, s, s)).astype(np.float32)
        w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
        g = rng.standard_normal((args.batch, o, s, s)).astype(np.float32)
        calls[f"{spec} forward"] = lambda x=x, w=w: (conv2d(x, w, padding=1),)
        calls[f"{spec} backward"] = lambda x=x, w=w, g=g: conv2d_backward(
            g, x, w, padding=1, needs=(True, True, False))[:2]
    for size in args.sizes:
        sandbox.manual_seed(0)
        x = rng.standard_normal((args.batch, 1, size, size)).astype(np.float32)
        y = rng.integers(0, NUM_CLASSES, size=(args.batch, size, size))
        calls[f"UNet step {size}^2"] = _step_call(
            user_step(sandbox, user_unet(sandbox, mode="bilinear"), x, y))
    print(f"cpu: {simd.cpu().describe()}; sandbox path {simd.current().isa}; batch "
          f"{args.batch}; ms, medians of {args.rounds}; ratio: AVX2 rows / row loops")
    previous = sandbox.get_num_threads()
    try:
        for threads in args.threads:
            sandbox.set_num_threads(threads)
            for name, (rows, avx2, ratio) in _ab(calls, args.rounds).items():
                print(f"{threads}t {name:22s} rows {rows:8.2f}  avx2 {avx2:8.2f}  ({ratio:.3f})",
                      flush=True)
    finally:
        sandbox.set_num_threads(previous)
        _switch(True)


if __name__ == "__main__":
    main()
