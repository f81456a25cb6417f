"""max_pool2d / avg_pool2d and max_pool3d / avg_pool3d: numpy (float64) reference, threads,
NaN/ties, torch parity, gradients."""

import itertools

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox._C import _pool, _pool3d
from sandbox.array import pool
from sandbox.array._validate import pair, triple
from sandbox.array.pool import pool_output_size
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck

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


# 3-D --------------------------------------------------------------------------
# (shape, kernel, stride, padding, dilation, ceil_mode)
CASES_3D = [
    ((2, 3, 4, 6, 6), 2, None, 0, 1, False),  # the UNet's pooling
    ((1, 2, 5, 7, 6), 3, 2, 1, 1, False),
    ((2, 2, 5, 7, 6), (3, 2, 3), (2, 1, 2), (1, 1, 0), 1, True),
    ((1, 3, 7, 6, 8), (2, 3, 2), (1, 2, 3), (1, 1, 0), (2, 1, 2), True),
    ((3, 5, 6, 5), 3, 2, 1, 1, True),  # unbatched (C, D, H, W)
    ((1, 1, 5, 5, 5), 5, 1, 2, 1, False),
]


def _windows(size, k, s, p, d, ceil_mode):
    """For each axis, per output: the list of input positions of its (dilated) window."""
    out = [pool_output_size(size[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    return [[[o * s[i] - p[i] + j * d[i] for j in range(k[i])] for o in range(out[i])]
            for i in range(3)]


def ref_max_pool3d(x, kernel, stride, padding, dilation, ceil_mode):
    """Float64 reference from the definition; first maximum wins, NaN wins."""
    k = triple(kernel, "k", 1)
    s = k if stride is None else triple(stride, "s", 1)
    p, d = triple(padding, "p", 0), triple(dilation, "d", 1)
    size = x.shape[-3:]
    wins = _windows(size, k, s, p, d, ceil_mode)
    planes = x.reshape(-1, *size)
    out = np.empty((planes.shape[0], *[len(w) for w in wins]))
    idx = np.empty(out.shape, np.int64)
    for n, vol in enumerate(planes):
        for a, za in enumerate(wins[0]):
            for b, hb in enumerate(wins[1]):
                for c, wc in enumerate(wins[2]):
                    taps = [(z * size[1] + h) * size[2] + w for z in za for h in hb for w in wc
                            if 0 <= z < size[0] and 0 <= h < size[1] and 0 <= w < size[2]]
                    best, bi = -np.inf, taps[0]
                    for j in taps:
                        v = vol.reshape(-1)[j]
                        if v > best or np.isnan(v):
                            best, bi = v, j
                    out[n, a, b, c], idx[n, a, b, c] = best, bi
    shape = (*x.shape[:-3], *out.shape[1:])
    return out.reshape(shape), idx.reshape(shape)


def ref_avg_pool3d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    """Float64 reference: sum of the in-bounds window over the divisor PyTorch uses."""
    k = triple(kernel, "k", 1)
    s = k if stride is None else triple(stride, "s", 1)
    p = triple(padding, "p", 0)
    size = x.shape[-3:]
    wins = _windows(size, k, s, p, (1, 1, 1), ceil_mode)
    planes = x.reshape(-1, *size).astype(np.float64)
    out = np.empty((planes.shape[0], *[len(w) for w in wins]))
    for a, za in enumerate(wins[0]):
        for b, hb in enumerate(wins[1]):
            for c, wc in enumerate(wins[2]):
                inside = [[j for j in ax if 0 <= j < size[i]] for i, ax in enumerate((za, hb, wc))]
                # count_include_pad counts the window clipped to the padded input
                padded = np.prod([min(ax[-1] + 1, size[i] + p[i]) - ax[0]
                                  for i, ax in enumerate((za, hb, wc))])
                window = planes[:, inside[0]][:, :, inside[1]][:, :, :, inside[2]]
                total = window.sum(axis=(1, 2, 3))
                count = np.prod([len(v) for v in inside])
                div = divisor or (padded if count_include_pad else count)
                out[:, a, b, c] = total / div
    return out.reshape(*x.shape[:-3], *out.shape[1:])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES_3D, ids=_ids)
def test_max_pool3d_matches_reference(case, dtype, rng):
    shape, k, s, p, d, cm = case
    x = rng.standard_normal(shape).astype(dtype)
    y, idx = pool.max_pool3d(x, k, s, p, d, cm)
    ry, ridx = ref_max_pool3d(x, k, s, p, d, cm)
    np.testing.assert_array_equal(y, ry.astype(dtype))
    np.testing.assert_array_equal(idx, ridx)
    gy = rng.standard_normal(y.shape).astype(dtype)
    gx = pool.max_pool3d_backward(gy, idx, x.shape)
    ref = np.zeros(x.shape).reshape(len(gy.reshape(-1, *gy.shape[-3:])), -1)
    for plane, (g, i) in enumerate(zip(gy.reshape(ref.shape[0], -1), idx.reshape(ref.shape[0], -1),
                                       strict=True)):
        np.add.at(ref[plane], i, g)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(gx, ref.reshape(x.shape), rtol=tol, atol=tol)
    np.testing.assert_array_equal(pool.max_pool3d_gather(x, idx), y)


@pytest.mark.parametrize("options", [(True, None), (False, None), (True, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", [c for c in CASES_3D if c[4] == 1], ids=_ids)
def test_avg_pool3d_matches_reference(case, options, dtype, rng):
    shape, k, s, p, _, cm = case
    cip, div = options
    x = rng.standard_normal(shape).astype(dtype)
    y = pool.avg_pool3d(x, k, s, p, cm, cip, div)
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(y, ref_avg_pool3d(x, k, s, p, cm, cip, div), rtol=tol, atol=tol)
    # the backward is the adjoint: <avg(x), g> = <x, avg_backward(g)>
    gy = rng.standard_normal(y.shape)
    gx = pool.avg_pool3d_backward(gy, x.shape, k, s, p, cm, cip, div)
    x64 = x.astype(np.float64)
    assert np.sum(x64 * gx) == pytest.approx(np.sum(pool.avg_pool3d(x64, k, s, p, cm, cip, div)
                                                    * gy), rel=1e-12)


def test_3d_kernels_bitwise_equal_across_thread_counts(rng):
    x = rng.standard_normal((6, 9, 13, 11)).astype(np.float32)
    outs = []
    for nt in (1, 2, 3):
        y = np.empty((6, 5, 7, 6), np.float32)
        idx = np.empty((6, 5, 7, 6), np.int64)
        _pool3d.maxpool3d_forward(x, y, idx, 3, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, nt)
        g = np.empty((6, 9 * 13 * 11), np.float32)
        _pool3d.maxpool3d_backward(y.reshape(6, -1), idx.reshape(6, -1), g, nt)
        a = np.empty((6, 5, 7, 6), np.float32)
        _pool3d.avgpool3d_forward(x, a, 3, 3, 3, 2, 2, 2, 1, 1, 1, True, 0, nt)
        ga = np.empty_like(x)
        _pool3d.avgpool3d_backward(a, ga, 3, 3, 3, 2, 2, 2, 1, 1, 1, False, 0, nt)
        outs.append((y, idx, g, a, ga))
    for other in outs[1:]:
        for u, v in zip(outs[0], other, strict=True):
            assert np.array_equal(u, v)


def test_3d_ops_bitwise_equal_across_thread_counts(rng):
    x = rng.standard_normal((2, 3, 9, 13, 11)).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        with sandbox.num_threads(nt):
            y, idx = pool.max_pool3d(x, 3, 2, 1, ceil_mode=True)
            gx = pool.max_pool3d_backward(np.cos(y), idx, x.shape)
            a = pool.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
            ga = pool.avg_pool3d_backward(np.sin(a), x.shape, 3, 2, 1, True, False)
        results.append((y, idx, gx, a, ga))
    for other in results[1:]:
        for u, v in zip(results[0], other, strict=True):
            assert np.array_equal(u, v)


def _distinct(shape, rng):
    """Values spaced 0.1 apart: no ties (or near-ties within the FD step) for the max."""
    return rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) * 0.1


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_gradcheck_and_gradgradcheck(kind, rng):
    x = sandbox.Tensor(_distinct((1, 2, 4, 5, 3), rng), requires_grad=True)

    def op(t):
        if kind == "max":
            return F.max_pool3d(t, (2, 3, 2), (2, 2, 1), (1, 1, 0), ceil_mode=True)
        return F.avg_pool3d(t, (2, 3, 2), (2, 2, 1), (1, 1, 0), ceil_mode=True,
                            count_include_pad=False)

    assert gradcheck(op, (x,))
    assert gradgradcheck(op, (x,))


def test_double_backward_matches_torch(rng, torch):
    """Gradient of |d loss / dx|^2 through both pools (float64), against torch."""
    x = _distinct((1, 2, 4, 4, 4), rng)
    results = []
    for lib, make, grad in (
        (F, lambda a: sandbox.Tensor(a, requires_grad=True), sandbox.autograd.grad),
        (torch.nn.functional, lambda a: torch.tensor(a, requires_grad=True), torch.autograd.grad),
    ):
        t = make(x)
        y = lib.avg_pool3d(lib.max_pool3d(t * t, 2, 1, 1), 2, 1, ceil_mode=True)
        (gx,) = grad((y * y * y).sum(), [t], create_graph=True)
        (gg,) = grad((gx * gx).sum(), [t])
        results.append(gg.numpy() if isinstance(gg, sandbox.Tensor) else gg.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "make, exc, match",
    [
        (lambda: pool.max_pool3d(np.zeros((1, 8, 8)), 2), ValueError,
         r"input must be 4-D \(C, D, H, W\) or 5-D"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4), np.int32), 2), TypeError,
         "input must have dtype float32"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4)), (2, 2)), TypeError,
         "kernel_size must be an int or a triple of ints"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4)), 0), ValueError,
         "kernel_size must be positive"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4)), 2, stride=0), ValueError,
         "stride must be positive"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4)), 2, padding=-1), ValueError,
         "padding must be non-negative"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4)), 2, padding=2), ValueError,
         "padding .* must be at most half of kernel_size"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 4, 4, 4)), 2, dilation=0), ValueError,
         "dilation must be positive"),
        (lambda: pool.max_pool3d(np.zeros((1, 1, 2, 8, 8)), 3), ValueError,
         r"output size .* input spatial size \(2, 8, 8\) .* kernel_size \(3, 3, 3\)"),
        (lambda: pool.max_pool3d_backward(np.zeros((1, 1, 2, 2, 2)),
                                          np.zeros((1, 1, 2, 2, 1), np.int64), (1, 1, 4, 4, 4)),
         ValueError, "indices shape .* must match grad_output shape"),
        (lambda: pool.avg_pool3d(np.zeros((1, 1, 4, 4, 4)), 2, divisor_override=0), ValueError,
         "divisor_override must be None or a positive int"),
        (lambda: pool.avg_pool3d_backward(np.zeros((1, 1, 3, 2, 2)), (1, 1, 4, 4, 4), 2),
         ValueError, r"grad_output spatial shape \(3, 2, 2\) must be \(2, 2, 2\)"),
    ],
)
def test_pool3d_validation(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_plain_and_create_graph_backward_agree_and_take_strided_gradients(kind, rng):
    x = sandbox.Tensor(_distinct((2, 2, 5, 4, 6), rng), requires_grad=True)

    def fn():
        if kind == "max":
            return F.max_pool3d(x, 3, 2, 1, ceil_mode=True)
        return F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)

    y = fn()
    r = rng.standard_normal(y.shape[::-1])
    (plain,) = sandbox.autograd.grad((fn() * sandbox.Tensor(np.ascontiguousarray(r.T))).sum(),
                                     [x])
    (strided,) = sandbox.autograd.grad((y.permute(4, 3, 2, 1, 0) * sandbox.Tensor(r)).sum(), [x])
    (graph,) = sandbox.autograd.grad((fn() * sandbox.Tensor(r.T)).sum(), [x], create_graph=True)
    np.testing.assert_array_equal(plain.numpy(), strided.numpy())
    np.testing.assert_allclose(plain.numpy(), graph.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 4, 6, 8), (2, 5, 7, 9), (1, 2, 2, 2)])
