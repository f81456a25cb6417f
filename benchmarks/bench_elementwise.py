"""The classic UNet's elementwise tail: batch norm + ReLU and the Adam update, fused vs not.

For every batch norm of ``sandbox.nn.ClassicUNet`` (batch 8, ``--size`` input):
forward and backward of (a) the fused ``batch_norm_relu`` kernels, (b) the
unfused array ops they replace (``batch_norm``, ``np.maximum``, ``g * (y > 0)``,
``batch_norm_backward``) and (c) PyTorch (``relu(batch_norm)``, autograd).  Then
one Adam update of all the model's parameters: the Cython kernel, the numpy
update, and ``torch.optim.Adam`` (its default implementation).  The three are
interleaved; the minimum of ``--repeat`` calls is reported (on a shared machine
the least disturbed call is the best estimate of the code's own cost), in CPU
time with ``--cpu-time``.

    python benchmarks/bench_elementwise.py [--size 64] [--threads 1] [--cpu-time]
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np


def bn_shapes(size: int) -> Counter:
    """(channels, pixels) of every BatchNorm2d of ClassicUNet at ``size``² -> count."""
    widths = (16, 32, 64, 128, 256)
    shapes = Counter()
    for level, w in enumerate(widths):
        blocks = 1 if level == len(widths) - 1 else 2  # encoder block, + decoder block
        shapes[(w, size >> level)] += 2 * blocks
    return shapes


def best(fns, repeat, clock):
    """Minimum time of each function, calls interleaved (rotating order)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for i in range(repeat):
        for k in [(i + j) % len(fns) for j in range(len(fns))]:
            t0 = clock()
            fns[k]()
            times[k].append(clock() - t0)
    return [1e3 * min(t) for t in times]


def norm_relu_ops(torch, c, s, rng):
    from sandbox.array import norm

    x = rng.standard_normal((8, c, s, s), dtype=np.float32)
    g = rng.standard_normal(x.shape, dtype=np.float32)
    w, b = np.ones(c, np.float32), np.zeros(c, np.float32)
    rm, rv = np.zeros(c, np.float32), np.ones(c, np.float32)

    def fused():
        y, mean, invstd = norm.batch_norm_relu(x, rm, rv, w, b, True)
        return norm.batch_norm_relu_backward(g, x, mean, invstd, w, b, True)

    def unfused():
        a, mean, invstd = norm.batch_norm(x, rm, rv, w, b, True)
        y = np.maximum(a, 0)
        return norm.batch_norm_backward(g * (y > 0), x, mean, invstd, w, True)

    tx = torch.from_numpy(x).requires_grad_(True)
    tw, tb = torch.ones(c, requires_grad=True), torch.zeros(c, requires_grad=True)
    trm, trv, tg = torch.zeros(c), torch.ones(c), torch.from_numpy(g)

    def theirs():
        y = torch.relu(torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, True))
        return torch.autograd.grad(y, (tx, tw, tb), tg)

    return fused, unfused, theirs


def adam_ops(torch, rng):
    import sandbox
    from sandbox import nn, optim
    from sandbox.optim import _optimizer

    params = list(nn.ClassicUNet().parameters())
    for p in params:
        p.grad = sandbox.Tensor(rng.standard_normal(p.shape, dtype=np.float32))
    opt = optim.Adam(params, lr=1e-3)
    kernel_takes = _optimizer._kernel_takes

    def fused():
        opt.step()

    def numpy_update():  # the optimiser's numpy code for every parameter
        _optimizer._kernel_takes = lambda *args: False
        try:
            opt.step()
        finally:
            _optimizer._kernel_takes = kernel_takes

    tparams = [torch.nn.Parameter(torch.from_numpy(p.numpy().copy())) for p in params]
    for tp in tparams:
        tp.grad = torch.randn_like(tp)
    topt = torch.optim.Adam(tparams, lr=1e-3)
    return fused, numpy_update, topt.step


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--cpu-time", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import torch

    from sandbox.bench._env import set_threads
    from sandbox.runtime.allocator import keep_freed_memory

    keep_freed_memory()
    set_threads(args.threads, torch)
    clock = time.process_time if args.cpu_time else time.perf_counter
    rng = np.random.default_rng(0)
    print(f"batch 8, float32, {args.threads} thread(s), min of {args.repeat} "
          f"({'CPU' if args.cpu_time else 'wall'} time), ms; speed = PyTorch / fused")
    print(f"{'op':22} {'count':>5} {'fused':>8} {'unfused':>8} {'torch':>8} {'speed':>6}")
    total = np.zeros(3)
    for (c, s), count in sorted(bn_shapes(args.size).items()):
        ms = best(norm_relu_ops(torch, c, s, rng), args.repeat, clock)
        total += count * np.array(ms)
        print(f"{f'bn+relu {c}@{s}':22} {count:5d} {ms[0]:8.2f} {ms[1]:8.2f} {ms[2]:8.2f} "
              f"{ms[2] / ms[0]:6.2f}")
    print(f"{'bn+relu, whole step':22} {'':5} {total[0]:8.2f} {total[1]:8.2f} {total[2]:8.2f} "
          f"{total[2] / total[0]:6.2f}")
    ms = best(adam_ops(torch, rng), args.repeat, clock)
    print(f"{'adam, all parameters':22} {1:5d} {ms[0]:8.2f} {ms[1]:8.2f} {ms[2]:8.2f} "
          f"{ms[2] / ms[0]:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
