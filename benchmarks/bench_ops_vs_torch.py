"""Everyday layers against PyTorch: forward + backward of one op through the public API.

Activations, normalisations, pooling, a depthwise convolution, an up-convolution,
dropout, softmax, losses (cross-entropy, MSE, L1, BCE on logits alone and with a positive
weight per channel, against fixed targets) and elementwise arithmetic as a network
written by hand calls them
(``sandbox.functional`` and ``torch.nn.functional``), each on the same float32 input
((8, 16, 64, 64) unless ``--shape``), its output's gradient all ones; ours and
PyTorch's calls interleaved in one process, medians of ``--repeat``, at each
``--threads`` count.  ``ours/torch`` above 1: the sandbox is slower.  An audit for the
ops a UNet variant may use beyond the classic UNet's (where ``sandbox bench`` measures
the step): the leaky ReLU of nnU-Net-style blocks ran 13-21x slower than PyTorch's
before its kernel (docs/benchmarks.md).

    python benchmarks/bench_ops_vs_torch.py --threads 1 2
    python benchmarks/bench_ops_vs_torch.py --ops leaky_relu instance_norm --shape 2 16 32 32 32
    python benchmarks/bench_ops_vs_torch.py --ops layer_norm_affine --shape 8 1024 256
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _classes(a, lib):
    """Class targets (0 or 1) for cross-entropy of logits ``a``: (N, ...) of ``lib``."""
    t = np.random.default_rng(3).integers(0, 2, (a.shape[0], *a.shape[2:]))
    return lib.from_numpy(t)


def _regression(a, lib):
    """A normal float target and a 0/1 one, of ``a``'s shape and dtype, and a positive
    weight per channel ((C, 1, ...), for class imbalance), of ``lib``."""
    rng = np.random.default_rng(5)
    t = rng.standard_normal(a.shape).astype(np.float32)
    b = rng.integers(0, 2, a.shape).astype(np.float32)
    pw = np.linspace(0.5, 3, a.shape[1], dtype=np.float32).reshape(-1, *(1,) * (a.ndim - 2))
    return lib.from_numpy(t), lib.from_numpy(b), lib.from_numpy(pw)


def _affine(a, lib):
    """A weight and a bias of ``a``'s last axis for layer norm, requiring grad, of ``lib``."""
    rng = np.random.default_rng(4)
    w, b = (rng.standard_normal(a.shape[-1]).astype(np.float32) for _ in range(2))
    return lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)


def _ops(F, TF, torch, sandbox):
    """name -> (ours, PyTorch's) for an input tensor of the library."""
    made = {}  # (what, shape) -> (ours, PyTorch's): made once, outside the timed calls

    def once(what, a, k, make):
        key = (what, tuple(a.shape))
        if key not in made:
            made[key] = (make(a, sandbox), make(a, torch))
        return made[key][k]

    def target(a, k):
        return once("classes", a, k, _classes)

    def regression(a, k):
        """A float target of the input's shape (MSE, L1), and a 0/1 one (binary
        cross-entropy on logits), not trained."""
        return once("regression", a, k, _regression)

    def affine(a, k):
        """Layer norm's weight and bias over the last axis, trained (their gradients too)."""
        return once("affine", a, k, _affine)

    return {
        "relu": (F.relu, TF.relu),
        "leaky_relu": (lambda a: F.leaky_relu(a, 0.01), lambda a: TF.leaky_relu(a, 0.01)),
        "silu": (F.silu, TF.silu),
        "gelu": (F.gelu, TF.gelu),
        "sigmoid": (F.sigmoid, torch.sigmoid),
        "tanh": (F.tanh, torch.tanh),
        "instance_norm": (F.instance_norm, TF.instance_norm),
        "group_norm": (lambda a: F.group_norm(a, 4), lambda a: TF.group_norm(a, 4)),
        "layer_norm": (lambda a: F.layer_norm(a, a.shape[-1:]),
                       lambda a: TF.layer_norm(a, a.shape[-1:])),
        "layer_norm_affine": (lambda a: F.layer_norm(a, a.shape[-1:], *affine(a, 0)),
                              lambda a: TF.layer_norm(a, a.shape[-1:], *affine(a, 1))),
        "softmax": (lambda a: F.softmax(a, dim=1), lambda a: TF.softmax(a, dim=1)),
        "softmax_last": (lambda a: F.softmax(a, dim=-1), lambda a: TF.softmax(a, dim=-1)),
        "log_softmax": (lambda a: F.log_softmax(a, dim=1), lambda a: TF.log_softmax(a, dim=1)),
        "cross_entropy": (lambda a: F.cross_entropy(a, target(a, 0)),
                          lambda a: TF.cross_entropy(a, target(a, 1))),
        "mse_loss": (lambda a: F.mse_loss(a, regression(a, 0)[0]),
                     lambda a: TF.mse_loss(a, regression(a, 1)[0])),
        "l1_loss": (lambda a: F.l1_loss(a, regression(a, 0)[0]),
                    lambda a: TF.l1_loss(a, regression(a, 1)[0])),
        "bce_with_logits": (
            lambda a: F.binary_cross_entropy_with_logits(a, regression(a, 0)[1]),
            lambda a: TF.binary_cross_entropy_with_logits(a, regression(a, 1)[1])),
        "bce_pos_weight": (
            lambda a: F.binary_cross_entropy_with_logits(a, regression(a, 0)[1],
                                                         pos_weight=regression(a, 0)[2]),
            lambda a: TF.binary_cross_entropy_with_logits(a, regression(a, 1)[1],
                                                          pos_weight=regression(a, 1)[2])),
        "dropout": (lambda a: F.dropout(a, 0.2, training=True),
                    lambda a: TF.dropout(a, 0.2, training=True)),
        "add": (lambda a: a + a, lambda a: a + a),
        "mul": (lambda a: a * a, lambda a: a * a),
        "mean": (lambda a: a.mean(), lambda a: a.mean()),
    }


