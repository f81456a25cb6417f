"""Adaptive average and max pooling over ``(N, C, H, W)``, as PyTorch.

Output cell ``o`` of an axis of length ``n`` pooled to ``m`` covers inputs
``[floor(o n / m), ceil((o + 1) n / m))``.  Average pooling is a separable linear
map (``A_h x A_wᵀ`` with per-axis averaging matrices), so it is two matmuls and
differentiable twice; max pooling takes the max of each window with its index
(the gradient goes to the first maximum, as PyTorch).
"""

from __future__ import annotations

import numpy as np

from ..ops import max as _max
from ..ops import stack


def _bins(n, m):
    o = np.arange(m)
    return (o * n) // m, -((-(o + 1) * n) // m)


def _output_size(x, output_size, op):
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: expected a (C, H, W) or (N, C, H, W) input, got shape {x.shape}")
    size = (output_size, output_size) if isinstance(output_size, int | None) else output_size
    if len(size) != 2:
        raise ValueError(f"{op}: output_size must be an int or a pair, got {output_size!r}")
    out = tuple(x.shape[-2 + i] if s is None else int(s) for i, s in enumerate(size))
    if min(out) < 1:
        raise ValueError(f"{op}: output_size must be positive, got {output_size!r}")
    return out


def _average_matrix(n, m, dtype):
    start, end = _bins(n, m)
    j = np.arange(n)
    inside = (j >= start[:, None]) & (j < end[:, None])
    return inside / (end - start)[:, None].astype(dtype)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002 - torch's argument name
    """Average ``input`` down (or up) to ``output_size`` (int, pair; None keeps a dim)."""
    oh, ow = _output_size(input, output_size, "adaptive_avg_pool2d")
    h, w = input.shape[-2:]
    if oh == ow == 1:
        # a global average pool: a mean over the trailing axes, on every thread
        # (sandbox.array.reduce), whose gradient a leaf fills on every thread (a (8, 16, 64,
        # 64) float32 input, forward + backward: 0.93 / 1.23 -> 0.60-0.68 / 0.69-0.76
        # PyTorch's time at 1 / 2 threads on the AMD EPYC family 25 model 1 VM, two runs of
        # python benchmarks/bench_ops_vs_torch.py --threads 1 2 --repeat 31)
        return input.mean(axis=(-2, -1), keepdims=True)
    if h % oh == 0 and w % ow == 0:
        # windows of one size side by side (a global average pool, 1x1, among them): a
        # mean over each, one reduction, instead of two batched matmuls (a (8, 16, 64, 64)
        # float32 input to 1x1, forward + backward: 1.67 -> 0.43-0.58 ms at 1 thread,
        # 1.26-1.54 -> 0.35-0.72 at 2 on the AMD EPYC family 25 model 1 VM; python
        # benchmarks/bench_ops_vs_torch.py --ops adaptive_avg_pool)
        kh, kw = h // oh, w // ow
        return input.reshape(*input.shape[:-2], oh, kh, ow, kw).mean(axis=(-3, -1))
    dtype = input.dtype
    a_h = _average_matrix(h, oh, dtype).astype(dtype)
    a_w = _average_matrix(w, ow, dtype).astype(dtype)
    return (a_h @ input) @ a_w.T


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Maximum of each adaptive window; ``return_indices`` adds flat ``h * W + w`` indices."""
    oh, ow = _output_size(input, output_size, "adaptive_max_pool2d")
    h, w = input.shape[-2:]
    (h0, h1), (w0, w1) = _bins(h, oh), _bins(w, ow)
    values, indices = [], []
    for i in range(oh):
        for j in range(ow):
            window = input[..., h0[i]:h1[i], w0[j]:w1[j]]
            v, k = _max(window.flatten(-2), -1)
            values.append(v)
            kw = w1[j] - w0[j]
            indices.append((h0[i] + k.numpy() // kw) * w + w0[j] + k.numpy() % kw)
    out = stack(values, -1).reshape(*input.shape[:-2], oh, ow)
    if not return_indices:
        return out
    from ..autograd import Tensor

    return out, Tensor._make(np.stack(indices, -1).reshape(out.shape).astype(np.int64))
