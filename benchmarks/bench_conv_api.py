"""What the public API costs over the array API: ``F.conv2d`` + backward against
``sandbox.array.conv.conv2d`` + ``conv2d_backward``, interleaved call by call in one
process (batch 8 unless --batch, 3x3, padding 1, the input and weight gradients; medians).

    python benchmarks/bench_conv_api.py --threads 1 2
    python benchmarks/bench_conv_api.py --threads 1 2 --split   # forward and backward apart
    python benchmarks/bench_conv_api.py --threads 1 --split --batch 1 --layers 16-16-8
    python benchmarks/bench_conv_api.py --threads 2 --cold   # the Python after a layer

``--cold`` times what the public API adds, its Python, where it runs: a public forward +
backward of a tiny layer (batch 1, 2->2 @ 4x4: little but Python) right
after each layer's array-level forward + backward, against the same tiny call right
after another one (interleaved, medians).  The first runs with the caches full of the
layer's data, as the public API's own Python does around that layer's kernels.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

#: (c_in, c_out, size) of classic-UNet layers
LAYERS = [(16, 16, 64), (16, 32, 32), (32, 64, 16), (128, 128, 8), (128, 256, 4),
          (256, 256, 4)]


def _split_medians(sandbox, F, conv2d, conv2d_backward, x, w, g, repeat):
    """Medians (ms) of the array forward, array backward, public forward and public
    backward (``y.backward``), timed apart in interleaved rounds."""
    sx = sandbox.from_numpy(x).requires_grad_()
    sw = sandbox.from_numpy(w).requires_grad_()
    sg = sandbox.from_numpy(g)
    times = [[], [], [], []]
    for r in range(repeat + 2):  # two untimed rounds
        t0 = time.perf_counter()
        conv2d(x, w, padding=1)
        t1 = time.perf_counter()
        conv2d_backward(g, x, w, padding=1, needs=(True, True, False))
        t2 = time.perf_counter()
        sx.grad = sw.grad = None
        t3 = time.perf_counter()
        y = F.conv2d(sx, sw, padding=1)
        t4 = time.perf_counter()
        y.backward(sg)
        t5 = time.perf_counter()
        if r >= 2:
            for acc, dt in zip(times, (t1 - t0, t2 - t1, t4 - t3, t5 - t4), strict=True):
                acc.append(dt)
    return [statistics.median(v) * 1e3 for v in times]


def _cold_medians(sandbox, F, conv2d, conv2d_backward, x, w, g, repeat):
    """Medians (us) of a tiny public forward + backward right after the layer's array
    calls and right after another tiny call."""
    rng = np.random.default_rng(1)
    tx = sandbox.from_numpy(rng.standard_normal((1, 2, 4, 4), dtype=np.float32))
    tw = sandbox.from_numpy(rng.standard_normal((2, 2, 3, 3), dtype=np.float32))
    tx.requires_grad_()
    tw.requires_grad_()
    tg = sandbox.from_numpy(np.ones((1, 2, 4, 4), dtype=np.float32))

    def tiny():
        tx.grad = tw.grad = None
        t = time.perf_counter()
        F.conv2d(tx, tw, padding=1).backward(tg)
        return time.perf_counter() - t

    after_layer, after_tiny = [], []
    for r in range(repeat + 2):  # two untimed rounds
        conv2d(x, w, padding=1)
        conv2d_backward(g, x, w, padding=1, needs=(True, True, False))
        cold = tiny()
        warm = tiny()
        if r >= 2:
            after_layer.append(cold)
            after_tiny.append(warm)
    return statistics.median(after_layer) * 1e6, statistics.median(after_tiny) * 1e6


def _print_split(threads, c, o, s, medians):
    af, ab, pf, pb = medians
    print(f"{threads} thread(s) {c:3d}->{o:3d}@{s:<3d} forward array {af:6.3f} public {pf:6.3f}"
          f" ({1e3 * (pf - af):+4.0f} us)  backward array {ab:6.3f} public {pb:6.3f}"
          f" ({1e3 * (pb - ab):+4.0f} us)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--layers", nargs="+", metavar="CIN-COUT-SIZE",
                        help="layers to time instead of the classic UNet's (e.g. 16-16-8)")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--split", action="store_true",
                        help="time the forward and the backward apart (what each API adds "
                             "to each)")
    parser.add_argument("--cold", action="store_true",
                        help="time a tiny public call after each layer and after itself "
                             "(the cost of the public API's Python with the caches full)")
    args = parser.parse_args(argv)

    import sandbox.nn.functional as F

    import sandbox
    from sandbox.array.conv import conv2d, conv2d_backward
    from sandbox.bench._cases_user import conv_api_calls
    from sandbox.runtime import simd

    rng = np.random.default_rng(0)
    layers = ([tuple(int(v) for v in spec.split("-")) for spec in args.layers] if args.layers
              else LAYERS)
    print(f"cpu: {simd.cpu().describe()}; batch {args.batch}; ms per forward + backward, "
          f"median of {args.repeat}")
    for threads in args.threads:
        sandbox.set_num_threads(threads)
        for c, o, s in layers:
            x = rng.standard_normal((args.batch, c, s, s), dtype=np.float32)
            w = rng.standard_normal((o, c, 3, 3), dtype=np.float32)
            g = rng.standard_normal((args.batch, o, s, s), dtype=np.float32)
            if args.cold:
                cold, warm = _cold_medians(sandbox, F, conv2d, conv2d_backward, x, w, g,
                                           args.repeat)
                print(f"{threads} thread(s) {c:3d}->{o:3d}@{s:<3d} tiny public call after "
                      f"the layer {cold:6.1f} us, after itself {warm:6.1f} us "
                      f"({cold / warm:.2f}x)")
                continue
            if args.split:
                _print_split(threads, c, o, s, _split_medians(sandbox, F, conv2d,
                                                              conv2d_backward, x, w, g,
                                                              args.repeat))
                continue
            public_api, array_api = conv_api_calls(x, w, g)
            array_api()
            public_api()
            a, b = [], []
            for _ in range(args.repeat):
                t = time.perf_counter()
                array_api()
                a.append(time.perf_counter() - t)
                t = time.perf_counter()
                public_api()
                b.append(time.perf_counter() - t)
            ma, mb = statistics.median(a) * 1e3, statistics.median(b) * 1e3
            print(f"{threads} thread(s) {c:3d}->{o:3d}@{s:<3d} array {ma:6.3f}  public {mb:6.3f}"
                  f"  {100 * (mb / ma - 1):+5.1f} %  ({1e3 * (mb - ma):4.0f} us)")


if __name__ == "__main__":
    main()