def _spatial_ops(F, TF, nd, channels, sandbox, torch):
    """The ops that name their rank: pooling, resizing, a depthwise 3x3 convolution and an
    up-convolution (kernel 2, stride 2; their weight gradients too), 2-D or 3-D."""
    pool = (F.avg_pool2d, F.max_pool2d, F.adaptive_avg_pool2d) if nd == 2 else (
        F.avg_pool3d, F.max_pool3d, None)
    tpool = (TF.avg_pool2d, TF.max_pool2d, TF.adaptive_avg_pool2d) if nd == 2 else (
        TF.avg_pool3d, TF.max_pool3d, None)
    mode = "bilinear" if nd == 2 else "trilinear"
    out = {
        "avg_pool": (lambda a: pool[0](a, 2), lambda a: tpool[0](a, 2)),
        "max_pool": (lambda a: pool[1](a, 2), lambda a: tpool[1](a, 2)),
        f"upsample_{mode}": (lambda a: F.interpolate(a, scale_factor=2, mode=mode),
                             lambda a: TF.interpolate(a, scale_factor=2, mode=mode)),
    }
    if pool[2] is not None:
        out["adaptive_avg_pool"] = (lambda a: pool[2](a, 1), lambda a: tpool[2](a, 1))
    # the weights train as in a network: their gradients too (accumulated across calls
    # on both sides)
    w = np.random.default_rng(1).standard_normal((channels, 1) + (3,) * nd, dtype=np.float32)
    sw = sandbox.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    conv, tconv = (F.conv2d, TF.conv2d) if nd == 2 else (F.conv3d, TF.conv3d)
    out["depthwise_conv"] = (lambda a: conv(a, sw, padding=1, groups=channels),
                             lambda a: tconv(a, tw, padding=1, groups=channels))
    # the original UNet's up-convolution: kernel 2, stride 2, half the channels
    u = np.random.default_rng(2).standard_normal((channels, max(channels // 2, 1)) + (2,) * nd,
                                                 dtype=np.float32)
    su, tu = sandbox.tensor(u, requires_grad=True), torch.tensor(u, requires_grad=True)
    up, tup = ((F.conv_transpose2d, TF.conv_transpose2d) if nd == 2
               else (F.conv_transpose3d, TF.conv_transpose3d))
    out["up_conv"] = (lambda a: up(a, su, stride=2), lambda a: tup(a, tu, stride=2))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shape", type=int, nargs="+", default=[8, 16, 64, 64])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--ops", nargs="+", help="a subset of the ops, by name")
    args = parser.parse_args(argv)

    import torch
    import torch.nn.functional as TF

    import sandbox
    import sandbox.functional as F
    from sandbox.runtime import simd

    shape = tuple(args.shape)
    ops = {**_ops(F, TF, torch, sandbox),
           **_spatial_ops(F, TF, len(shape) - 2, shape[1], sandbox, torch)}
    if args.ops:
        unknown = sorted(set(args.ops) - set(ops))
        if unknown:
            raise SystemExit(f"unknown ops {unknown}; choose from {sorted(ops)}")
        ops = {k: v for k, v in ops.items() if k in args.ops}
    x0 = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    print(f"cpu: {simd.cpu().describe()}; torch {torch.__version__}; input {shape} float32; "
          f"ms per forward + backward, medians of {args.repeat} interleaved calls")
    for threads in args.threads:
        sandbox.set_num_threads(threads)
        torch.set_num_threads(threads)
        for name, (ours, theirs) in ops.items():
            sx = sandbox.tensor(x0, requires_grad=True)
            tx = torch.tensor(x0, requires_grad=True)
            out_shape = tuple(ours(sx).shape)
            sg = sandbox.from_numpy(np.ones(out_shape, np.float32))
            tg = torch.ones(out_shape)

            def run_ours(sx=sx, sg=sg, ours=ours):
                sx.grad = None
                t = time.perf_counter()
                ours(sx).backward(sg)
                return time.perf_counter() - t

            def run_theirs(tx=tx, tg=tg, theirs=theirs):
                tx.grad = None
                t = time.perf_counter()
                theirs(tx).backward(tg)
                return time.perf_counter() - t

            samples = ([], [])
            for fn in (run_ours, run_theirs):
                fn()
            for _ in range(args.repeat):
                samples[0].append(run_ours())
                samples[1].append(run_theirs())
            a, b = (statistics.median(s) * 1e3 for s in samples)
            print(f"{threads} thread(s) {name:22s} ours {a:7.3f}  torch {b:7.3f}  "
                  f"ours/torch {a / b:5.2f}")


if __name__ == "__main__":
    main()
