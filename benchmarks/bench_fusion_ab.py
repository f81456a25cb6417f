"""A/B of the classic UNet step with and without the fused elementwise kernels, and PyTorch.

Three steps run interleaved in one process (rotating which goes first), so a
shared machine's load hits all three alike: the sandbox step as shipped (fused
batch norm + ReLU, one-pass Adam), the same step with the unfused path (batch
norm, then ReLU as separate ops; Adam in numpy), and the PyTorch twin.  The
ratios between the medians are the result; absolute times follow the load.

    python benchmarks/bench_fusion_ab.py [--sizes 64 128] [--modes nearest bilinear bicubic]
                                         [--threads 2] [--cpu-time]
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import contextmanager

import numpy as np


@contextmanager
def unfused():
    """The step as it ran before the fused kernels: BN, then ReLU; numpy Adam."""
    import sandbox.functional as F
    from sandbox.nn import BatchNorm2d
    from sandbox.optim import _optimizer

    saved = BatchNorm2d.forward_relu, _optimizer._kernel_takes
    BatchNorm2d.forward_relu = lambda self, x: F.relu(self(x))
    _optimizer._kernel_takes = lambda *args: False  # every parameter by the numpy code
    try:
        yield
    finally:
        BatchNorm2d.forward_relu, _optimizer._kernel_takes = saved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--modes", nargs="+", default=["nearest", "bilinear", "bicubic"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--cpu-time", action="store_true",
                        help="time with the process's CPU time instead of the wall clock "
                             "(on an overloaded machine, at 1 thread: leaves out the time the "
                             "process waited for a core)")
    args = parser.parse_args(argv)
    clock = time.process_time if args.cpu_time else time.perf_counter
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import torch

    from sandbox.bench._cases_classic import build_classic_step
    from sandbox.bench._env import set_threads
    from sandbox.runtime.allocator import keep_freed_memory

    keep_freed_memory()
    set_threads(args.threads, torch)
    print(f"ClassicUNet step, batch 8, float32, {args.threads} threads, medians of "
          f"{args.repeat} ({'CPU' if args.cpu_time else 'wall'} time); "
          f"speed = PyTorch ms / ours ms")
    print(f"{'size':>4} {'mode':9} {'fused ms':>9} {'unfused ms':>10} {'torch ms':>9} "
          f"{'fused/unfused':>13} {'speed fused':>11} {'speed unfused':>13}")
    for size in args.sizes:
        for mode in args.modes:
            new = build_classic_step("ab", mode, size, False, torch)
            old = build_classic_step("ab", mode, size, False, torch, libs=("sandbox",))

            def old_step(step=old["sandbox"]):
                with unfused():
                    step()

            steps = [new["sandbox"], old_step, new["torch"]]
            times = [[], [], []]
            for i in range(args.repeat + 2):
                order = [(i + k) % 3 for k in range(3)]
                for k in order:
                    t0 = clock()
                    steps[k]()
                    if i >= 2:
                        times[k].append(clock() - t0)
            fused, slow, theirs = (1e3 * float(np.median(t)) for t in times)
            print(f"{size:4d} {mode:9} {fused:9.1f} {slow:10.1f} {theirs:9.1f} "
                  f"{fused / slow:13.2f} {theirs / fused:11.2f} {theirs / slow:13.2f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
