"""max_pool2d / avg_pool2d: numpy reference, threads, NaN/ties, torch parity, gradients."""

import itertools

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox._C import _pool
from sandbox.array import pool
from sandbox.array._validate import pair
from sandbox.autograd.gradcheck import gradcheck

# (shape, kernel, stride, padding, dilation, ceil_mode)
CASES = [
    ((2, 3, 8, 8), 2, None, 0, 1, False),
    ((2, 3, 9, 7), 3, 2, 1, 1, True),
    ((1, 2, 11, 10), (3, 2), (2, 3), (1, 1), (2, 1), True),
    ((2, 2, 7, 7), 3, 2, 1, 1, False),
    ((3, 5, 6), (2, 3), 1, (1, 0), 1, False),  # 3-D input
    ((1, 1, 5, 5), 2, 2, 1, 1, True),
]


def _ids(case):
    return "-".join(str(v).replace(" ", "") for v in case)


def ref_max_pool(x, k, s, p, d, ceil_mode):
    kh, kw = pair(k, "k", 1)
    sh, sw = (kh, kw) if s is None else pair(s, "s", 1)
    ph, pw = pair(p, "p", 0)
    dh, dw = pair(d, "d", 1)
    h, w = x.shape[-2:]
    ho = pool.pool_output_size(h, kh, sh, ph, dh, ceil_mode)
    wo = pool.pool_output_size(w, kw, sw, pw, dw, ceil_mode)
    out = np.full((*x.shape[:-2], ho, wo), -np.inf)
    idx = np.zeros(out.shape, dtype=np.int64)
    for oh, ow in itertools.product(range(ho), range(wo)):
        for i, j in itertools.product(range(kh), range(kw)):
            ih, iw = oh * sh - ph + i * dh, ow * sw - pw + j * dw
            if 0 <= ih < h and 0 <= iw < w:
                v = x[..., ih, iw]
                better = v > out[..., oh, ow]
                out[..., oh, ow] = np.where(better, v, out[..., oh, ow])
                idx[..., oh, ow] = np.where(better, ih * w + iw, idx[..., oh, ow])
    return out, idx


def ref_avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor):
    kh, kw = pair(k, "k", 1)
    sh, sw = (kh, kw) if s is None else pair(s, "s", 1)
    ph, pw = pair(p, "p", 0)
    h, w = x.shape[-2:]
    ho = pool.pool_output_size(h, kh, sh, ph, 1, ceil_mode)
    wo = pool.pool_output_size(w, kw, sw, pw, 1, ceil_mode)
    out = np.zeros((*x.shape[:-2], ho, wo))
    for oh, ow in itertools.product(range(ho), range(wo)):
        h0, w0 = oh * sh - ph, ow * sw - pw
        h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
        size = (h1 - h0) * (w1 - w0)
        h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
        if not count_include_pad:
            size = (h1 - h0) * (w1 - w0)
        out[..., oh, ow] = x[..., h0:h1, w0:w1].sum(axis=(-2, -1)) / (divisor or size)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_max_pool_matches_reference(case, dtype, rng):
    shape, k, s, p, d, cm = case
    x = rng.standard_normal(shape).astype(dtype)
    y, idx = pool.max_pool2d(x, k, s, p, d, cm)
    ry, ridx = ref_max_pool(x.astype(float), k, s, p, d, cm)
    assert y.dtype == dtype and idx.dtype == np.int64
    np.testing.assert_array_equal(y, ry.astype(dtype))
    np.testing.assert_array_equal(idx, ridx)
    gy = rng.standard_normal(y.shape).astype(dtype)
    gx = pool.max_pool2d_backward(gy, idx, x.shape)
    expected = float((gy * y).sum())
    assert float((gx.astype(float) * x).sum()) == pytest.approx(expected, rel=1e-5, abs=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("options", [(True, None), (False, None), (True, 3)])
@pytest.mark.parametrize("case", [c for c in CASES if c[4] == 1], ids=_ids)
def test_avg_pool_matches_reference(case, options, dtype, rng):
    shape, k, s, p, _, cm = case
    cip, div = options
    x = rng.standard_normal(shape).astype(dtype)
    y = pool.avg_pool2d(x, k, s, p, cm, cip, div)
    np.testing.assert_allclose(
        y, ref_avg_pool(x.astype(float), k, s, p, cm, cip, div), rtol=1e-5, atol=1e-6
    )
    gy = rng.standard_normal(y.shape)
    gx = pool.avg_pool2d_backward(gy.astype(dtype), x.shape, k, s, p, cm, cip, div)
    # the backward is the adjoint of the (linear) forward
    assert float((gx * x).sum()) == pytest.approx(float((gy * y).sum()), rel=1e-5, abs=1e-4)


def test_ties_pick_first_and_nan_propagates():
    x = np.array([[[[1.0, 1.0], [1.0, 1.0]]]])
    y, idx = pool.max_pool2d(x, 2)
    assert idx.item() == 0
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]])
    y, idx = pool.max_pool2d(x, 2)
    assert np.isnan(y.item()) and idx.item() == 1
    x = np.full((1, 1, 2, 2), -np.inf)
    y, idx = pool.max_pool2d(x, 2)
    assert y.item() == -np.inf and idx.item() == 0


