"""Benchmark conv2d / max_pool2d / batch_norm against PyTorch at the UNet's layer shapes.

UNet depth 4, base width 16: channels 16, 32, 64, 128, 256 at spatial S, S/2, ...,
S/16 for S = 64 and 128, batch 8, float32, 3x3 convs with padding 1.  Both
libraries run with the same thread count (default 2) in the same process; the
table shows medians (ms) and the ratio sandbox / torch (< 1 means sandbox is
faster).  The machine may be shared: numbers are noisy, rerun before trusting a
single ratio.

    python benchmarks/bench_conv.py [--sizes 64 128] [--threads 2] [--repeat 7]
"""

from __future__ import annotations

import argparse

import numpy as np

import sandbox
from sandbox.array import conv, norm, pool
from sandbox.bench._timing import median_ms


def cases(sizes, batch):
    for s in sizes:
        for level, c in enumerate((16, 32, 64, 128, 256)):
            yield s, batch, c, s >> level


def _ops(torch, rng, n, c, s):
    """(sandbox, torch) callables for one UNet level."""
    F = torch.nn.functional
    aten = torch.ops.aten
    x = rng.standard_normal((n, c, s, s), dtype=np.float32)
    w = (rng.standard_normal((c, c, 3, 3), dtype=np.float32) * 0.05)
    b = rng.standard_normal(c, dtype=np.float32)
    gy = rng.standard_normal((n, c, s, s), dtype=np.float32)
    tx, tw, tb, tgy = (torch.from_numpy(a) for a in (x, w, b, gy))
    y_idx = pool.max_pool2d(x, 2)
    ty_idx = F.max_pool2d(tx, 2, return_indices=True)
    gp = rng.standard_normal(y_idx[0].shape, dtype=np.float32)
    tgp = torch.from_numpy(gp)
    rm, rv = np.zeros(c, np.float32), np.ones(c, np.float32)
    trm, trv = torch.zeros(c), torch.ones(c)
    _, mean, invstd = norm.batch_norm(x, rm, rv, b, b, training=True)
    _, tmean, tinv = aten.native_batch_norm(tx, tb, tb, trm, trv, True, 0.1, 1e-5)[:3]
    ops = {
        "conv3x3 fwd": (
            lambda: conv.conv2d(x, w, b, 1, 1),
            lambda: F.conv2d(tx, tw, tb, 1, 1)),
        "conv3x3 bwd": (
            lambda: conv.conv2d_backward(gy, x, w, 1, 1),
            lambda: aten.convolution_backward(tgy, tx, tw, [c], [1, 1], [1, 1], [1, 1],
                                              False, [0, 0], 1, [True, True, True])),
        "maxpool2 fwd": (
            lambda: pool.max_pool2d(x, 2),
            lambda: F.max_pool2d(tx, 2, return_indices=True)),
        "maxpool2 bwd": (
            lambda: pool.max_pool2d_backward(gp, y_idx[1], x.shape),
            lambda: aten.max_pool2d_with_indices_backward(
                tgp, tx, [2, 2], [2, 2], [0, 0], [1, 1], False, ty_idx[1])),
        "batchnorm fwd": (
            lambda: norm.batch_norm(x, rm, rv, b, b, training=True),
            lambda: aten.native_batch_norm(tx, tb, tb, trm, trv, True, 0.1, 1e-5)),
        "batchnorm bwd": (
            lambda: norm.batch_norm_backward(gy, x, mean, invstd, b, training=True),
            lambda: aten.native_batch_norm_backward(tgy, tx, tb, trm, trv, tmean, tinv,
                                                    True, 1e-5, [True, True, True])),
    }
    return ops


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)

    import torch
    from threadpoolctl import threadpool_info

    torch.set_num_threads(args.threads)
    sandbox.set_num_threads(args.threads)
    for info in threadpool_info():
        print(f"# {info['user_api']}: {info['internal_api']} {info.get('version')} "
              f"({info['num_threads']} threads, {info.get('threading_layer', '?')}) "
              f"{info['filepath'].rsplit('/', 1)[-1]}")
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"mkldnn={torch.backends.mkldnn.is_available()}; sandbox {args.threads} threads "
          f"(conv kernels: {conv.TUNING.kernel_threads or sandbox.get_num_threads()})")
    print(f"# float32, batch {args.batch}, medians of {args.repeat} runs (ms)")
    header = (f"{'input':>7} {'C':>4} {'HxW':>7} | {'op':<16} {'sandbox':>9} {'torch':>9} "
              f"{'ratio':>6}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    totals = {}
    for size, n, c, s in cases(args.sizes, args.batch):
        ops = _ops(torch, rng, n, c, s)
        with torch.no_grad():
            for name, (ours, theirs) in ops.items():
                t_ours = median_ms(ours, args.repeat)
                t_torch = median_ms(theirs, args.repeat)
                tot = totals.setdefault((size, name), [0.0, 0.0])
                tot[0] += t_ours
                tot[1] += t_torch
                print(f"{size:>7} {c:>4} {s:>3}x{s:<3} | {name:<16} {t_ours:9.2f} {t_torch:9.2f} "
                      f"{t_ours / t_torch:6.2f}")
    print("-" * len(header))
    for (size, name), (a, t) in totals.items():
        print(f"{size:>7} {'all':>4} {'levels':>7} | {name:<16} {a:9.2f} {t:9.2f} {a / t:6.2f}")


if __name__ == "__main__":
    main()
