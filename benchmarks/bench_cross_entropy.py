"""Cross-entropy with class-index targets: the one-node path against the composition.

``F.cross_entropy`` without label smoothing runs as one autograd node
(``_IndexCrossEntropy``); every other case composes ``log_softmax``, a product with dense
coefficients, sums, a negation and a division.  Both give the same bits, so they can
share a process: each round times a block of calls of one, then of the other,
alternating which goes first, and the table gives the medians and the paired ratio (one
node over composition, per round) at each thread count, for

* the loss alone, forward + backward, on (batch, classes, size, size) float32 logits;
* the gathers the node replaced: ``np.take_along_axis`` / ``np.put_along_axis`` on the
  class axis against ``sandbox.array.classes``' kernels;
* the Adam step of the bench's user-written UNet with ``--widths`` (default: the
  ``sandbox train`` model's 16-32-64-128) and ``classes`` outputs.

    python benchmarks/bench_cross_entropy.py --threads 1 2 --classes 4
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _alternate(fns: dict, rounds: int, calls: int) -> dict:
    """Median ms per call of each of two callables, and the paired ratio second / first."""
    names = list(fns)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            fns[name]()
            start = time.perf_counter()
            for _ in range(calls):
                fns[name]()
            times[name].append((time.perf_counter() - start) / calls * 1e3)
    first, second = (times[n] for n in names)
    paired = statistics.median(b / a for a, b in zip(first, second, strict=True))
    return {**{n: statistics.median(v) for n, v in times.items()}, "paired": paired}


def _line(label: str, result: dict, unit: str = "ms") -> str:
    (a, ta), (b, tb) = list(result.items())[:2]
    return (f"  {label:34s} {a} {ta:8.3f}  {b} {tb:8.3f} {unit}  "
            f"paired {b} / {a} {result['paired']:.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--widths", default="16-32-64-128")
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args(argv)

    import sandbox.nn.functional as nnf

    import sandbox
    from sandbox.array.classes import softmax_cross_entropy_grad, take_classes
    from sandbox.bench._cases_user import user_step, user_unet
    from sandbox.functional import _loss
    from sandbox.ops import log_softmax
    from sandbox.runtime import simd

    one_node = nnf.cross_entropy

    def composition(x, t, weight=None, ignore_index=-100, reduction="mean",
                    label_smoothing=0.0):
        return _loss._nll(log_softmax(x, 1), t, weight, ignore_index, reduction,
                          label_smoothing, "cross_entropy")

    n, c, s = args.batch, args.classes, args.size
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((n, c, s, s)).astype(np.float32)
    target = rng.integers(0, c, (n, s, s))
    x = sandbox.Tensor(logits, requires_grad=True)
    prob, sc = rng.random(logits.shape, dtype=np.float32), rng.random(target.shape, np.float32)
    index = target[:, None]
    widths = tuple(int(w) for w in args.widths.split("-"))
    print(f"cpu: {simd.cpu().describe()}; logits {logits.shape} float32; UNet {args.widths}, "
          f"batch {n}, {s}^2, {c} classes; medians of {args.rounds} alternating rounds")

    def loss_call(fn):
        def call():
            fn(x, target).backward()
            x.grad = None
        return call

    def numpy_gathers():
        np.take_along_axis(logits, index, axis=1)
        out = -(prob * sc[:, None])
        np.put_along_axis(out, index, sc[:, None] - np.take_along_axis(prob, index, 1), axis=1)

    def kernel_gathers():
        take_classes(logits, target, check=False)
        softmax_cross_entropy_grad(prob, target, sc, check=False)

    for threads in args.threads:
        sandbox.set_num_threads(threads)
        print(f"{threads} thread(s)")
        print(_line("loss, forward + backward", _alternate(
            {"composition": loss_call(composition), "one node": loss_call(one_node)},
            args.rounds, 20)))
        print(_line("class-axis gathers", _alternate(
            {"numpy": numpy_gathers, "kernels": kernel_gathers}, args.rounds, 20)))
        sandbox.manual_seed(0)
        model = user_unet(sandbox, widths=widths, num_classes=c)
        step = user_step(sandbox, model, rng.standard_normal((n, 1, s, s)).astype(np.float32),
                         target)

        def with_loss(fn, step=step):
            def call():
                nnf.cross_entropy = fn
                try:
                    step()
                finally:
                    nnf.cross_entropy = one_node
            return call

        print(_line("UNet step", _alternate(
            {"composition": with_loss(composition), "one node": with_loss(one_node)},
            args.rounds, 4)))


if __name__ == "__main__":
    main()