def test_2x2x2_fast_path_matches_general_kernel(shape, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    x[0, :2, :2, :2] = 1.0  # a tie: the first tap wins
    x[-1, -2, -2, -2] = np.nan
    out = tuple(n // 2 for n in shape[1:])
    results = []
    for nt in (1, 2, 3):
        y, idx = np.empty((shape[0], *out), dtype), np.empty((shape[0], *out), np.int64)
        _pool3d.maxpool2x2x2_forward(x, y, idx, nt)
        results.append((y, idx))
    y, idx = np.empty_like(results[0][0]), np.empty_like(results[0][1])
    _pool3d.maxpool3d_forward(x, y, idx, 2, 2, 2, 2, 2, 2, 0, 0, 0, 1, 1, 1, 1)
    for fy, fidx in results:
        np.testing.assert_array_equal(fy, y)
        np.testing.assert_array_equal(fidx, idx)
    # the public op takes the fast path (and gives the same) for these shapes
    py, pidx = pool.max_pool3d(x, 2)
    np.testing.assert_array_equal(py, y)
    np.testing.assert_array_equal(pidx, idx)


# both ranks -------------------------------------------------------------------
@pytest.mark.parametrize("spatial_dims", [2, 3])
def test_ties_pick_first_and_nan_propagates(spatial_dims):
    max_pool = {2: pool.max_pool2d, 3: pool.max_pool3d}[spatial_dims]
    window = (1, 1) + (2,) * spatial_dims
    _, idx = max_pool(np.ones(window), 2)
    assert idx.item() == 0
    if spatial_dims == 2:
        x, first_nan = np.array([[[[1.0, np.nan], [3.0, 2.0]]]]), 1
    else:
        x, first_nan = np.arange(8.0).reshape(window), 4
        x[0, 0, 1, 0, 0] = np.nan
    y, idx = max_pool(x, 2)
    assert np.isnan(y.item()) and idx.item() == first_nan
    y, idx = max_pool(np.full(window, -np.inf), 2)
    assert y.item() == -np.inf and idx.item() == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial_dims, case",
                         [*[(2, c) for c in CASES], *[(3, c) for c in CASES_3D]],
                         ids=lambda v: _ids(v) if isinstance(v, tuple) else str(v))
def test_torch_parity(spatial_dims, case, dtype, rng, torch):
    shape, k, s, p, d, cm = case
    tf = torch.nn.functional
    x = rng.standard_normal(shape).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    sx = sandbox.Tensor(x, requires_grad=True)
    ty, tidx = getattr(tf, f"max_pool{spatial_dims}d")(tx, k, s, p, d, cm, return_indices=True)
    sy, sidx = getattr(F, f"max_pool{spatial_dims}d")(sx, k, s, p, d, cm, return_indices=True)
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
        ty = getattr(tf, f"avg_pool{spatial_dims}d")(tx, k, s, p, cm, cip, div)
        sy = getattr(F, f"avg_pool{spatial_dims}d")(sx, k, s, p, cm, cip, div)
        ty.backward(torch.tensor(gy))
        (sy * sandbox.Tensor(gy)).sum().backward()
        np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