def test_kernels_bitwise_equal_across_thread_counts(rng):
    x = rng.standard_normal((6, 13, 11)).astype(np.float32)
    outs = []
    for nt in (1, 2):
        y = np.empty((6, 7, 6), np.float32)
        idx = np.empty((6, 7, 6), np.int64)
        _pool.maxpool2d_forward(x, y, idx, 3, 3, 2, 2, 1, 1, 1, 1, nt)
        g = np.empty_like(x)
        _pool.maxpool2d_backward(y, idx, g, nt)
        a = np.empty((6, 7, 6), np.float32)
        _pool.avgpool2d_forward(x, a, 3, 3, 2, 2, 1, 1, True, 0, nt)
        ga = np.empty_like(x)
        _pool.avgpool2d_backward(a, ga, 3, 3, 2, 2, 1, 1, False, 0, nt)
        outs.append((y, idx, g, a, ga))
    for u, v in zip(*outs, strict=True):
        assert np.array_equal(u, v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_torch_parity(case, dtype, rng, torch):
    shape, k, s, p, d, cm = case
    x = rng.standard_normal(shape).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    sx = sandbox.Tensor(x, requires_grad=True)
    ty, tidx = torch.nn.functional.max_pool2d(tx, k, s, p, d, cm, return_indices=True)
    sy, sidx = F.max_pool2d(sx, k, s, p, d, cm, return_indices=True)
    gy = rng.standard_normal(ty.shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    np.testing.assert_array_equal(sy.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(sidx.numpy(), tidx.numpy())
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    if d != 1:
        return
    for cip, div in [(True, None), (False, None), (True, 5)]:
        tx.grad = None
        sx.grad = None
        ty = torch.nn.functional.avg_pool2d(tx, k, s, p, cm, cip, div)
        sy = F.avg_pool2d(sx, k, s, p, cm, cip, div)
        ty.backward(torch.tensor(gy))
        (sy * sandbox.Tensor(gy)).sum().backward()
        np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_gradcheck(kind, rng):
    # distinct values spaced apart: no ties within eps for the max
    x = rng.permutation(60).reshape(1, 2, 5, 6).astype(np.float64) * 0.1

    def op(t):
        if kind == "max":
            return F.max_pool2d(t, 3, 2, 1, ceil_mode=True)
        return F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False)

    assert gradcheck(op, (sandbox.Tensor(x, requires_grad=True),))


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        ((np.zeros((8, 8), np.float32), 2), {}, ValueError, "input must be 3-D .* or 4-D"),
        ((np.zeros((1, 1, 8, 8), np.int32), 2), {}, TypeError, "input must have dtype float32"),
        ((np.zeros((1, 1, 8, 8)), 0), {}, ValueError, "kernel_size must be positive"),
        ((np.zeros((1, 1, 8, 8)), 2), dict(stride=0), ValueError, "stride must be positive"),
        ((np.zeros((1, 1, 8, 8)), 2), dict(padding=-1), ValueError, "padding must be non-negative"),
        (
            (np.zeros((1, 1, 8, 8)), 2),
            dict(padding=2),
            ValueError,
            "padding .* must be at most half of kernel_size",
        ),
        ((np.zeros((1, 1, 8, 8)), 2), dict(dilation=0), ValueError, "dilation must be positive"),
        (
            (np.zeros((1, 1, 2, 8)), 3),
            {},
            ValueError,
            r"output size .* input spatial size \(2, 8\) .* kernel_size \(3, 3\)",
        ),
    ],
)
def test_max_pool_validation(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pool.max_pool2d(*args, **kwargs)


def test_avg_pool_validation():
    x = np.zeros((1, 1, 8, 8))
    with pytest.raises(ValueError, match="divisor_override must be None or a positive int"):
        pool.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(ValueError, match="padding .* at most half"):
        pool.avg_pool2d(x, 3, padding=2)
    with pytest.raises(ValueError, match="indices shape"):
        pool.max_pool2d_backward(np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 3, 4), np.int64), x.shape)


