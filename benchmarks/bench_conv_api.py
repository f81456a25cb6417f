"""Convolutions through the public autograd API against the array API, per layer.

For every 3x3 convolution of the classic UNet (``sandbox/bench/_cases_classic.py``,
batch 8, padding 1, no bias, float32) and each thread count, two calls are timed
interleaved in one process (alternating which goes first), medians reported:

* ``array``: what ``sandbox bench --filter conv-layer`` times, ``conv2d`` then
  ``conv2d_backward(needs=(input, weight))`` on ndarrays;
* ``autograd``: ``F.conv2d(x, w, padding=1).backward(g)`` with ``x`` and ``w`` leaves
  that require grad (their ``.grad`` reset before each call), as users write it.

``api/array`` above 1 is the time the autograd path spends above the kernels (the
target of issue 21 is at most 1.05).  The CPU model and family are printed first:
figures belong to the machine they were measured on.  ``import sandbox`` keeps freed
memory mapped (:func:`sandbox.runtime.allocator.keep_freed_memory`; off with
``SANDBOX_TUNE_MALLOC=0``), so neither call pays page faults for its fresh outputs; the
header says whether it is on.

    python benchmarks/bench_conv_api.py [--threads 1 2] [--repeat 15] [--size 64]
        [--layers 32-64-16 ...] [--clock wall|cpu]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

import sandbox
import sandbox.functional as F
from sandbox.array import conv
from sandbox.bench._cases_classic import CONV_LAYERS
from sandbox.runtime.allocator import keep_freed_memory


def cpu_description() -> str:
    """``model name``, ``cpu family`` and ``model`` of the first CPU in /proc/cpuinfo."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in fields:
                    fields[key] = value.strip()
                if not line.strip() and fields:
                    break
    except OSError:
        pass
    model = fields.get("model name", platform.processor() or platform.machine())
    return f"{model} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def interleaved(fa, fb, repeat, warmup=2, clock=time.perf_counter):
    """Medians in ms of ``fa`` and ``fb`` timed alternately with ``clock``."""
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
    return 1e3 * float(np.median(ta)), 1e3 * float(np.median(tb))


def layer_calls(rng, n, ci, co, s):
    """``(array call, autograd call)`` for one layer; both compute the same three passes."""
    x = rng.standard_normal((n, ci, s, s), dtype=np.float32)
    w = rng.standard_normal((co, ci, 3, 3), dtype=np.float32) * 0.05
    g = rng.standard_normal((n, co, s, s), dtype=np.float32)
    tx = sandbox.tensor(x, requires_grad=True)
    tw = sandbox.tensor(w, requires_grad=True)

    def array():
        conv.conv2d(x, w, padding=1)
        return conv.conv2d_backward(g, x, w, padding=1, needs=(True, True, False))[:2]

    def autograd():
        tx.grad = tw.grad = None
        F.conv2d(tx, tw, padding=1).backward(g)
        return tx.grad, tw.grad

    return array, autograd


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--size", type=int, default=64,
                        help="UNet input size: the layers' sizes scale with it (64 or 128)")
    parser.add_argument("--layers", nargs="+", default=None,
                        help="c_in-c_out-size (default: every 3x3 layer of the classic UNet)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: process CPU time (leaves out waiting for a core on a loaded "
                             "machine; at 2 threads it counts both)")
    args = parser.parse_args(argv)
    layers = [(ci, co, s * args.size // 64) for ci, co, s in CONV_LAYERS]
    if args.layers is not None:
        layers = [tuple(int(v) for v in spec.split("-")) for spec in args.layers]
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    tuned = keep_freed_memory()
    print(f"# CPU: {cpu_description()}")
    print(f"# batch {args.batch}, float32, 3x3 padding 1, median of {args.repeat} interleaved, "
          f"{args.clock} clock, malloc tuned: {tuned}; ms per forward + input grad + weight "
          "grad")
    for nt in args.threads:
        sandbox.set_num_threads(nt)
        rng = np.random.default_rng(0)
        print(f"# {nt} thread(s)")
        print(f"{'layer':>14} | {'array':>8} {'autograd':>8} {'api/array':>9}")
        total_a = total_g = 0.0
        for ci, co, s in layers:
            a, g = interleaved(*layer_calls(rng, args.batch, ci, co, s), args.repeat,
                               clock=clock)
            total_a, total_g = total_a + a, total_g + g
            print(f"{f'{ci}->{co}@{s}':>14} | {a:8.2f} {g:8.2f} {g / a:9.3f}", flush=True)
        print(f"{'total':>14} | {total_a:8.2f} {total_g:8.2f} {total_g / total_a:9.3f}")


if __name__ == "__main__":
    main()