@pytest.mark.parametrize("shape", [(2, 3, 8, 6), (1, 2, 7, 9), (3, 1, 2, 2), (1, 1, 5, 2)])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_2x2_fast_path_matches_general_kernel(shape, ceil_mode, dtype):
    from sandbox._C import _pool
    from sandbox.array import pool

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, shape).astype(dtype)  # many ties
    x.flat[::7] = np.nan
    out, idx = pool.max_pool2d(x, 2, ceil_mode=ceil_mode)
    planes = np.ascontiguousarray(x).reshape(-1, *shape[-2:])
    ref_out = np.empty((planes.shape[0], *out.shape[-2:]), dtype)
    ref_idx = np.empty(ref_out.shape, np.int64)
    _pool.maxpool2d_forward(planes, ref_out, ref_idx, 2, 2, 2, 2, 0, 0, 1, 1, 1)
    np.testing.assert_array_equal(out.reshape(ref_out.shape), ref_out)
    np.testing.assert_array_equal(idx.reshape(ref_idx.shape), ref_idx)


@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (2, 3, 5, 6, 7)])
def test_generic_pooling_dispatches_on_ndim(shape, rng):
    """max_pool / avg_pool (and backward, gather) of a batched input equal the rank-fixed
    names bitwise; ``nd=`` also takes unbatched inputs."""
    nd = len(shape) - 2
    x = rng.standard_normal(shape)
    named = {2: (pool.max_pool2d, pool.max_pool2d_backward, pool.avg_pool2d,
                 pool.avg_pool2d_backward),
             3: (pool.max_pool3d, pool.max_pool3d_backward, pool.avg_pool3d,
                 pool.avg_pool3d_backward)}[nd]
    y, idx = pool.max_pool(x, 3, 2, 1, ceil_mode=True)
    ry, ridx = named[0](x, 3, 2, 1, ceil_mode=True)
    np.testing.assert_array_equal(y, ry)
    np.testing.assert_array_equal(idx, ridx)
    np.testing.assert_array_equal(pool.max_pool_backward(y, idx, x.shape),
                                  named[1](y, idx, x.shape))
    np.testing.assert_array_equal(pool.max_pool_gather(x, idx), y)
    a = pool.avg_pool(x, 2, 1, 1, count_include_pad=False)
    np.testing.assert_array_equal(a, named[2](x, 2, 1, 1, count_include_pad=False))
    np.testing.assert_array_equal(pool.avg_pool_backward(a, x.shape, 2, 1, 1, False, False),
                                  named[3](a, x.shape, 2, 1, 1, False, False))
    np.testing.assert_array_equal(pool.max_pool(x[0], 2, nd=nd)[0], named[0](x[0], 2)[0])
    with pytest.raises(ValueError, match=r"input must be 4-D \(N, C, H, W\) or 5-D"):
        pool.max_pool(x[0, 0, 0], 2)
