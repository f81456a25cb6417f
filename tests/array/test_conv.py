"""conv2d / conv_transpose2d and conv3d / conv_transpose3d: kernels vs a float64 numpy
reference, threads, torch parity, gradients, validation."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox._C import _im2col
from sandbox._C import _vol2col as kernels
from sandbox.array import conv
from sandbox.array._validate import pair, triple
from sandbox.array.conv import _vol2col as loops
from sandbox.array.conv import _winograd3d
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck
from sandbox.runtime import simd

# (N, C, H, W, O, kh, kw, stride, padding, dilation, groups)
CASES = [
    (2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1),
    (2, 4, 9, 7, 6, 3, 2, 2, 1, 1, 2),
    (1, 6, 8, 11, 6, 2, 3, (2, 1), (0, 2), (2, 1), 3),
    (3, 4, 5, 6, 8, 1, 1, 1, 0, 1, 1),  # 1x1 fast path
    (2, 4, 7, 7, 4, 1, 1, 2, 1, 1, 2),  # 1x1 with stride and padding
    (2, 2, 4, 4, 3, 5, 5, 1, 2, 1, 1),  # kernel larger than the input, padded
    (9, 8, 3, 3, 5, 3, 3, 1, 1, 1, 1),  # batched chunk (small plane)
]


def _ids(case):
    return "N{}C{}H{}W{}O{}k{}x{}s{}p{}d{}g{}".format(*case).replace(" ", "")


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    """Plain numpy reference: sum over kernel taps of strided slices."""
    sh, sw = pair(stride, "s", 1)
    ph, pw = pair(padding, "p", 0)
    dh, dw = pair(dilation, "d", 1)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, o, ho, wo), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * cg : (g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xg[
                    :,
                    :,
                    i * dh : i * dh + sh * (ho - 1) + 1 : sh,
                    j * dw : j * dw + sw * (wo - 1) + 1 : sw,
                ]
                out[:, g * og : (g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og : (g + 1) * og, :, i, j]
                )
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def ref_conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation):
    """Plain numpy reference: scatter every tap into a padded output, then crop."""
    sh, sw = pair(stride, "s", 1)
    ph, pw = pair(padding, "p", 0)
    oph, opw = pair(output_padding, "op", 0)
    dh, dw = pair(dilation, "d", 1)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    ho = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wo = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros((n, og * groups, ho + 2 * ph, wo + 2 * pw))
    cg = c // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                full[
                    :,
                    g * og : (g + 1) * og,
                    i * dh : i * dh + sh * (h - 1) + 1 : sh,
                    j * dw : j * dw + sw * (wd - 1) + 1 : sw,
                ] += np.einsum(
                    "nchw,co->nohw", x[:, g * cg : (g + 1) * cg], w[g * cg : (g + 1) * cg, :, i, j]
                )
    out = full[:, :, ph : ph + ho, pw : pw + wo]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def _data(case, dtype, rng, transposed=False):
    n, c, h, w, o, kh, kw, s, p, d, g = case
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wshape = (c, o // g, kh, kw) if transposed else (o, c // g, kh, kw)
    weight = rng.standard_normal(wshape).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype)
    return x, weight, bias, s, p, d, g


def _tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv2d_backward_is_adjoint(case, dtype, rng):
    """<gy, conv(x, w)> = <gx, x> = <gw, w> (conv is bilinear), gb = sum gy."""
    x, w, b, s, p, d, g = _data(case, np.float64, rng)
    y = conv.conv2d(x, w, None, s, p, d, g)
    gy = rng.standard_normal(y.shape)
    gx, gw, gb = conv.conv2d_backward(
        gy.astype(dtype), x.astype(dtype), w.astype(dtype), s, p, d, g
    )
    assert gx.dtype == gw.dtype == gb.dtype == dtype
    ref = float((gy * y).sum())
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    assert float((gx * x).sum()) == pytest.approx(ref, rel=rtol)
    assert float((gw * w).sum()) == pytest.approx(ref, rel=rtol)
    np.testing.assert_allclose(gb, gy.sum(axis=(0, 2, 3)), rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv_transpose2d_matches_reference(case, dtype, rng):
    x, w, b, s, p, d, g = _data(case, dtype, rng, transposed=True)
    sh = pair(s, "s", 1)
    op = tuple(1 if si > 1 else 0 for si in sh)
    y = conv.conv_transpose2d(x, w, b, s, p, op, g, d)
    ref = ref_conv_transpose2d(x.astype(float), w.astype(float), b, s, p, op, g, d)
    np.testing.assert_allclose(y, ref, **_tol(dtype))
    gy = rng.standard_normal(y.shape)
    gx, gw, gb = conv.conv_transpose2d_backward(gy.astype(dtype), x, w, s, p, op, g, d)
    y0 = ref_conv_transpose2d(x.astype(float), w.astype(float), None, s, p, op, g, d)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    assert float((gx * x).sum()) == pytest.approx(float((gy * y0).sum()), rel=rtol)
    assert float((gw * w).sum()) == pytest.approx(float((gy * y0).sum()), rel=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_bitwise_equal_across_thread_counts(dtype, rng):
    x = rng.standard_normal((3, 5, 11, 9)).astype(dtype)
    geom = (3, 2, 2, 1, 1, 1, 1, 2)  # kh, kw, sh, sw, ph, pw, dh, dw
    ho, wo = conv.conv2d_output_size(11, 9, (3, 2), (2, 1), 1, (1, 2))
    cols = []
    folds = []
    for nt in (1, 2):
        col = np.empty((5 * 6, 2 * ho * wo), dtype=dtype)
        _im2col.im2col(x, col, 1, 2, *geom, ho, wo, nt)
        cols.append(col)
        out = np.full(x.shape, np.nan, dtype=dtype)
        _im2col.col2im(col, out, 1, 2, *geom, ho, wo, nt)
        folds.append(out[1:])
    assert np.array_equal(cols[0], cols[1])
    assert np.array_equal(folds[0], folds[1])
    assert np.isnan(folds[0]).sum() == 0


def test_chunking_paths_agree(rng, monkeypatch):
    """Per-sample, partially batched and fully batched GEMM chunks give the same result."""
    x, w, b, s, p, d, g = _data((5, 4, 6, 6, 6, 3, 3, 1, 1, 1, 2), np.float64, rng)
    gy = rng.standard_normal((5, 6, 6, 6))
    outs = []
    for target in (1, 72, 10**6):
        monkeypatch.setattr(conv.TUNING, "target_cols", target)
        outs.append((conv.conv2d(x, w, b, s, p, d, g), *conv.conv2d_backward(gy, x, w, s, p, d, g)))
    for other in outs[1:]:
        for a, c in zip(outs[0], other, strict=True):
            np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- autograd


def _gradcheck(op, arrays, rng):
    """float64 central differences against backward (sandbox.gradcheck, PyTorch's tolerances)."""
    assert gradcheck(op, tuple(sandbox.Tensor(a, requires_grad=True) for a in arrays))


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[4]], ids=_ids)
def test_conv2d_gradcheck(case, rng):
    n, c, h, w, o, kh, kw, s, p, d, g = case
    x, wt, b, *_ = _data((1, c, min(h, 6), min(w, 6), o, kh, kw, s, p, d, g), np.float64, rng)
    _gradcheck(lambda x_, w_, b_: F.conv2d(x_, w_, b_, s, p, d, g), [x, wt, b], rng)


@pytest.mark.parametrize("case", [CASES[1], CASES[2]], ids=_ids)
def test_conv_transpose2d_gradcheck(case, rng):
    n, c, h, w, o, kh, kw, s, p, d, g = case
    x, wt, b, *_ = _data((1, c, 4, 5, o, kh, kw, s, p, d, g), np.float64, rng, transposed=True)
    op = tuple(1 if si > 1 else 0 for si in pair(s, "s", 1))
    _gradcheck(lambda x_, w_, b_: F.conv_transpose2d(x_, w_, b_, s, p, op, g, d), [x, wt, b], rng)


def test_no_bias_and_partial_grads(rng):
    x, w, _, s, p, d, g = _data(CASES[0], np.float64, rng)
    sx = sandbox.Tensor(x)
    sw_ = sandbox.Tensor(w, requires_grad=True)
    F.conv2d(sx, sw_, None, s, p, d, g).sum().backward()
    assert sx.grad is None
    assert sw_.grad.shape == w.shape


# ----------------------------------------------------------------------------- validation


def _xw(dtype=np.float32):
    return np.zeros((2, 4, 8, 8), dtype), np.zeros((6, 4, 3, 3), dtype)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(x=np.zeros((4, 8, 8), np.float32)), ValueError, "input must be 4-D"),
        (dict(w=np.zeros((6, 4, 3), np.float32)), ValueError, "weight must be 4-D"),
        (
            dict(w=np.zeros((6, 3, 3, 3), np.float32)),
            ValueError,
            r"weight of shape \(6, 3, 3, 3\).*input of shape \(2, 4, 8, 8\)",
        ),
        (dict(groups=3), ValueError, "groups=3 must divide the input channels"),
        (
            dict(groups=4, w=np.zeros((6, 1, 3, 3), np.float32)),
            ValueError,
            "groups=4 must divide the output channels",
        ),
        (dict(groups=0), ValueError, "groups must be a positive int"),
        (dict(stride=0), ValueError, "stride must be positive"),
        (dict(stride=(1, 2, 3)), TypeError, "stride must be an int or a pair"),
        (dict(dilation=-1), ValueError, "dilation must be positive"),
        (dict(padding=-1), ValueError, "padding must be non-negative"),
        (
            dict(w=np.zeros((6, 4, 9, 3), np.float32)),
            ValueError,
            r"output size .* input spatial size \(8, 8\).*kernel \(9, 3\)",
        ),
        (dict(x=np.zeros((2, 4, 8, 8), np.int64)), TypeError, "input must have dtype float32"),
        (
            dict(w=np.zeros((6, 4, 3, 3), np.float64)),
            TypeError,
            "weight dtype float64 does not match input dtype float32",
        ),
        (dict(b=np.zeros(5, np.float32)), ValueError, r"bias must have shape \(6,\)"),
        (dict(b=np.zeros(6, np.float64)), TypeError, "bias dtype float64 does not match"),
    ],
)
def test_conv2d_validation(kwargs, exc, match):
    x, w = _xw()
    x = kwargs.pop("x", x)
    w = kwargs.pop("w", w)
    b = kwargs.pop("b", None)
    with pytest.raises(exc, match=match):
        conv.conv2d(x, w, b, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(w=np.zeros((3, 2, 3, 3), np.float32)), r"expects 3 input channels.*\(2, 4, 8, 8\)"),
        (dict(output_padding=2, stride=2), "output_padding .* must be smaller than"),
        (dict(groups=3, w=np.zeros((4, 2, 3, 3), np.float32)), "groups=3 must divide"),
        (dict(padding=9), r"output size .* is not positive"),
    ],
)
def test_conv_transpose2d_validation(kwargs, match):
    x = np.zeros((2, 4, 8, 8), np.float32)
    w = kwargs.pop("w", np.zeros((4, 2, 3, 3), np.float32))
    with pytest.raises(ValueError, match=match):
        conv.conv_transpose2d(x, w, **kwargs)


def test_backward_validation():
    x, w = _xw(np.float64)
    with pytest.raises(ValueError, match=r"grad_output must have shape \(2, 6, 6, 6\)"):
        conv.conv2d_backward(np.zeros((2, 6, 8, 8)), x, w)
    with pytest.raises(TypeError, match="grad_output dtype float32 does not match"):
        conv.conv2d_backward(np.zeros((2, 6, 6, 6), np.float32), x, w)


def test_functional_requires_tensors():
    x, w = _xw()
    with pytest.raises(TypeError, match="input must be a sandbox.Tensor"):
        F.conv2d(x, sandbox.Tensor(w))


# ----------------------------------------------------------------------------- Winograd path


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape",
    [
        (2, 32, 7, 9, 33, 1),
        (9, 32, 3, 3, 32, 1),
        (1, 40, 5, 4, 32, 0),
        (2, 32, 6, 5, 32, 2),
        (2, 128, 4, 3, 128, 1),
        (1, 16, 6, 41, 16, 1),  # 21 tiles per row: 16-tile groups end inside a tile row
    ],
)
def test_winograd_matches_reference_and_im2col(shape, dtype, rng, monkeypatch, transforms):
    """3x3 stride-1 convs with enough channels take the Winograd path (forward, input
    gradient and weight gradient); compare with both references.
    The small images here run Winograd because the pixel threshold is lowered."""
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_batch_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels_input_grad", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels_weight_grad", 1)
    calls = []
    original = conv.winograd.winograd_conv3x3
    monkeypatch.setattr(
        conv.winograd, "winograd_conv3x3", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    wgrad_calls = []
    original_wgrad = conv.winograd.winograd_weight_grad
    monkeypatch.setattr(
        conv.winograd, "winograd_weight_grad",
        lambda *a, **k: wgrad_calls.append(1) or original_wgrad(*a, **k),
    )
    n, c, h, w, o, p = shape
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = (rng.standard_normal((o, c, 3, 3)) / 10).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    y = conv.conv2d(x, wt, b, 1, p)
    assert calls, "the Winograd path was not taken"
    np.testing.assert_allclose(
        y, ref_conv2d(x.astype(float), wt.astype(float), b, 1, p, 1, 1), **_tol(dtype)
    )
    gy = rng.standard_normal(y.shape).astype(dtype)
    grads = conv.conv2d_backward(gy, x, wt, 1, p)
    assert len(calls) == 2 and wgrad_calls, "the Winograd gradients were not taken"
    monkeypatch.setattr(conv.TUNING, "winograd", False)
    expected = conv.conv2d_backward(gy, x, wt, 1, p)
    for got, exp in zip(grads, expected, strict=True):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, exp, **_tol(dtype))


def test_winograd_bitwise_equal_across_thread_counts(rng):
    x = rng.standard_normal((9, 128, 8, 8)).astype(np.float32)  # 3 chunks of 4 samples
    w = rng.standard_normal((128, 128, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((9, 128, 8, 8)).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        with sandbox.num_threads(nt):
            results.append((conv.conv2d(x, w, None, 1, 1), *conv.conv2d_backward(gy, x, w, 1, 1)))
    for other in results[1:]:
        for a, c in zip(results[0], other, strict=True):
            assert np.array_equal(a, c)


# ------------------------------------------------------- Winograd F(4x4, 3x3) and small channels


def _spy(monkeypatch, module, name):
    """Record the calls of ``module.name`` (the path-taken assertions)."""
    calls = []
    original = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


def _spy_loops(monkeypatch, nd):
    """Spies on the rank's im2col or vol2col loops (as its runner calls them): a path
    that should leave them alone asserts ``not any(...)`` of the result."""
    from sandbox.array.conv import _im2col, _vol2col

    loops, run = (_im2col, conv._run2d) if nd == 2 else (_vol2col, conv._run3d)
    spies = [_spy(monkeypatch, loops, "unfold_loop"), _spy(monkeypatch, loops, "fold_loop")]
    monkeypatch.setattr(run, "unfold_loop", loops.unfold_loop)
    monkeypatch.setattr(run, "fold_loop", loops.fold_loop)
    return spies


def _g4_apply(a):
    """``G a`` over the first axis of ``a`` (3, ...) in float64, with the operations in
    the order of pyx/winograd/wino4_rows.h (sb_w4_wt): the F(4x4, 3x3) weight transform's
    reference."""
    w0, w1, w2 = a[0], a[1], a[2]
    return np.stack([w0 / 4.0, (-((w0 + w1) + w2)) / 6.0, (-((w0 - w1) + w2)) / 6.0,
                     ((w0 / 24.0) + (w1 / 12.0)) + (w2 / 6.0),
                     ((w0 / 24.0) - (w1 / 12.0)) + (w2 / 6.0), w2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("flip", [False, True])
def test_winograd_f4_weight_transform_is_the_formula_rounded_once(dtype, flip, rng):
    """U = G w G^T of F(4x4, 3x3), computed across kernels with vector divisions, equals the
    formula evaluated in float64 numpy and rounded once, bit for bit (flipped kernels too),
    for kernel counts around the 64-kernel blocks."""
    from sandbox._C import _winograd_weights

    for o, c in ((1, 1), (3, 70), (65, 2), (16, 16)):
        w = (rng.standard_normal((o, c, 3, 3)) * 3).astype(dtype)
        a = (w[:, :, ::-1, ::-1] if flip else w).astype(np.float64)
        b = _g4_apply(a.transpose(2, 3, 0, 1))          # (6, 3, O, C): G a
        ref = _g4_apply(b.transpose(1, 0, 2, 3))        # (6, 6, O, C): (G a) G^T
        u = np.empty((36, o, c), dtype)
        _winograd_weights.weight_transform(np.ascontiguousarray(w), u, flip, False, 2)
        expected = ref.transpose(1, 0, 2, 3).reshape(36, o, c).astype(dtype)
        np.testing.assert_array_equal(u, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape",
    [
        (2, 32, 7, 9, 33, 1),  # partial tiles at the right and bottom
        (9, 32, 3, 3, 32, 1),  # one tile per sample, batched chunk
        (1, 40, 5, 4, 32, 0),
        (2, 32, 6, 5, 32, 2),
        (2, 16, 17, 16, 16, 1),
        (1, 16, 9, 70, 16, 1),  # 18 tiles per row: more than one vector of 16 tiles
    ],
)
def test_winograd_f4_matches_reference(shape, dtype, rng, monkeypatch, transforms):
    """F(4x4, 3x3) (forward, input and weight gradient) against the float64 direct reference;
    its float32 error is larger than F(2x2, 3x3)'s but inside the tests' tolerance."""
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_batch_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels_input_grad", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_f4_min_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels_weight_grad", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_f4_min_pixels_weight_grad", 1)
    calls, grad_calls = [], []  # the tiles of the Winograd passes that ran
    conv3x3, weight_grad = conv.winograd.winograd_conv3x3, conv.winograd.winograd_weight_grad
    pending = conv.winograd.PendingWeights
    monkeypatch.setattr(conv.winograd, "winograd_conv3x3", lambda x_, u, *a, **k: calls.append(
        (u.view if isinstance(u, pending) else u).shape[0] == 36) or conv3x3(x_, u, *a, **k))
    monkeypatch.setattr(conv.winograd, "winograd_weight_grad", lambda *a, tile=2, **k: (
        grad_calls.append(tile == 4) or weight_grad(*a, tile=tile, **k)))
    n, c, h, w, o, p = shape
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    y = conv.conv2d(x, wt, b, 1, p)
    gy = rng.standard_normal(y.shape).astype(dtype)
    gx, gw, gb = conv.conv2d_backward(gy, x, wt, 1, p)
    assert sum(calls) >= 2 and any(grad_calls), "the F(4x4, 3x3) paths were not taken"
    x64, w64, gy64 = (a.astype(np.float64) for a in (x, wt, gy))
    np.testing.assert_allclose(y, ref_conv2d(x64, w64, b, 1, p, 1, 1), **_tol(dtype))
    with conv.tuned(winograd=False):
        expected = conv.conv2d_backward(gy64, x64, w64, 1, p)
    for got, exp in zip((gx, gw, gb), expected, strict=True):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, exp, **_tol(dtype))


@pytest.fixture
def avx2_rows():
    """Turns the AVX2 tile rows (wino4_avx2.h's F(4x4), wino2_avx2.h's F(2x2)) on or off
    in every module that compiles them (``set(on)``) and restores the CPU's choice after."""
    from sandbox._C import _winograd, _winograd_fused

    modules = (_winograd, _winograd_fused)
    before = [m.avx2_rows() for m in modules]
    if not before[0]:
        pytest.skip("the CPU has no AVX2")

    def set_(on):
        for m in modules:
            m.avx2_rows(on)
    yield set_
    for m, on in zip(modules, before, strict=True):
        m.avx2_rows(on)


@pytest.mark.parametrize("tiles_w", [1, 2, 7, 8, 9, 16, 17])
def test_winograd_f4_avx2_input_rows_are_the_row_loops_bits(tiles_w, rng, avx2_rows):
    """The AVX2 tile rows (8 tiles a register, the last block partial) compute the row
    loops' operations in their order: the same bits, padding and partial tiles included."""
    from sandbox._C import _winograd

    w = 4 * tiles_w - (tiles_w % 3)  # partial last tiles too
    x = rng.standard_normal((2, 3, 11, max(w, 1))).astype(np.float32)
    tiles_h = -(-(x.shape[2] + 2 - 2) // 4)
    got = []
    for on in (False, True):
        avx2_rows(on)
        v = np.full((36, 3, 2 * tiles_h * tiles_w), np.nan, np.float32)
        _winograd.input_transform(x, v, 0, 2, 1, 1, tiles_h, tiles_w, 2, False)
        got.append(v)
    assert not np.isnan(got[1]).any()
    assert got[0].tobytes() == got[1].tobytes()


#: (transform, tile, tiles a row) where the AVX-512 transform goes by rows and the plane one
#: tile wider is gathered (other widths compare a form with itself)
_BY_ROWS = ([("input", tile, w) for tile in (4, 2) for w in (4, 8)]
            + [("grad", 4, w) for w in (4, 8, 16, 32)]
            + [("grad", 2, w) for w in (2, 4, 8, 16, 32)])


@pytest.mark.parametrize("transform,tile,tiles_w", _BY_ROWS)
@pytest.mark.parametrize("nb,tiles_h", [(1, 1), (2, 3), (3, 5)])
def test_winograd_avx512_planes_by_rows_are_the_gathered_bits(transform, tile, tiles_w, nb,
                                                               tiles_h, rng):
    """The AVX-512 transforms of planes of 4 or 8 tiles a row (by row loads and permutes:
    the F(4x4) and F(2x2) input transforms, the output-gradient transforms of both sizes,
    which also take rows of a multiple of 16 tiles that way, F(2x2)'s rows of 2 too) give
    the bits of the gathered ones that other widths take: the same tiles of an image one tile
    wider, whose extra columns are zero (the first ``tiles_w`` tiles of each row read the
    same padded values).  Blocks of 16 tiles cross tile rows and samples, and the last is
    partial for some shapes."""
    from sandbox._C import _winograd

    if not _winograd.avx512_available():
        pytest.skip("the CPU has no AVX-512")
    h = tile * tiles_h - (1 if transform == "input" else 0)
    x = rng.standard_normal((nb, 5, h, tile * tiles_w)).astype(np.float32)
    wider = np.concatenate([x, np.zeros((nb, 5, h, tile), np.float32)], axis=3)
    points = (tile + 2) ** 2
    got = []
    for image, tw in ((x, tiles_w), (wider, tiles_w + 1)):
        v = np.full((points, 5, nb * tiles_h * tw), np.nan, np.float32)
        if transform == "input":
            _winograd.input_transform(image, v, 0, nb, 1, 1, tiles_h, tw, 2, True)
        else:
            _winograd.grad_transform(image, v, 0, nb, tiles_h, tw, 2, True)
        got.append(v.reshape(points, 5, nb, tiles_h, tw)[..., :tiles_w])
    assert not np.isnan(got[0]).any()
    assert got[0].tobytes() == np.ascontiguousarray(got[1]).tobytes()


@pytest.mark.parametrize("tiles_w", [1, 2, 7, 8, 9, 16, 17])
def test_winograd_f4_avx2_gradient_rows_are_the_row_loops_bits(tiles_w, rng, avx2_rows):
    """The output-gradient transform's AVX2 tile rows (partial tiles past Ho, Wo read as
    zeros, the last block partial): the row loops' bits."""
    from sandbox._C import _winograd

    tiles_h, nb = 3, 2
    ho, wo = 4 * tiles_h - 1, max(4 * tiles_w - 2, 1)
    g = rng.standard_normal((nb, 3, ho, wo)).astype(np.float32)
    got = []
    for on in (False, True):
        avx2_rows(on)
        v = np.full((36, 3, nb * tiles_h * tiles_w), np.nan, np.float32)
        _winograd.grad_transform(g, v, 0, nb, tiles_h, tiles_w, 2, False)
        got.append(v)
    assert not np.isnan(got[1]).any()
    assert got[0].tobytes() == got[1].tobytes()


@pytest.mark.parametrize("tiles_w", [1, 2, 3, 4, 7, 8, 9, 16, 17])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_winograd_f2_avx2_input_rows_are_the_row_loops_bits(tiles_w, padding, rng, avx2_rows):
    """wino2_avx2.h's F(2x2) input tile rows (8 tiles a register, the last block partial,
    the padded rows' edges): the row loops' bits, nothing written past the tiles."""
    from sandbox._C import _winograd

    w = 2 * tiles_w + 2 - 2 * padding - (tiles_w % 2)  # partial last tiles too
    x = rng.standard_normal((2, 3, 9, max(w, 1))).astype(np.float32)
    tiles_h = -(-(x.shape[2] + 2 * padding - 2) // 2)
    got = []
    for on in (False, True):
        avx2_rows(on)
        v = np.full((16, 3, 2 * tiles_h * tiles_w + 5), np.nan, np.float32)
        _winograd.input_transform(x, v[:, :, :-5], 0, 2, padding, padding, tiles_h, tiles_w,
                                  2, False)
        got.append(v)
    assert not np.isnan(got[1][:, :, :-5]).any() and np.isnan(got[1][:, :, -5:]).all()
    assert got[0].tobytes() == got[1].tobytes()


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("tiles_w", [1, 2, 3, 4, 7, 8, 9, 16, 17])
@pytest.mark.parametrize("exact", [True, False])
def test_winograd_avx2_output_rows_are_the_row_loops_bits(tile, tiles_w, exact, rng,
                                                          avx2_rows):
    """The output transform's AVX2 tile rows, F(2x2) (wino2_avx2.h) and F(4x4)
    (wino4_avx2.h): the last block partial; exact tiles, or the outputs past Ho, Wo
    dropped: the row loops' bits."""
    from sandbox._C import _winograd as module

    tiles_h, nb = 3, 2
    m = rng.standard_normal(((tile + 2) ** 2, 3, nb * tiles_h * tiles_w)).astype(np.float32)
    ho, wo = ((tile * tiles_h, tile * tiles_w) if exact
              else (tile * tiles_h - 1, max(tile * tiles_w - tile // 2, 1)))
    got = []
    for on in (False, True):
        avx2_rows(on)
        y = np.full((nb, 3, ho, wo), np.nan, np.float32)
        module.output_transform(m, y, 0, nb, tiles_h, tiles_w, 2, False)
        got.append(y)
    assert not np.isnan(got[1]).any()
    assert got[0].tobytes() == got[1].tobytes()


@pytest.mark.parametrize("tiles_w", [1, 2, 3, 4, 7, 8, 9, 16, 17])
@pytest.mark.parametrize("exact", [True, False])
def test_winograd_f2_avx2_gradient_rows_are_the_row_loops_bits(tiles_w, exact, rng, avx2_rows):
    """wino2_avx2.h's F(2x2) output-gradient tile rows (the last block partial, rows and
    columns past Ho, Wo read as zeros): the row loops' bits, nothing written past the tiles."""
    from sandbox._C import _winograd

    tiles_h, nb = 3, 2
    ho, wo = (2 * tiles_h, 2 * tiles_w) if exact else (2 * tiles_h - 1, max(2 * tiles_w - 1, 1))
    g = rng.standard_normal((nb, 3, ho, wo)).astype(np.float32)
    got = []
    for on in (False, True):
        avx2_rows(on)
        v = np.full((16, 3, nb * tiles_h * tiles_w + 5), np.nan, np.float32)
        _winograd.grad_transform(g, v[:, :, :-5], 0, nb, tiles_h, tiles_w, 2, False)
        got.append(v)
    assert not np.isnan(got[1][:, :, :-5]).any() and np.isnan(got[1][:, :, -5:]).all()
    assert got[0].tobytes() == got[1].tobytes()


@pytest.mark.parametrize("shape", [(8, 64, 8, 8), (3, 32, 16, 16), (2, 16, 10, 22)])
def test_winograd_f2_avx2_rows_keep_the_layer_bits(shape, rng, avx2_rows):
    """F(2x2) layers of the UNet's deeper levels (8x8, 16x16: every tile row a partial
    block or one full one) and an odd size, on the AVX2 (or portable) path, split form and
    fused chunks alike: forward, input and weight gradients the same bits with
    wino2_avx2.h's tile rows as with the row loops."""
    n, c, h, w_ = shape
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
    gy = rng.standard_normal(shape).astype(np.float32)
    results = []
    path = "avx2" if "avx2" in simd.supported_paths() else "portable"
    with simd.using(isa=path), conv.tuned(winograd_f4_min_pixels=10**9,
                                          winograd_f4_min_pixels_weight_grad=10**9):
        for on in (False, True):
            avx2_rows(on)
            results.append((conv.conv2d(x, w, None, 1, 1), *conv.conv2d_backward(gy, x, w, 1, 1)))
    for a, b in zip(*results, strict=True):
        assert a is None and b is None or a.tobytes() == b.tobytes()


@pytest.mark.parametrize("f4", [0, 1])
def test_winograd_bitwise_equal_across_thread_counts_small_channels(f4, rng):
    """16-channel layers (several chunks of one sample each) and F(4x4, 3x3): forward,
    input and weight gradients identical for 1, 2 and 3 threads."""
    x = rng.standard_normal((5, 16, 20, 20)).astype(np.float32)
    w = rng.standard_normal((24, 16, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((5, 24, 20, 20)).astype(np.float32)
    results = []
    with conv.tuned(winograd_f4_min_pixels=f4, winograd_f4_min_pixels_weight_grad=f4,
                    winograd_target_tiles=8):
        for nt in (1, 2, 3):
            with sandbox.num_threads(nt):
                results.append((conv.conv2d(x, w, None, 1, 1),
                                *conv.conv2d_backward(gy, x, w, 1, 1)))
        with sandbox.num_threads(2), conv.tuned(kernel_threads=2):  # OpenMP inside the chunks
            results.append((conv.conv2d(x, w, None, 1, 1), *conv.conv2d_backward(gy, x, w, 1, 1)))
    for other in results[1:]:
        for a, c in zip(results[0], other, strict=True):
            assert np.array_equal(a, c)


@pytest.mark.parametrize("f4", [0, 1])
def test_winograd_gradcheck(f4, rng, monkeypatch):
    """float64 finite differences through the Winograd paths (thresholds lowered so a
    small conv takes them: forward, input gradient and weight gradient)."""
    fwd_calls = _spy(monkeypatch, conv.winograd, "winograd_conv3x3")
    wgrad_calls = _spy(monkeypatch, conv.winograd, "winograd_weight_grad")
    x, wt, b, *_ = _data((1, 3, 5, 6, 2, 3, 3, 1, 1, 1, 1), np.float64, rng)
    with conv.tuned(winograd_min_channels=1, winograd_min_channels_weight_grad=1,
                    winograd_min_pixels=1, winograd_min_batch_pixels=1,
                    winograd_min_pixels_input_grad=1,
                    winograd_min_pixels_weight_grad=1,
                    winograd_f4_min_pixels=f4, winograd_f4_min_pixels_weight_grad=f4):
        _gradcheck(lambda x_, w_, b_: F.conv2d(x_, w_, b_, 1, 1), [x, wt, b], rng)
    assert fwd_calls and wgrad_calls, "the Winograd paths were not taken"


@pytest.mark.parametrize("c_in,c_out,size", [(128, 128, 8), (64, 128, 8), (32, 64, 16),
                                             (16, 16, 64), (16, 32, 32)])
def test_winograd_is_the_same_in_kernels_or_on_the_pool(c_in, c_out, size):
    # chunks run one after another with their steps shared among the threads inside
    # the kernels (split_in_kernels), or on the worker pool: the same bits either way
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, c_in, size, size)).astype(np.float32)
    w = rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32)
    g = rng.standard_normal((8, c_out, size, size)).astype(np.float32)
    runs = []
    for knob, threads in [(True, 2), (False, 2), (True, 1), (True, 3)]:
        with conv.tuned(split_in_kernels=knob), sandbox.num_threads(threads):
            runs.append((conv.conv2d(x, w, padding=1),
                         *conv.conv2d_backward(g, x, w, padding=1)[:2]))
    for run in runs[1:]:
        for a, b in zip(runs[0], run, strict=True):
            np.testing.assert_array_equal(a, b)


def test_f4_tiles_on_16x16_maps_of_few_channels():
    """F(4x4) for the forward and input gradient from 32x32 maps, and on 16x16 maps where
    input and output channels add up to at most winograd_f4_narrow_max_channels."""
    tile = conv.winograd.tile_size
    assert tile(16, 16, 32, 32) == 4 and tile(384, 128, 32, 32) == 4
    assert tile(32, 64, 16, 16) == 4 and tile(128, 128, 16, 16) == 4
    assert tile(384, 128, 16, 16) == 2 and tile(64, 128, 8, 8) == 2
    with conv.tuned(winograd_f4_min_pixels_narrow=0):
        assert tile(32, 64, 16, 16) == 2


@pytest.mark.parametrize("isa,tiles,expected", [
    ("avx512", None, {(32, 64): 4, (192, 64): 2}),  # 256 tiles, capped by the chunk bytes
    ("avx2", None, {(32, 64): 2, (192, 64): 2}),    # 128 tiles
    ("avx2", 256, {(32, 64): 4, (192, 64): 2}),     # the knob, the same cap
])
def test_weight_gradient_chunks_follow_the_path_and_the_byte_cap(isa, tiles, expected):
    """The weight gradient's chunks: ``winograd_target_tiles_weight_grad`` tiles (by SIMD
    path when None), but no more whole samples than keep a chunk's transformed points
    within ``winograd_weight_grad_chunk_bytes`` (64 F(4x4) tiles a 32² sample: 4 samples of
    32 + 64 channels fit 6 MiB, 2 of 192 + 64 do)."""
    from sandbox.runtime import simd

    if isa not in simd.supported_paths():
        pytest.skip(f"this CPU has no {isa} path")
    with simd.using(isa=isa, gemm=isa), conv.tuned(winograd_target_tiles_weight_grad=tiles):
        got = {(c, o): conv.winograd._weight_grad_pass(8, c, o, 32, 32, 4, True, 4,
                                                        conv.winograd.state()).chunk
               for c, o in expected}
    assert got == expected


@pytest.mark.parametrize("threads", [2, 3])
def test_winograd_fused_forward_cuts_chunks_for_pieces(threads):
    """With few chunks a thread, the fused forward runs chunks of fewer samples
    (``TUNING.winograd_fused_pieces``) so that a slower core takes fewer of them; its
    bits are the split form's whatever the chunks."""
    rng = np.random.default_rng(8)
    n, c_in, c_out, size = 12, 8, 16, 8
    x = rng.standard_normal((n, c_in, size, size)).astype(np.float32)
    wt = rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32)
    u = conv.winograd.weight_transform(wt, tile=2)
    with conv.tuned(winograd_fused=False, winograd_one_region=False,
                    winograd_target_tiles=32):
        ref = np.empty((n, c_out, size, size), np.float32)
        conv.winograd.winograd_conv3x3(x, u, ref, 1, 1, 1)
    chunks = {}
    for pieces in (1, 2, 4):
        with conv.tuned(winograd_target_tiles=32, winograd_fused_pieces=pieces,
                        winograd_fused_min_tiles=1), sandbox.num_threads(threads):
            step = conv.winograd._conv_pass(n, c_in, c_out, size, size, 4, True, 2, True,
                                            conv.winograd.state())
            y = np.empty_like(ref)
            conv.winograd.winograd_conv3x3(x, u, y, 1, 1, 1)
        np.testing.assert_array_equal(y, ref)
        if step.fused:
            chunks[pieces] = step.chunks
    # 16 tiles a sample, 2 samples a chunk: 6 chunks, cut to single samples (12) where
    # fewer than `pieces` a thread
    from sandbox.runtime import simd

    if simd.current().gemm_own:
        assert chunks == {1: 6, 2: 6, 4: 12}


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_winograd_fused_forward_takes_small_maps_in_chunks_of_the_least_tiles(threads):
    """Where the split form's chunk is the whole batch (the 16x16 and 8x8 maps of a UNet
    at batch 8: 128 tiles), the fused forward runs chunks of
    ``TUNING.winograd_fused_min_tiles`` tiles (whole samples) when that gives two a
    thread, and none smaller for ``winograd_fused_pieces``; the bits are the split
    form's."""
    from sandbox.runtime import simd

    rng = np.random.default_rng(9)
    n, c_in, c_out, size = 8, 16, 24, 16
    x = rng.standard_normal((n, c_in, size, size)).astype(np.float32)
    wt = rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32)
    u = conv.winograd.weight_transform(wt, tile=4)
    with conv.tuned(winograd_fused=False, winograd_one_region=False):
        ref = np.empty((n, c_out, size, size), np.float32)
        conv.winograd.winograd_conv3x3(x, u, ref, 1, 1, 1)
    got = {}
    for least in (32, 64, 128):  # F(4x4) on 16x16: 16 tiles a sample
        with conv.tuned(winograd_fused_min_tiles=least), sandbox.num_threads(threads):
            step = conv.winograd._conv_pass(n, c_in, c_out, size, size, 4, True, 4, True,
                                            conv.winograd.state())
            y = np.empty_like(ref)
            conv.winograd.winograd_conv3x3(x, u, y, 1, 1, 1)
        np.testing.assert_array_equal(y, ref)
        got[least] = (step.fused, step.chunk, step.chunks)
    if simd.current().gemm_own:
        two_each = {1: {32: (True, 2, 4), 64: (True, 4, 2), 128: (False, 8, 1)},
                    2: {32: (True, 2, 4), 64: (False, 8, 1), 128: (False, 8, 1)},
                    3: {32: (False, 8, 1), 64: (False, 8, 1), 128: (False, 8, 1)}}
        assert got == two_each[threads]


@pytest.mark.parametrize("isa,gemm", [("avx512", "avx512"), ("avx512", "avx2"),
                                      ("avx2", "avx2")])
@pytest.mark.parametrize("n,c_in,c_out,h,w,pad", [
    (8, 16, 16, 64, 64, 1),   # F(4x4) by tile rows, exact tiles
    (5, 16, 24, 33, 70, 1),   # tile rows, partial tiles, a short last chunk
    (4, 32, 16, 31, 29, 0),   # F(4x4) gathered planes, no padding
    (6, 16, 16, 16, 16, 2),   # F(2x2), padding 2 (the input gradient's)
    (3, 17, 19, 9, 13, 1),    # odd channel counts and sizes
])
def test_winograd_fused_chunks_give_the_split_bits(isa, gemm, n, c_in, c_out, h, w, pad,
                                                   monkeypatch):
    """The forward and the weight gradient with every chunk on one thread
    (pyx/winograd/wino_fused.h) equal the split form (each chunk's steps shared among
    the threads) bit for bit, at 1-3 threads, F(2x2) and F(4x4), with a bias, with the
    AVX-512 transforms on the AVX-512 and the AVX2 GEMM and with the portable transforms
    (wino_portable.h) on the AVX2 path; the forward also in bands of tile rows.  The
    weight gradient in bands (its sums in another order) is the same for any thread
    count."""
    from sandbox.runtime import simd

    if isa not in simd.supported_paths():
        pytest.skip(f"this CPU does not run the {isa} path")
    calls, one_region = [], []
    fused_conv = conv.winograd._winograd_fused.conv

    def spy_conv(*a):
        one_region.append(a[-1])  # split, the last argument: the split form in one region
        if not a[-1]:
            calls.append(a[9])  # the fused form's band
        return fused_conv(*a)

    monkeypatch.setattr(conv.winograd._winograd_fused, "conv", spy_conv)
    wgrad_calls = _spy(monkeypatch, conv.winograd._winograd_fused, "weight_grad")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, c_in, h, w)).astype(np.float32)
    wt = rng.standard_normal((c_out, c_in, 3, 3)).astype(np.float32)
    b = rng.standard_normal(c_out).astype(np.float32)
    ho, wo = h + 2 * pad - 2, w + 2 * pad - 2
    gy = rng.standard_normal((n, c_out, ho, wo)).astype(np.float32)
    for tile in (2, 4):
        with simd.using(isa=isa, gemm=gemm) as selection:
            assert selection.winograd_avx512 == (isa == "avx512")
            u = conv.winograd.weight_transform(wt, tile=tile)
            runs = {}
            # 20 kB: the chunks become bands of tile rows of one sample; the weight
            # gradient's sums then run in another order (the same for any thread count).
            # The reference is the split form from Python (one_region off); with
            # fused off and one_region on, the split form runs in one OpenMP region.
            for fused, one, threads, cap in (
                    (False, False, 1, None), (True, True, 1, None), (True, True, 2, None),
                    (True, True, 3, None), (False, False, 2, None), (False, True, 1, None),
                    (False, True, 2, None), (False, True, 3, None), (True, True, 2, 20_000),
                    (True, True, 1, 20_000), (True, True, 3, 20_000)):
                y = np.empty((n, c_out, ho, wo), np.float32)
                knobs = {} if cap is None else {"winograd_fused_max_bytes": cap}
                with conv.tuned(winograd_fused=fused, winograd_one_region=one,
                                winograd_target_tiles=8, **knobs), \
                        sandbox.num_threads(threads):
                    conv.winograd.winograd_conv3x3(x, u, y, pad, pad, 1, b)
                    gw = conv.winograd.winograd_weight_grad(x, gy, pad, pad, 1, tile)
                    # the weight transform left to the convolution (in its own region
                    # where it runs in one): the same bits, flipped kernels too
                    y_pending = np.empty_like(y)
                    conv.winograd.winograd_conv3x3(
                        x, conv.winograd.pending_transform(wt, tile=tile), y_pending, pad,
                        pad, 1, b)
                    np.testing.assert_array_equal(y_pending, y)
                    if c_in == c_out:
                        flipped = conv.winograd.weight_transform(wt, True, tile=tile)
                        y_flip, y_flip_pending = np.empty_like(y), np.empty_like(y)
                        conv.winograd.winograd_conv3x3(x, flipped, y_flip, pad, pad, 1)
                        conv.winograd.winograd_conv3x3(
                            x, conv.winograd.pending_transform(wt, True, tile=tile),
                            y_flip_pending, pad, pad, 1)
                        np.testing.assert_array_equal(y_flip_pending, y_flip)
                runs.setdefault(cap, []).append((y, gw))
        split, banded = runs[None][0], runs[20_000][0]
        for run in runs[None][1:] + runs[20_000]:
            np.testing.assert_array_equal(run[0], split[0])  # the forward: always the same
        for run in runs[None][1:]:
            np.testing.assert_array_equal(run[1], split[1])
        for run in runs[20_000][1:]:
            np.testing.assert_array_equal(run[1], banded[1])
        np.testing.assert_allclose(banded[1], split[1], rtol=2e-5, atol=2e-5 * np.abs(
            split[1]).max())
        # bands whose partial sums would pass winograd_max_chunk_bytes: the split form
        with conv.tuned(winograd_target_tiles=8, winograd_fused_max_bytes=20_000,
                        winograd_max_chunk_bytes=1000), sandbox.num_threads(2), \
                simd.using(isa=isa, gemm=gemm):
            gw = conv.winograd.winograd_weight_grad(x, gy, pad, pad, 1, tile)
        with conv.tuned(winograd_target_tiles=8, winograd_max_chunk_bytes=1000,
                        winograd_fused=False), simd.using(isa=isa, gemm=gemm):
            np.testing.assert_array_equal(
                gw, conv.winograd.winograd_weight_grad(x, gy, pad, pad, 1, tile))
    assert calls and wgrad_calls, "the fused paths were not taken"
    assert any(calls) and not all(calls), "bands and whole samples were not both taken"
    assert any(one_region), "the split form in one region was not taken"


@pytest.mark.parametrize("xs, ws, kwargs", [
    ((2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)),
    ((2, 3, 5, 6, 4), (4, 3, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1))),
])
def test_generic_ops_dispatch_on_ndim(xs, ws, kwargs, rng):
    """conv / conv_transpose and their backward equal the rank-fixed names bitwise, and a
    plan from plan_conv gives the same results without validating again."""
    nd = len(xs) - 2
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[0])
    fixed = {2: (conv.conv2d, conv.conv2d_backward, conv.conv_transpose2d,
                 conv.conv_transpose2d_backward),
             3: (conv.conv3d, conv.conv3d_backward, conv.conv_transpose3d,
                 conv.conv_transpose3d_backward)}[nd]
    s, p, g = kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("groups", 1)
    d = kwargs.get("dilation", 1)
    y = conv.conv(x, w, b, s, p, d, g)
    np.testing.assert_array_equal(y, fixed[0](x, w, b, s, p, d, g))
    gy = rng.standard_normal(y.shape)
    for a, e in zip(conv.conv_backward(gy, x, w, s, p, d, g), fixed[1](gy, x, w, s, p, d, g),
                    strict=True):
        np.testing.assert_array_equal(a, e)
    plan = conv.plan_conv(x, w, b, s, p, d, g)
    assert plan.nd == nd and plan.out_size == y.shape[2:] and not plan.transposed
    np.testing.assert_array_equal(conv.conv(x, w, b, plan=plan), y)
    np.testing.assert_array_equal(conv.conv_backward(gy, x, w, plan=plan)[1],
                                  fixed[1](gy, x, w, s, p, d, g)[1])
    wt = rng.standard_normal((y.shape[1], xs[1] // g, *ws[2:]))
    z = conv.conv_transpose(y, wt, None, s, p, 0, g, d)
    np.testing.assert_array_equal(z, fixed[2](y, wt, None, s, p, 0, g, d))
    gz = rng.standard_normal(z.shape)
    for a, e in zip(conv.conv_transpose_backward(gz, y, wt, s, p, 0, g, d),
                    fixed[3](gz, y, wt, s, p, 0, g, d), strict=True):
        np.testing.assert_array_equal(a, e)


def test_generic_ops_name_both_layouts():
    with pytest.raises(ValueError, match=r"input must be 4-D \(N, C, H, W\) or 5-D "
                                         r"\(N, C, D, H, W\), got shape \(1, 2, 3\)"):
        conv.conv(np.zeros((1, 2, 3)), np.zeros((1, 2, 1)))
    with pytest.raises(ValueError, match=r"weight must be 5-D \(C_out, C_in/groups, kd, kh, kw\)"):
        conv.conv(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 2, 1, 1)))
    with pytest.raises(ValueError, match=r"input must be 4-D \(N, C, H, W\), got shape"):
        conv.conv2d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 2, 1, 1, 1)))


def test_small_convolutions_run_on_the_calling_thread(rng, monkeypatch):
    """Below TUNING.min_parallel_flops the chunks stay on the calling thread (the worker
    pool's overhead would cost more than the second core gains); the results are the
    pool's, bit for bit.  (4x4 maps: chunks of four samples, so no one pass, which
    chunks of one sample would take instead.)"""
    from sandbox.array import _parallel

    x = rng.standard_normal((8, 1, 4, 4)).astype(np.float32)
    w = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    gy = rng.standard_normal((8, 8, 4, 4)).astype(np.float32)
    seen = []
    real_map = _parallel.parallel_map

    def spy(fn, chunks, num_threads=None):
        seen.append(num_threads)
        return real_map(fn, chunks, num_threads)

    monkeypatch.setattr("sandbox.array.conv._im2col.parallel_map", spy)
    # the im2col loops' forward (a 1-channel 3x3 forward runs the direct kernel otherwise)
    with sandbox.num_threads(2), conv.tuned(direct_max_channels=0):
        small = (conv.conv2d(x, w, padding=1), *conv.conv2d_backward(gy, x, w, padding=1))
        with conv.tuned(min_parallel_flops=0):
            pooled = (conv.conv2d(x, w, padding=1), *conv.conv2d_backward(gy, x, w, padding=1))
    assert seen == [1, 1, None, None]  # small: both loops on this thread; pooled: the pool
    for a, b in zip(small, pooled, strict=True):
        assert np.array_equal(a, b)


def test_the_pool_threshold_follows_the_simd_path():
    """With ``min_parallel_flops`` unset, the threshold is the SIMD path's (an AVX2
    product does fewer flops in the time the pool's overhead takes); a set value wins."""
    from sandbox.array.conv._chunks import pool_threads
    from sandbox.array.conv._tuning import MIN_PARALLEL_FLOPS
    from sandbox.runtime import simd

    assert MIN_PARALLEL_FLOPS["avx2"] < MIN_PARALLEL_FLOPS["avx512"]
    between = (MIN_PARALLEL_FLOPS["avx2"] + MIN_PARALLEL_FLOPS["avx512"]) // 2
    for path in simd.supported_paths():
        with simd.using(isa=path):
            assert pool_threads(between) == (1 if path == "avx512" else None)
            assert pool_threads(MIN_PARALLEL_FLOPS[path] - 1) == 1
            with conv.tuned(min_parallel_flops=0):
                assert pool_threads(1) is None


def test_tuned_changes_only_the_calling_thread():
    import threading

    seen = {}

    def other():
        seen["other"] = conv.TUNING.winograd

    with conv.tuned(winograd=False):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert conv.TUNING.winograd is False
        with conv.tuned(target_cols=7):
            assert (conv.TUNING.winograd, conv.TUNING.target_cols) == (False, 7)
        assert conv.TUNING.target_cols == conv.ConvTuning().target_cols
    assert seen["other"] is True and conv.TUNING.winograd is True
    with pytest.raises(TypeError, match="unknown conv tuning"):
        with conv.tuned(nope=1):
            pass


def test_a_tuned_block_entered_again_keeps_its_cached_plans():
    """The same changes to the same settings give the same settings (one stamp), so a
    ``with tuned(...)`` around every step finds the plans it made the step before; a
    setting changed inside a block, or other changes, give new ones."""
    from sandbox.array.conv._tuning import settings_stamp

    def stamp(**changes):
        with conv.tuned(**changes):
            return settings_stamp()

    first = stamp(winograd_target_tiles=64)
    assert stamp(winograd_target_tiles=64) == first
    assert stamp(winograd_target_tiles=32) != first
    with conv.tuned(winograd_target_tiles=64):
        conv.TUNING.target_cols = 5  # changed in the block: no longer the same settings
    again = stamp(winograd_target_tiles=64)
    assert again != first
    with conv.tuned(winograd_target_tiles=64):
        assert conv.TUNING.target_cols == conv.ConvTuning().target_cols
    assert stamp(winograd_target_tiles=64) == again
    before = conv.winograd._conv_pass.cache_info().misses
    misses = []
    x = np.ones((2, 16, 8, 8), np.float32)
    w = np.ones((16, 16, 3, 3), np.float32)
    for _ in range(3):
        with conv.tuned(winograd_target_tiles=48):
            conv.conv2d(x, w, padding=1)
        misses.append(conv.winograd._conv_pass.cache_info().misses)
    assert misses[0] > before  # the first block planned the Winograd forward ...
    assert misses[1] == misses[2] == misses[0], "... and the others planned it again"


# ----------------------------------------------------------------------------- 3-D
# (N, C, (D, H, W), O, kernel, stride, padding, dilation, groups)
CASES_3D = [
    (2, 3, (5, 6, 7), 4, (3, 3, 3), 1, 1, 1, 1),
    (2, 4, (6, 5, 7), 6, (3, 2, 3), (1, 2, 1), (1, 0, 2), (1, 1, 2), 2),
    (1, 6, (4, 7, 5), 6, (2, 3, 2), (2, 1, 2), (0, 1, 1), (2, 1, 1), 3),
    (3, 4, (3, 4, 5), 8, (1, 1, 1), 1, 0, 1, 1),  # pointwise
    (2, 4, (5, 5, 5), 4, (1, 1, 1), 2, 1, 1, 2),  # 1x1x1 with stride and padding
    (2, 2, (3, 3, 3), 3, (4, 4, 4), 1, 2, 1, 1),  # kernel larger than the input, padded
    (9, 4, (2, 2, 3), 5, (3, 3, 3), 1, 1, 1, 1),  # several samples per chunk
]

# (N, C_in, (D, H, W), C_out, kernel, stride, padding, output_padding, groups, dilation)
TCASES_3D = [
    (2, 4, (3, 4, 3), 6, (2, 2, 2), 2, 0, 0, 1, 1),  # the UNet's upsampling
    (2, 4, (3, 4, 5), 6, (3, 2, 3), (2, 2, 1), (1, 0, 1), (1, 0, 0), 2, (1, 2, 1)),
    (1, 3, (4, 3, 3), 3, (3, 3, 3), 2, 1, 1, 3, 1),
    (2, 2, (2, 3, 2), 4, (1, 1, 1), 1, 0, 0, 1, 1),  # pointwise
    (1, 2, (3, 3, 3), 2, (2, 2, 2), 1, 0, (1, 0, 1), 1, 2),  # output_padding < dilation
]


def _ids_3d(case):
    return "-".join(str(v).replace(" ", "") for v in case)


def ref_conv3d(x, w, b, stride, padding, dilation, groups):
    """Float64 reference from the definition: a sum over kernel taps of strided slices."""
    s, p, d = triple(stride, "s", 1), triple(padding, "p", 0), triple(dilation, "d", 1)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out = [(x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), *[(pi, pi) for pi in p]))
    y = np.zeros((n, o, *out))
    og = o // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        for kz in range(k[0]):
            for ki in range(k[1]):
                for kj in range(k[2]):
                    patch = xg[:, :,
                               kz * d[0]:kz * d[0] + s[0] * (out[0] - 1) + 1:s[0],
                               ki * d[1]:ki * d[1] + s[1] * (out[1] - 1) + 1:s[1],
                               kj * d[2]:kj * d[2] + s[2] * (out[2] - 1) + 1:s[2]]
                    y[:, g * og:(g + 1) * og] += np.einsum(
                        "ncdhw,oc->nodhw", patch, w[g * og:(g + 1) * og, :, kz, ki, kj])
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y


def ref_conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation):
    """Float64 reference: scatter every tap into a padded output, then crop."""
    s, p, d = triple(stride, "s", 1), triple(padding, "p", 0), triple(dilation, "d", 1)
    op = triple(output_padding, "op", 0)
    n, c = x.shape[:2]
    og = w.shape[1]
    k = w.shape[2:]
    size = x.shape[2:]
    out = [(size[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(3)]
    full = np.zeros((n, og * groups, *[out[i] + 2 * p[i] for i in range(3)]))
    cg = c // groups
    for g in range(groups):
        for kz in range(k[0]):
            for ki in range(k[1]):
                for kj in range(k[2]):
                    full[:, g * og:(g + 1) * og,
                         kz * d[0]:kz * d[0] + s[0] * (size[0] - 1) + 1:s[0],
                         ki * d[1]:ki * d[1] + s[1] * (size[1] - 1) + 1:s[1],
                         kj * d[2]:kj * d[2] + s[2] * (size[2] - 1) + 1:s[2]] += np.einsum(
                        "ncdhw,co->nodhw", x[:, g * cg:(g + 1) * cg],
                        w[g * cg:(g + 1) * cg, :, kz, ki, kj])
    y = full[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1], p[2]:p[2] + out[2]]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1, 1)
    return y


def _data_3d(case, dtype, rng):
    n, c, size, o, k, s, p, d, g = case
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = rng.standard_normal((o, c // g, *k)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, w, b, s, p, d, g


def _tdata_3d(case, dtype, rng):
    n, c, size, o, k, s, p, op, g, d = case
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = rng.standard_normal((c, o // g, *k)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, w, b, s, p, op, g, d


def _vjp(fn, args, gy, eps_args):
    """Reference gradients of <fn(args), gy> by the linearity of fn in each of ``eps_args``."""
    grads = []
    for i in eps_args:
        arr = args[i]
        flat = np.zeros(arr.size)
        for j in range(arr.size):
            e = np.zeros(arr.size)
            e[j] = 1.0
            probe = list(args)
            probe[i] = e.reshape(arr.shape)
            if len(probe) > 2:
                probe[2] = None  # bias does not depend on x or w
            flat[j] = np.sum(fn(*probe) * gy)
        grads.append(flat.reshape(arr.shape))
    return grads


@pytest.mark.parametrize("case", CASES_3D[:3] + CASES_3D[4:5], ids=_ids_3d)
def test_conv3d_backward_matches_reference(case, rng):
    x, w, b, s, p, d, g = _data_3d(case, np.float64, rng)
    x, w = x[:1, :, :4, :4, :4].copy(), w  # keep the probe loops small
    y = conv.conv3d(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y.shape)
    gx, gw, gb = conv.conv3d_backward(gy, x, w, s, p, d, g)

    def fn(xx, ww, _b):
        return ref_conv3d(xx, ww, None, s, p, d, g)

    rx, rw = _vjp(fn, [x, w, None], gy, (0, 1))
    np.testing.assert_allclose(gx, rx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gw, rw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gb, gy.sum(axis=(0, 2, 3, 4)), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", TCASES_3D, ids=_ids_3d)
def test_conv_transpose3d_matches_reference(case, dtype, rng):
    x, w, b, s, p, op, g, d = _tdata_3d(case, dtype, rng)
    y = conv.conv_transpose3d(x, w, b, s, p, op, g, d)
    ref = ref_conv_transpose3d(x, w, b, s, p, op, g, d)
    assert y.dtype == dtype and y.shape == ref.shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol)
    assert y.shape[2:] == conv.conv_transpose3d_output_size(x.shape[2:], w.shape[2:], s, p, op, d)


@pytest.mark.parametrize("case", TCASES_3D, ids=_ids_3d)
def test_conv_transpose3d_is_the_adjoint(case, rng):
    """<conv_transpose3d(x), y> = <x, conv3d(y)> and the backward of each is the other."""
    x, w, _, s, p, op, g, d = _tdata_3d(case, np.float64, rng)
    yt = conv.conv_transpose3d(x, w, None, s, p, op, g, d)
    gy = rng.standard_normal(yt.shape)
    gx, gw, gb = conv.conv_transpose3d_backward(gy, x, w, s, p, op, g, d)
    cx = conv.conv3d(gy, w, None, s, p, d, g)[:, :, :x.shape[2], :x.shape[3], :x.shape[4]]
    np.testing.assert_allclose(gx, cx, rtol=1e-12, atol=1e-12)
    assert np.sum(yt * gy) == pytest.approx(np.sum(x * gx), rel=1e-12)
    # the weight gradient of the transposed conv is the weight gradient of the conv,
    # with the roles of input and output gradient swapped
    # (x zero-padded where output_padding >= stride leaves planes no input reaches)
    full = conv.conv3d_output_size(gy.shape[2:], w.shape[2:], s, p, d)
    xpad = np.pad(x, ((0, 0), (0, 0), *[(0, full[i] - x.shape[2 + i]) for i in range(3)]))
    _, cw, _ = conv.conv3d_backward(xpad, gy, w, s, p, d, g, needs=(False, True, False))
    np.testing.assert_allclose(gw, cw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, gy.sum(axis=(0, 2, 3, 4)), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vol2col_kernels_bitwise_equal_across_thread_counts(dtype, rng):
    x = rng.standard_normal((3, 4, 6, 7, 5)).astype(dtype)
    geom = (3, 2, 2, 2, 1, 1, 1, 1, 0, 1, 1, 2)
    do, ho, wo = conv.conv3d_output_size(x.shape[2:], (3, 2, 2), (2, 1, 1), (1, 1, 0), (1, 1, 2))
    cols, folds = [], []
    for nt in (1, 2, 3):
        col = np.empty((4 * 12, 2 * do * ho * wo), dtype=dtype)
        kernels.vol2col(x, col, 1, 2, 0, do, *geom, ho, wo, nt)
        cols.append(col)
        back = np.full(x.shape, np.nan, dtype=dtype)
        kernels.col2vol(col, back, 1, 2, 0, do, *geom, ho, wo, True, nt)
        folds.append(back[1:])
    for other in cols[1:]:
        assert np.array_equal(cols[0], other)
    for other in folds[1:]:
        assert np.array_equal(folds[0], other)
    assert not np.isnan(folds[0]).any()


def test_slabs_of_depth_planes_match_whole_samples(rng, monkeypatch):
    """Columns of one sample above TUNING.max_slab_bytes are built in slabs of output planes."""
    x, w, b, s, p, d, g = _data_3d(CASES_3D[1], np.float64, rng)
    y0 = conv.conv3d(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y0.shape)
    whole = (y0, *conv.conv3d_backward(gy, x, w, s, p, d, g),
             conv.conv_transpose3d(gy, w, None, s, p, 0, g, d))
    plane = (x.shape[1] * 18) * y0.shape[3] * y0.shape[4] * 8  # bytes of one plane's columns
    monkeypatch.setattr(conv.TUNING, "max_slab_bytes", 4 * plane)  # slabs of 4 and 2 planes
    assert loops._plan(2, y0.shape[2:], x.shape[1] * 18, 8, False) == (1, 4)
    assert y0.shape[2] == 6
    slabbed = (conv.conv3d(x, w, b, s, p, d, g), *conv.conv3d_backward(gy, x, w, s, p, d, g),
               conv.conv_transpose3d(gy, w, None, s, p, 0, g, d))
    for u, v in zip(whole, slabbed, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(slabbed[0], ref_conv3d(x, w, b, s, p, d, g), rtol=1e-12,
                               atol=1e-12)


def _leaves(rng, *shapes):
    return tuple(sandbox.Tensor(rng.standard_normal(s), requires_grad=True) for s in shapes)


def test_gradcheck_conv3d(rng):
    args = _leaves(rng, (2, 4, 4, 3, 5), (2, 2, 2, 3, 2), (2,))
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 1, 0), (1, 1, 2), 2), args)


def test_gradcheck_conv_transpose3d(rng):
    args = _leaves(rng, (1, 2, 2, 3, 2), (2, 3, 2, 2, 3), (3,))
    assert gradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, 2, (0, 1, 1), (1, 0, 1), 1, (1, 1, 2)), args)


def test_gradgradcheck_conv3d(rng):
    args = _leaves(rng, (1, 2, 3, 4, 3), (2, 1, 2, 3, 2), (2,))
    assert gradgradcheck(lambda x, w, b: F.conv3d(x, w, b, (1, 2, 1), 1, 1, 2), args)


def test_gradgradcheck_conv_transpose3d(rng):
    args = _leaves(rng, (1, 2, 2, 2, 3), (2, 2, 2, 2, 2), (4,))
    assert gradgradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, 2, (1, 0, 0), (1, 1, 0), 2, 1), args)


def test_second_derivative_matches_torch(rng, torch):
    """Gradient of |d loss / dx|^2 with respect to the weight, against torch (float64)."""
    x, w = rng.standard_normal((1, 2, 4, 3, 4)), rng.standard_normal((2, 2, 3, 2, 3))
    results = []
    for lib, make, grad in (
        (F, lambda a: sandbox.Tensor(a, requires_grad=True), sandbox.autograd.grad),
        (torch.nn.functional, lambda a: torch.tensor(a, requires_grad=True), torch.autograd.grad),
    ):
        tx, tw = make(x), make(w)
        y = lib.conv3d(tx, tw, None, (2, 1, 1), 1)
        y = lib.conv_transpose3d(lib.tanh(y), tw, None, (2, 1, 1), 1)
        (gx,) = grad((y * y).sum(), [tx], create_graph=True)
        (gw,) = grad((gx * gx).sum(), [tw])
        results.append(gw.numpy() if isinstance(gw, sandbox.Tensor) else gw.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-10)


def test_plain_backward_calls_the_array_kernels(rng, monkeypatch):
    calls = []
    real = conv.conv_backward
    monkeypatch.setattr(conv, "conv_backward", lambda *a, **k: calls.append(1) or real(*a, **k))
    sx, sw = _leaves(rng, (1, 2, 3, 3, 3), (2, 2, 2, 2, 2))
    F.conv3d(sx, sw).sum().backward()
    assert calls and sx.grad is not None


@pytest.mark.parametrize(
    "make, exc, match",
    [
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3)), np.zeros((1, 2, 1, 1, 1))),
         ValueError, r"input must be 5-D \(N, C, D, H, W\)"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 2, 1, 1))),
         ValueError, "weight must be 5-D"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3), np.int64), np.zeros((1, 2, 1, 1, 1))),
         TypeError, "input must have dtype float32 or float64"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 2, 1, 1, 1), np.float32)),
         TypeError, "weight dtype float32 does not match input dtype float64"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 3, 1, 1, 1))),
         ValueError, "expects 3 input channels"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((1, 1, 1, 1, 1)), groups=2),
         ValueError, "groups=2 must divide the output channels"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), groups=0),
         ValueError, "groups must be a positive int"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), stride=(1, 2)),
         TypeError, "stride must be an int or a triple of ints"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), stride=0),
         ValueError, "stride must be positive"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)), padding=-1),
         ValueError, "padding must be non-negative"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 5, 1, 1))),
         ValueError, "output size .* is not positive"),
        (lambda: conv.conv3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 1, 1, 1)),
                             np.zeros(3)),
         ValueError, r"bias must have shape \(2,\)"),
        (lambda: conv.conv_transpose3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((3, 2, 1, 1, 1))),
         ValueError, "expects 3 input channels"),
        (lambda: conv.conv_transpose3d(np.zeros((1, 2, 3, 3, 3)), np.zeros((2, 2, 2, 2, 2)),
                                       stride=2, output_padding=2),
         ValueError, "output_padding .* must be smaller than either stride"),
        (lambda: conv.conv3d_backward(np.zeros((1, 2, 2, 2, 2)), np.zeros((1, 2, 3, 3, 3)),
                                      np.zeros((2, 2, 1, 1, 1))),
         ValueError, r"grad_output must have shape \(1, 2, 3, 3, 3\)"),
        (lambda: F.conv3d(np.zeros((1, 2, 3, 3, 3)), sandbox.Tensor(np.zeros((2, 2, 1, 1, 1)))),
         TypeError, "input must be a sandbox.Tensor"),
    ],
)
def test_conv3d_validation(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("op", ["conv3d", "conv_transpose3d"])
def test_plain_and_create_graph_backward_agree_and_take_strided_gradients(op, rng):
    """The first gradient is the same whether the backward runs the kernels (plain) or
    the differentiable Functions (create_graph), and for a non-contiguous incoming gradient."""
    sx, sw, sb = _leaves(rng, (2, 2, 3, 4, 3), (2, 2, 2, 3, 2), (2,))

    def fn():
        if op == "conv3d":
            return F.conv3d(sx, sw, sb, (1, 2, 1), 1, (2, 1, 1))
        return F.conv_transpose3d(sx, sw, sb, 2, (1, 0, 1), (1, 1, 0), 1, 1)

    y = fn()
    r = rng.standard_normal(y.shape[::-1])
    plain = sandbox.autograd.grad((fn() * sandbox.Tensor(np.ascontiguousarray(r.T))).sum(),
                                  [sx, sw, sb])
    strided = sandbox.autograd.grad((y.permute(4, 3, 2, 1, 0) * sandbox.Tensor(r)).sum(),
                                    [sx, sw, sb])
    graph = sandbox.autograd.grad((fn() * sandbox.Tensor(r.T)).sum(), [sx, sw, sb],
                                  create_graph=True)
    for a, b, c in zip(plain, strided, graph, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


def test_tuned_reaches_the_3d_slab_limit(rng):
    """The 3-D column limit is a field of ConvTuning, so ``tuned()`` changes the plan."""
    rows, out = 16 * 27, (8, 16, 16)
    plane = rows * 16 * 16 * 4
    assert loops._plan(2, out, rows, 4, False) == (1, 8)  # 8 MiB: a whole sample
    with conv.tuned(max_slab_bytes=3 * plane):
        assert conv.TUNING.max_slab_bytes == 3 * plane
        assert loops._plan(2, out, rows, 4, False) == (1, 3)
    assert conv.TUNING.max_slab_bytes == 8 * 2**20


# ------------------------------------------------------------ Winograd 3x3x3 (3-D)
# 3x3x3 convolutions by 2-D Winograd summed over depth (``sandbox.array.conv._winograd3d``).
#
# Compared with the vol2col + GEMM path (float64, where both are exact to rounding)
# and in float32 within the Winograd tolerance, for every padding the path accepts,
# both tile sizes, forward, input and weight gradients and bias; results must not
# depend on the thread count.

WINOGRAD3D_FORCE = dict(winograd_min_channels=1, winograd_min_channels_weight_grad=1,
                        winograd_min_pixels=1, winograd_min_batch_pixels=1,
                        winograd3d_min_batch_voxels=1,
                        winograd3d_min_batch_voxels_input_grad=1,
                        winograd_min_pixels_input_grad=1,
                        winograd_min_pixels_weight_grad=1)


def _winograd3d_data(rng, n, c, o, size, dtype):
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = (rng.standard_normal((o, c, 3, 3, 3)) / np.sqrt(27 * c)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    return x, w, b


def _winograd3d_run(x, w, b, pad):
    y = conv.conv3d(x, w, b, 1, pad)
    gy = np.random.default_rng(7).standard_normal(y.shape).astype(x.dtype)
    return (y, *conv.conv3d_backward(gy, x, w, 1, pad))


@pytest.mark.parametrize("f4", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pad,size", [
    ((1, 1, 1), (5, 6, 7)),
    ((0, 0, 0), (4, 5, 6)),
    ((2, 1, 0), (3, 7, 5)),
    ((1, 2, 2), (1, 4, 4)),   # one plane: only the centre depth tap
    ((0, 1, 2), (9, 3, 9)),
])
def test_winograd3d_matches_vol2col(pad, size, dtype, f4, rng, monkeypatch, transforms):
    calls = []
    for name in ("conv3x3x3", "conv3x3x3_weight_grad"):
        original = getattr(_winograd3d, name)
        monkeypatch.setattr(_winograd3d, name,
                            lambda *a, _f=original, **k: calls.append(1) or _f(*a, **k))
    x, w, b = _winograd3d_data(rng, 2, 3, 4, size, dtype)
    with conv.tuned(**WINOGRAD3D_FORCE, winograd_f4_min_pixels=f4,
                    winograd_f4_min_pixels_weight_grad=f4, winograd_target_tiles=8):
        got = _winograd3d_run(x, w, b, pad)
    assert len(calls) == 3, "the Winograd path was not taken for forward, dx and dw"
    with conv.tuned(winograd=False):
        want = _winograd3d_run(*(a.astype(np.float64) for a in (x, w, b)), pad)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    for g, e in zip(got, want, strict=True):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, e, **tol)


def test_winograd3d_takes_the_unet_layer_shapes_by_default(rng, monkeypatch):
    calls = []
    original = _winograd3d.conv3x3x3
    monkeypatch.setattr(_winograd3d, "conv3x3x3",
                        lambda *a, **k: calls.append(1) or original(*a, **k))
    x, w, b = _winograd3d_data(rng, 1, 16, 16, (8, 8, 8), np.float32)
    conv.conv3d(x, w, b, 1, 1)
    assert calls
    x, w, b = _winograd3d_data(rng, 1, 4, 16, (8, 8, 8), np.float32)
    conv.conv3d(x, w, b, 1, 1)  # 4 input channels: vol2col
    assert len(calls) == 1


def test_winograd3d_bitwise_equal_across_thread_counts(rng):
    """The same bits at 1-3 threads, with the slabs on the worker pool
    (``split_in_kernels=False``) and with their steps shared in the kernels; the forward
    and input gradient the same bits either way (their slabs do not change them)."""
    x, w, b = _winograd3d_data(rng, 3, 16, 16, (6, 10, 10), np.float32)
    results = {}
    for split in (False, True):
        with conv.tuned(winograd_target_tiles=16, winograd3d_split_tiles=64,
                        split_in_kernels=split):
            for nt in (1, 2, 3):
                with sandbox.num_threads(nt):
                    results[split, nt] = _winograd3d_run(x, w, b, (1, 1, 1))
    for (split, _), got in results.items():
        for a, c in zip(results[split, 1], got, strict=True):
            assert np.array_equal(a, c)
    y, gx = results[True, 2][:2], results[False, 2][:2]
    assert all(np.array_equal(a, c) for a, c in zip(y, gx, strict=True))


#: the SIMD paths whose GEMM is the project's (the 3-D one-region kernels' products)
_OWN_GEMM_PATHS = [p for p in ("avx512", "avx2") if p in simd.supported_paths()]


@pytest.mark.skipif(not _OWN_GEMM_PATHS, reason="no SIMD path with the project's GEMM here")
@pytest.mark.parametrize("path", _OWN_GEMM_PATHS)
@pytest.mark.parametrize("n,c,o,size,pad,f4", [
    (2, 16, 16, (9, 10, 11), (1, 1, 1), 0),
    (2, 16, 24, (8, 8, 8), (1, 1, 1), 1),
    (1, 8, 16, (5, 6, 7), (2, 1, 0), 0),
    (2, 16, 8, (1, 4, 4), (1, 2, 2), 1),   # one plane: only the centre depth tap
    (1, 24, 16, (7, 5, 9), (0, 1, 2), 1),
])
def test_winograd3d_in_one_region_gives_the_split_form_bits(path, n, c, o, size, pad, f4, rng,
                                                            monkeypatch):
    """The 3-D split form's slabs in one OpenMP region (``_winograd_fused.conv3d`` and
    ``weight_grad3d``, taken: checked) give the bits of its kernel calls from Python
    (``winograd_one_region=False``): forward with a bias, input and weight gradients, at
    1-3 threads, slabs of a few planes (several slabs a sample, the depth terms cut at the
    volume's faces), both tile sizes, on each path with the project's GEMM."""
    from sandbox.array.conv import _winograd as w2d

    taken = []

    def spy(name):
        real = getattr(w2d._winograd_fused, name)
        return lambda *a: taken.append(name) or real(*a)

    for name in ("conv3d", "weight_grad3d"):
        monkeypatch.setattr(w2d._winograd_fused, name, spy(name))
    x, w, b = _winograd3d_data(rng, n, c, o, size, np.float32)
    force = dict(WINOGRAD3D_FORCE, winograd_f4_min_pixels=f4,
                 winograd_f4_min_pixels_weight_grad=f4, winograd3d_split_tiles=40)
    runs = {}
    with simd.using(isa=path):
        for one_region in (True, False):
            for nt in (1, 2, 3):
                with conv.tuned(**force, winograd_one_region=one_region), \
                        sandbox.num_threads(nt):
                    runs[one_region, nt] = _winograd3d_run(x, w, b, pad)
    assert taken.count("conv3d") == 6 and taken.count("weight_grad3d") == 3
    want = runs[False, 1]
    for got in runs.values():
        for a, e in zip(got, want, strict=True):
            assert a.tobytes() == e.tobytes()


def test_winograd3d_region_picks_products_as_matmul_does():
    """The weight gradient's region gives a product the dot-product or the packed kernel
    by its own copy of ``product_form``'s rule: the same choice for every shape."""
    from sandbox._C import _winograd_fused
    from sandbox.array._gemm import product_form

    sizes = (8, 16, 24, 48, 64, 96, 128, 192, 200, 256, 512)
    for m in sizes:
        for n in sizes:
            for k in (8, 16, 31, 32, 64, 100, 128, 255, 256, 384, 512, 1024):
                assert _winograd_fused.dot_form3d(m, n, k) == (
                    product_form(m, n, k, True) == "dot"), (m, n, k)



@pytest.mark.parametrize("flip", [False, True])
@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd3d_transforms_read_the_depth_taps_in_place(flip, tile, dtype, rng):
    """weight_transforms hands the transforms views of the 3x3x3 weight's depth taps (no
    copies), and a tap's transform read in place has the bits of its contiguous copy's;
    a weight whose kernels are not evenly spaced is copied first."""
    from sandbox.array.conv import _winograd

    w = rng.standard_normal((5, 3, 3, 3, 3)).astype(dtype)
    for kz, pending in enumerate(_winograd3d.weight_transforms(w, flip, tile)):
        tap = w[:, :, 2 - kz if flip else kz]
        assert np.shares_memory(pending.weight, w)
        got = pending.run(2).copy()
        want = _winograd.weight_transform(np.ascontiguousarray(tap), flip, 1, tile)
        np.testing.assert_array_equal(got, want)
    odd = w[:, :, 0, :, :][::-1]  # rows run backwards: not the transform's layout
    assert not np.shares_memory(_winograd.pending_transform(odd).weight, w)


def test_winograd3d_weight_gradient_laid_out_in_the_region(rng):
    """The region's weight gradient comes back in the weight's layout (O, C, 3, 3, 3),
    C-contiguous, with the values of the split form's folds."""
    x = rng.standard_normal((2, 8, 6, 8, 8)).astype(np.float32)
    g = rng.standard_normal((2, 16, 6, 8, 8)).astype(np.float32)
    with conv.tuned(winograd_one_region=True):
        region = _winograd3d.conv3x3x3_weight_grad(x, g, (1, 1, 1))
    with conv.tuned(winograd_one_region=False):
        split = _winograd3d.conv3x3x3_weight_grad(x, g, (1, 1, 1))
    assert region.shape == (16, 8, 3, 3, 3) and region.flags.c_contiguous
    np.testing.assert_array_equal(region, split)

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_winograd3d_slab_copies_on_threads_match_numpy(dtype, rng):
    """The split form's slab copies on several threads (``copy_blocks``) give numpy's
    transposed copies: a slab of input planes in, a slab of output planes out."""
    x = rng.standard_normal((2, 3, 7, 4, 5)).astype(dtype)
    got = _winograd3d._input_planes(x, 1, 2, 6, "test_w3_x", threads=2).copy()
    np.testing.assert_array_equal(got, x[1, :, 2:6].transpose(1, 0, 2, 3))
    out = rng.standard_normal((4, 3, 4, 5)).astype(dtype)
    y, want = np.zeros_like(x), np.zeros_like(x)
    _winograd3d._output_planes(out, y, 1, 3, threads=2)
    want[1, :, 3:7] = out.transpose(1, 0, 2, 3)
    np.testing.assert_array_equal(y, want)


def test_winograd3d_slabs_follow_the_shapes_not_the_threads():
    """Float32 on the project's GEMM: slabs of ``winograd3d_split_tiles`` tiles, their
    steps on every thread; float64, or ``split_in_kernels`` off: slabs of
    ``winograd_target_tiles`` on the worker pool.  The slabs are the same at any count."""
    own = simd.current().gemm_own
    plans = {}
    for nt in (1, 2):
        with sandbox.num_threads(nt):
            plans[nt] = _winograd3d._plan(2, 32, 64, 32, 36, np.float32)
            assert plans[nt][1:3] == ((nt, True) if own else (1, False))
            assert _winograd3d._plan(2, 32, 64, 32, 36, np.float64)[1:3] == (1, False)
            with conv.tuned(split_in_kernels=False):
                assert _winograd3d._plan(2, 32, 64, 32, 36, np.float32)[1:3] == (1, False)
    assert plans[1][0] == plans[2][0]
    # the region's table of the slabs: (sample, first plane, planes), cached read-only
    np.testing.assert_array_equal(plans[2][3], [c[1:] for c in plans[2][0]])
    assert plans[2][3].dtype == np.intc and not plans[2][3].flags.writeable
    if own:  # 1024 tiles: 16 planes of 64 tiles a slab, 2 slabs a sample
        assert [c[3] for c in plans[1][0]] == [16] * 4


# ------------------------------------------------------------------ both ranks (spatial_dims)


def _forward_cases(cases_2d, cases_3d):
    return [*[pytest.param(2, c, id=f"2d-{_ids(c)}") for c in cases_2d],
            *[pytest.param(3, c, id=f"3d-{_ids_3d(c)}") for c in cases_3d]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial_dims, case", _forward_cases(CASES, CASES_3D))
def test_conv_matches_reference(spatial_dims, case, dtype, rng):
    if spatial_dims == 2:
        x, w, b, s, p, d, g = _data(case, dtype, rng)
        y = conv.conv2d(x, w, b, s, p, d, g)
        ref = ref_conv2d(x.astype(float), w.astype(float), b, s, p, d, g)
        tol = _tol(dtype)
    else:
        x, w, b, s, p, d, g = _data_3d(case, dtype, rng)
        y = conv.conv3d(x, w, b, s, p, d, g)
        ref = ref_conv3d(x, w, b, s, p, d, g)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    assert y.dtype == dtype and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, **tol)
    if spatial_dims == 3:
        assert y.shape[2:] == conv.conv3d_output_size(x.shape[2:], w.shape[2:], s, p, d)


#: (spatial_dims, case, TUNING.target_cols, TUNING.max_slab_bytes or None to leave it)
BITWISE_CASES = [
    *[pytest.param(2, case, target, None, id=f"2d-{_ids(case)}-t{target}")
      for case in (CASES[1], CASES[3], CASES[6]) for target in (1, 64)],
    # 3-D: one sample per chunk or all in one; whole samples or slabs of planes
    *[pytest.param(3, case, target, max_bytes, id=f"3d-{_ids_3d(case)}-t{target}-b{max_bytes}")
      for case in (CASES_3D[1], CASES_3D[6]) for target in (64, 100_000)
      for max_bytes in (2**25, 3000)],
]


@pytest.mark.parametrize("spatial_dims, case, target, max_bytes", BITWISE_CASES)
def test_ops_bitwise_equal_across_thread_counts(spatial_dims, case, target, max_bytes, rng,
                                                monkeypatch):
    """Chunks are fixed by the shapes; weight/bias partials are summed in chunk order."""
    monkeypatch.setattr(conv.TUNING, "target_cols", target)
    monkeypatch.setattr(conv.TUNING, "min_parallel_flops", 0)  # these small convs on the pool
    if max_bytes is not None:
        monkeypatch.setattr(conv.TUNING, "max_slab_bytes", max_bytes)
    nd = spatial_dims
    forward, backward = getattr(conv, f"conv{nd}d"), getattr(conv, f"conv{nd}d_backward")
    transpose = getattr(conv, f"conv_transpose{nd}d")
    transpose_backward = getattr(conv, f"conv_transpose{nd}d_backward")
    x, w, b, s, p, d, g = (_data if nd == 2 else _data_3d)(case, np.float32, rng)
    y0 = forward(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y0.shape).astype(np.float32)
    bt = rng.standard_normal(x.shape[1]).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        monkeypatch.setattr(conv.TUNING, "kernel_threads", nt)
        with sandbox.num_threads(nt):
            y = forward(x, w, b, s, p, d, g)
            grads = backward(gy, x, w, s, p, d, g)
            yt = transpose(gy, w, bt, s, p, 0, g, d)
            tgrads = transpose_backward(np.cos(yt), gy, w, s, p, 0, g, d)
        results.append((y, *grads, yt, *tgrads))
    for other in results[1:]:
        for u, v in zip(results[0], other, strict=True):
            assert np.array_equal(u, v)
    ref = (ref_conv2d(x.astype(float), w.astype(float), b, s, p, d, g) if nd == 2
           else ref_conv3d(x, w, b, s, p, d, g))
    np.testing.assert_allclose(results[0][0], ref, rtol=1e-4, atol=1e-4)


#: (spatial_dims, case, transposed): the 3-D transposed cases have their own layout
PARITY_CASES = [
    *[pytest.param(2, case, transposed, id=f"2d-{_ids(case)}-{'t' if transposed else 'c'}")
      for case in (CASES[0], CASES[1], CASES[2], CASES[3], CASES[6])
      for transposed in (False, True)],
    *[pytest.param(3, case, False, id=f"3d-{_ids_3d(case)}-c") for case in CASES_3D],
    *[pytest.param(3, case, True, id=f"3d-{_ids_3d(case)}-t") for case in TCASES_3D],
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spatial_dims, case, transposed", PARITY_CASES)
def test_torch_parity(spatial_dims, case, transposed, dtype, rng, torch):
    nd = spatial_dims
    if nd == 2:
        x, w, b, s, p, d, g = _data(case, dtype, rng, transposed=transposed)
        op = tuple(1 if si > 1 else 0 for si in pair(s, "s", 1))
        tol = _tol(dtype)
    elif transposed:
        x, w, b, s, p, op, g, d = _tdata_3d(case, dtype, rng)
    else:
        x, w, b, s, p, d, g = _data_3d(case, dtype, rng)
    if nd == 3:
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    sx, sw_, sb = (sandbox.Tensor(a, requires_grad=True) for a in (x, w, b))
    if transposed:
        name = f"conv_transpose{nd}d"
        ty = getattr(torch.nn.functional, name)(tx, tw, tb, s, p, op, g, d)
        sy = getattr(F, name)(sx, sw_, sb, s, p, op, g, d)
    else:
        ty = getattr(torch.nn.functional, f"conv{nd}d")(tx, tw, tb, s, p, d, g)
        sy = getattr(F, f"conv{nd}d")(sx, sw_, sb, s, p, d, g)
    gy = rng.standard_normal(ty.shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    for st, tt in ((sx, tx), (sw_, tw), (sb, tb)):
        assert st.grad.numpy().dtype == dtype
        np.testing.assert_allclose(st.grad.numpy(), tt.grad.numpy(), **tol)


def test_plan_cache_repeats_the_checks_of_a_new_request():
    """A repeated request gets the cached plan; one that differs only in an option's type
    (True for 1, a list for a tuple) or in the bias is checked again."""
    from sandbox.array.conv._checks import plan_conv

    x = np.zeros((1, 2, 5, 5), np.float32)
    w = np.zeros((3, 2, 3, 3), np.float32)
    first = plan_conv(x, w, None, 1, 1, 1, 1, nd=2)
    assert plan_conv(x, w, None, 1, 1, 1, 1, nd=2) is first
    with pytest.raises(TypeError, match="padding"):
        plan_conv(x, w, None, 1, True, 1, 1, nd=2)
    with pytest.raises(TypeError, match="padding"):
        plan_conv(x, w, None, 1, (1, True), 1, 1, nd=2)
    assert plan_conv(x, w, None, 1, [1, 1], 1, 1, nd=2) == first  # checked, not cached
    with pytest.raises(ValueError, match="bias"):
        plan_conv(x, w, np.zeros(2, np.float32), 1, 1, 1, 1, nd=2)
    with pytest.raises(TypeError, match="bias"):
        plan_conv(x, w, np.zeros(3, np.float64), 1, 1, 1, 1, nd=2)
    assert plan_conv(x, w, np.zeros(3, np.float32), 1, 1, 1, 1, nd=2) == first


def _thread_runs_match_torch(x, w, torch):
    """A padding-1 convolution of ``x`` by ``w`` (2-D or 3-D by rank), forward, input and
    weight gradients: the same bits at 1-3 threads, and torch's values."""
    nd = x.ndim - 2
    g = np.random.default_rng(11).standard_normal(
        (x.shape[0], w.shape[0], *x.shape[2:])).astype(x.dtype)
    runs = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            runs.append((conv.conv(x, w, padding=1, nd=nd),
                         *conv.conv_backward(g, x, w, padding=1, needs=(True, True, False),
                                             nd=nd)[:2]))
    for run in runs[1:]:
        for a, b in zip(run, runs[0], strict=True):
            np.testing.assert_array_equal(a, b)
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    ty = getattr(torch.nn.functional, f"conv{nd}d")(tx, tw, padding=1)
    ty.backward(torch.tensor(g))
    for ours, ref in zip(runs[0], (ty.detach(), tx.grad, tw.grad), strict=True):
        ref = ref.numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("n,c,o,s,winograd", [
    (1, 32, 64, 4, False),    # 16 pixels in all: im2col, the weight not transposed
    (2, 32, 32, 4, False),    # 32
    (1, 256, 256, 4, False),  # a batch-1 UNet's 4x4 level: products cut into row blocks
    (2, 128, 256, 4, False),  # batch 2: one product a sample
    (4, 32, 32, 4, True),     # 64: Winograd
    (1, 32, 32, 8, True),     # 64
    (8, 32, 32, 4, True),     # the classic UNet's 4x4 level at batch 8
])
def test_small_batches_of_small_maps_take_im2col(n, c, o, s, winograd, rng, torch, monkeypatch):
    """A 2-D convolution with fewer than TUNING.winograd_min_batch_pixels output pixels
    over the batch runs im2col (forward and both gradients); its forward then leaves the
    weight in place (no lhs copy under LHS_MIN_COLUMNS) and its narrow products take
    the project's dot form (shared among threads), not BLAS (one thread), wherever a
    project kernel is in use.  Values against torch, the same bits for any thread count."""
    from sandbox.array import _gemm
    from sandbox.array.conv import _chunks

    wino = _spy(monkeypatch, conv.winograd, "winograd_conv3x3")  # either form's entry
    copies = _spy(monkeypatch, _chunks, "lhs")
    blas = _spy(monkeypatch, _gemm.np, "matmul")
    x = rng.standard_normal((n, c, s, s)).astype(np.float32)
    w = (rng.standard_normal((o, c, 3, 3)) / 10).astype(np.float32)
    _thread_runs_match_torch(x, w, torch)
    assert bool(wino) == winograd
    assert not copies  # im2col's forward copies the weight only from 512 columns
    if _gemm.backend() != "blas":  # BLAS's own path (portable) takes every product there
        assert not blas


def test_a_single_large_product_is_cut_into_product_blocks(rng):
    """_product_blocks: one product of 2M multiply-adds or more whose rows a PRODUCT_BLOCK divides
    becomes whole blocks of rows (views of a and out, b broadcast), at most MAX_PRODUCT_BLOCKS
    of them; batches of products, small products and rows the block does not divide stay
    as they are.  sample_products gives the same values either way."""
    from sandbox.array.conv import _chunks

    a = rng.standard_normal((1, 2304, 256)).astype(np.float32)
    b = rng.standard_normal((1, 256, 16)).astype(np.float32)
    out = np.empty((1, 2304, 16), np.float32)
    a2, b2, out2 = _chunks._product_blocks(a, b, out)
    assert a2.shape == (6, 384, 256) and b2.shape == (6, 256, 16) and out2.shape == (6, 384, 16)
    assert np.shares_memory(a2, a) and np.shares_memory(out2, out) and b2.strides[0] == 0
    _chunks.sample_products(a, b, out)
    np.testing.assert_allclose(out[0], a[0].astype(np.float64) @ b[0], rtol=1e-4, atol=1e-3)
    assert _chunks._product_blocks(a[:, :2300], b, out[:, :2300])[0].shape == (1, 2300, 256)
    two = np.concatenate([a, a])
    pair = (np.concatenate([b, b]), np.concatenate([out, out]))
    assert _chunks._product_blocks(two, *pair)[0] is two
    # a strided output (every other column) is cut into views all the same
    wide = np.empty((1, 2304, 32), np.float32)[:, :, ::2]
    cut = _chunks._product_blocks(a, b, wide)[2]
    assert cut.shape == (6, 384, 16) and np.shares_memory(cut, wide)
    _chunks.sample_products(a, b, wide)
    np.testing.assert_allclose(wide[0], a[0].astype(np.float64) @ b[0], rtol=1e-4, atol=1e-3)
    small = a[:, :128, :64]
    assert _chunks._product_blocks(small, b[:, :64], out[:, :128])[0] is small
    # a weight gradient's shape: more columns than rows, cut into blocks of columns
    g = rng.standard_normal((1, 256, 16)).astype(np.float32)
    cols = rng.standard_normal((1, 16, 2304)).astype(np.float32)
    gw = np.empty((1, 256, 2304), np.float32)
    a3, b3, out3 = _chunks._product_blocks(g, cols, gw)
    assert a3.shape == (6, 256, 16) and b3.shape == (6, 16, 384) and out3.shape == (6, 256, 384)
    assert a3.strides[0] == 0 and np.shares_memory(b3, cols) and np.shares_memory(out3, gw)
    _chunks.sample_products(g, cols, gw)
    np.testing.assert_allclose(gw[0], g[0].astype(np.float64) @ cols[0], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("n,size,winograd,channels", [
    (1, 4, False, 16),   # 64 voxels in all: vol2col, the weight not transposed
    (1, 4, False, 128),  # 128 channels: one chunk whose products are cut into blocks
    (2, 4, True, 16),    # 128: 3-D Winograd forward and weight gradient, vol2col input gradient
    (1, 8, True, 16),    # 512: 3-D Winograd
])
def test_small_batches_of_small_volumes_take_vol2col(n, size, winograd, channels, rng, torch,
                                                     monkeypatch):
    """A 3-D convolution with fewer than TUNING.winograd3d_min_batch_voxels output voxels
    over the batch runs vol2col (forward and both gradients; the input gradient below
    ``winograd3d_min_batch_voxels_input_grad``); a batch that is one chunk has its
    products cut into blocks (``_chunks._product_blocks``) where they are large.  Values
    against torch, the same bits for any thread count."""
    from sandbox.array.conv import _chunks

    wino = _spy(monkeypatch, _winograd3d, "conv3x3x3")
    copies = _spy(monkeypatch, _chunks, "lhs")
    cut = []
    original = _chunks._product_blocks
    monkeypatch.setattr(_chunks, "_product_blocks", lambda *a: cut.append(
        original(*a)[0].shape[0] > 1) or original(*a))
    x = rng.standard_normal((n, channels, size, size, size)).astype(np.float32)
    w = (rng.standard_normal((channels, channels, 3, 3, 3)) / (20 * channels / 16)
         ).astype(np.float32)
    _thread_runs_match_torch(x, w, torch)
    assert bool(wino) == winograd
    assert not copies  # vol2col's forward copies the weight only from 512 columns
    assert any(cut) == (channels == 128)


def _same_bits_and_torchs_values(torch, run, torch_op, x, w, b, g, dtype):
    """``run()`` (forward, then the input, weight and bias gradients for ``g``) gives the
    same bits for 1-3 threads and, within rounding, ``torch_op``'s values and gradients of
    ``(x, w, b)``."""
    runs = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            runs.append(run())
    for result in runs[1:]:
        for a, r in zip(result, runs[0], strict=True):
            np.testing.assert_array_equal(a, r)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    torch_op(tx, tw, tb).backward(torch.tensor(g))
    want = (torch_op(tx, tw, tb).detach(), tx.grad, tw.grad, tb.grad)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    for ours, ref in zip(runs[0], want, strict=True):
        ref = ref.numpy()
        np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c,o,size", [
    (8, 32, 16, (32, 32)),  # the project's kernel: one batched product a pass
    (8, 16, 2, (64, 64)),   # a 2-class head: fewer than 8 rows, the narrow products
    (3, 5, 7, (9, 11)),
    (1, 64, 32, (16, 16)),
    (2, 16, 4, (16, 16, 16)),  # the 3-D UNet's head
    (2, 32, 16, (4, 6, 8)),
    (3, 5, 7, (3, 4, 5)),
])
def test_pointwise_convolutions_are_batched_products(dtype, n, c, o, size, rng, torch,
                                                     monkeypatch):
    """A 1x1 (1x1x1) stride-1 unpadded ungrouped convolution runs _pointwise (forward,
    input, weight and bias gradients) in 2-D and 3-D alike, not the im2col or vol2col
    loops; values against torch, the same bits for any thread count."""
    from sandbox.array.conv import _pointwise

    nd = len(size)
    calls = [_spy(monkeypatch, _pointwise, name) for name in ("forward", "input_grad",
                                                              "weight_grad")]
    spies = _spy_loops(monkeypatch, nd)
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    wt = rng.standard_normal((o, c) + (1,) * nd).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    g = rng.standard_normal((n, o, *size)).astype(dtype)
    torch_conv = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv3d
    _same_bits_and_torchs_values(
        torch, lambda: (conv.conv(x, wt, b), *conv.conv_backward(g, x, wt)), torch_conv,
        x, wt, b, g, dtype)
    assert all(calls) and not any(spies)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,p", [(2, 16, 4096), (4, 16, 1000), (16, 2, 777), (3, 5, 100),
                                   (1, 7, 33), (7, 9, 4097), (5, 1, 64), (3, 8, 2049)])
def test_narrow_products_are_the_k_ordered_chain_for_any_thread_count(dtype, m, k, p, rng):
    """``narrow_products``: every element is a[i,0] x[0] + a[i,1] x[1] + ... added in k
    order, one multiply and one add a term (the four-term statements included), for any
    thread count; columns across block and piece edges."""
    from sandbox._C import _gemm

    a = rng.standard_normal((m, k)).astype(dtype)
    x = rng.standard_normal((3, k, p)).astype(dtype)
    chain = a[None, :, 0:1] * x[:, None, 0]
    for kk in range(1, k):
        chain = chain + a[None, :, kk:kk + 1] * x[:, None, kk]
    for threads in (1, 2, 3):
        y = np.full((3, m, p), np.nan, dtype)
        _gemm.narrow_products(a, x, y, threads)
        assert y.tobytes() == chain.astype(dtype).tobytes()


@pytest.mark.parametrize("o,c", [(2, 16), (1, 16), (5, 32), (16, 3)])
def test_a_head_takes_the_narrow_products(o, c, rng, monkeypatch):
    """A 1x1 convolution whose weight has a side under NARROW_SIDE runs its forward and
    input gradient on the narrow-product kernel, not one BLAS product a sample."""
    from sandbox._C import _gemm
    from sandbox.array.conv import _chunks

    narrow = _spy(monkeypatch, _gemm, "narrow_products")
    per_sample = _spy(monkeypatch, _chunks, "parallel_map")
    x = rng.standard_normal((2, c, 12, 10)).astype(np.float32)
    w = rng.standard_normal((o, c, 1, 1)).astype(np.float32)
    g = rng.standard_normal((2, o, 12, 10)).astype(np.float32)
    conv.conv2d(x, w)
    conv.conv2d_backward(g, x, w, needs=(True, False, False))
    assert len(narrow) == 2 and not per_sample


@pytest.mark.parametrize("c,o", [(1, 16), (3, 16), (1, 4)])
def test_first_layers_run_in_one_pass_with_the_chunks_bits(c, o, rng, monkeypatch):
    """A layer too small for the worker pool, with chunks of one sample (a first layer:
    1-3 input channels at 64x64, batch 8), makes every sample's columns in one kernel call
    and their products in another (forward, weight and bias gradients; the input
    gradient's products in one more, folded in one call): the same bits as the
    chunk-by-chunk loops, for any thread count."""
    from sandbox.array.conv import _direct
    from sandbox.array.conv import _im2col as loops2d

    # the im2col loops' forward (a first layer's forward runs the direct kernel otherwise)
    monkeypatch.setattr(_direct, "eligible", lambda plan, x: False)
    passes = _spy(monkeypatch, loops2d, "sample_products")
    x = rng.standard_normal((8, c, 64, 64)).astype(np.float32)
    w = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    g = rng.standard_normal((8, o, 64, 64)).astype(np.float32)
    runs = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            runs.append((conv.conv2d(x, w, b, 1, 1),
                         *conv.conv2d_backward(g, x, w, 1, 1, needs=(False, True, True))[1:],
                         *conv.conv2d_backward(g, x, w, 1, 1),
                         conv.conv2d_backward(g, x, w, 1, 1, needs=(True, False, False))[0]))
    assert len(passes) == 5 * 3
    monkeypatch.setattr(loops2d, "_one_pass", lambda *a: False)
    chunks = (conv.conv2d(x, w, b, 1, 1),
              *conv.conv2d_backward(g, x, w, 1, 1, needs=(False, True, True))[1:],
              *conv.conv2d_backward(g, x, w, 1, 1),
              conv.conv2d_backward(g, x, w, 1, 1, needs=(True, False, False))[0])
    for run in runs:
        for got, want in zip(run, chunks, strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("side,one_pass", [(32, True), (128, False)])
def test_short_columns_take_one_pass_above_the_pool_threshold(side, one_pass, rng,
                                                              monkeypatch):
    """A first layer (9 rows of columns) with enough flops for the worker pool (the AVX2
    path's threshold, or none at all here) still runs in one pass while its batch's
    columns fit TUNING.one_pass_max_bytes (4 MiB; batch 8 at 32x32: 0.3 MB), and chunk
    by chunk on the pool above it (128x128: 4.7 MB); the same bits either way."""
    from sandbox.array.conv import _direct
    from sandbox.array.conv import _im2col as loops2d

    # the im2col loops' forward (a first layer's forward runs the direct kernel otherwise)
    monkeypatch.setattr(_direct, "eligible", lambda plan, x: False)
    passes = _spy(monkeypatch, loops2d, "sample_products")
    x = rng.standard_normal((8, 1, side, side)).astype(np.float32)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    g = rng.standard_normal((8, 16, side, side)).astype(np.float32)
    with sandbox.num_threads(2), conv.tuned(min_parallel_flops=0):
        got = (conv.conv2d(x, w, None, 1, 1),
               conv.conv2d_backward(g, x, w, 1, 1, needs=(False, True, True))[1])
        assert len(passes) == (2 if one_pass else 0)
        with conv.tuned(one_pass_max_rows=0):
            chunks = (conv.conv2d(x, w, None, 1, 1),
                      conv.conv2d_backward(g, x, w, 1, 1, needs=(False, True, True))[1])
    assert len(passes) == (2 if one_pass else 0)
    for a, b in zip(got, chunks, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_an_empty_batch_has_zero_weight_gradients(nd, k, transposed, torch):
    """A batch of no samples: an empty output and input gradient, zero weight and bias
    gradients, as torch (the loops had no chunk and returned no sum: AttributeError)."""
    x = np.zeros((0, 2, *(6,) * nd), np.float32)
    w = np.ones((2, 3, *(k,) * nd) if transposed else (3, 2, *(k,) * nd), np.float32)
    fwd, bwd = ((conv.conv_transpose, conv.conv_transpose_backward) if transposed
                else (conv.conv, conv.conv_backward))
    y = fwd(x, w, padding=k // 2, nd=nd)
    gx, gw, gb = bwd(np.zeros(y.shape, np.float32), x, w, padding=k // 2, nd=nd)
    op = getattr(torch.nn.functional, f"conv_transpose{nd}d" if transposed else f"conv{nd}d")
    tx, tw = torch.zeros(x.shape, requires_grad=True), torch.ones(w.shape, requires_grad=True)
    ty = op(tx, tw, padding=k // 2)
    ty.sum().backward()
    assert y.shape == tuple(ty.shape) and gx.shape == x.shape
    np.testing.assert_array_equal(gw, tw.grad.numpy())
    np.testing.assert_array_equal(gb, np.zeros(3, np.float32))


@pytest.mark.parametrize("shapes", [
    ((8, 1, 64, 64), (16, 1, 3, 3), 1),  # the first layer: 16 x 9 outputs over 4096 pixels
    ((2, 16, 16, 16, 16), (4, 16, 1, 1, 1), 0),  # a 3-D head: 4 x 16 outputs over 4096
])
def test_weight_gradient_products_take_every_thread(shapes, rng, monkeypatch):
    """The weight gradient's products of a batch (few outputs, each a sum over a whole
    sample) run on every thread: sample_products sizes the threads by the products'
    multiply-adds, not by their outputs alone.  The same bits at 1 and 2 threads.  (The
    project's GEMM only: BLAS, the portable path's, runs each product on one thread.)"""
    from sandbox.array.conv import _chunks, _direct
    from sandbox.runtime import simd

    if not simd.current().gemm_own:
        pytest.skip("the products run on BLAS here (portable path): one thread each")

    # the im2col products (a first layer's weight gradient runs the direct kernel otherwise)
    monkeypatch.setattr(_direct, "eligible", lambda plan, x: False)
    xs, ws, pad = shapes
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    g = rng.standard_normal((xs[0], ws[0], *xs[2:])).astype(np.float32)
    threads = []
    original = _chunks.matmul
    monkeypatch.setattr(_chunks, "matmul", lambda *a, **k: threads.append(k["num_threads"])
                        or original(*a, **k))
    grads = []
    for count in (1, 2):
        with sandbox.num_threads(count):
            grads.append(conv.conv_backward(g, x, w, padding=pad, needs=(False, True, False))[1])
    assert threads and threads[-1] == 2
    np.testing.assert_array_equal(grads[0], grads[1])


DEPTHWISE_CASES = [  # spatial shape, kernel, stride, padding, dilation
    ((9, 11), 3, 1, 1, 1),
    ((8, 8), 5, 2, 2, 1),
    ((7, 5), 3, 3, 0, 1),
    ((4, 4), 3, 2, 3, 2),
    ((5, 6, 7), 3, 1, 1, 1),
    ((6, 6, 6), 3, 2, 2, 2),
    ((6, 37), 3, 1, 1, 1),  # rows of 37: the weight gradient's 16 lanes and a tail
    ((5, 70), 3, 2, 1, 1),  # rows of 35 outputs at stride 2
    # stride 1 (the padded boxes of depthwise_rows.h): rows shorter than a vector, a
    # valid convolution, padding past the kernel's reach (outputs that see only
    # padding), dilation, an even kernel, 7x7, rows in and out of groups of four
    ((5, 3), 3, 1, 0, 1),
    ((7, 20), 5, 1, 5, 1),
    ((9, 16), 3, 1, 2, 2),
    ((6, 17), 2, 1, 1, 1),
    ((10, 24), 7, 1, 3, 1),
    ((1, 9), 3, 1, 1, 1),
    ((11, 3), 3, 1, 1, 1),  # rows of 3: a vector's tail would reach past the next row
    ((13, 7), 3, 1, 1, 1),  # rows of 7: it reaches one into the next
    ((4, 5, 9), 3, 1, 0, 1),
    ((3, 6, 10), 3, 1, 2, 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size, k, s, p, d", DEPTHWISE_CASES)
def test_depthwise_convolutions_run_the_stencil(dtype, size, k, s, p, d, rng, torch,
                                                monkeypatch):
    """groups == in == out channels runs _depthwise's stencil (forward, input, weight and
    bias gradients), not the im2col or vol2col loops, in 2-D and 3-D: values against
    torch, the same bits for 1-3 threads."""
    from sandbox.array.conv import _depthwise

    nd = len(size)
    calls = [_spy(monkeypatch, _depthwise, name) for name in ("forward", "input_grad",
                                                              "weight_grad")]
    spies = _spy_loops(monkeypatch, nd)
    c = 5
    x = rng.standard_normal((2, c, *size)).astype(dtype)
    w = rng.standard_normal((c, 1) + (k,) * nd).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)
    opts = dict(stride=s, padding=p, dilation=d, groups=c)
    y = conv.conv(x, w, b, **opts)
    g = rng.standard_normal(y.shape).astype(dtype)
    torch_conv = torch.nn.functional.conv2d if nd == 2 else torch.nn.functional.conv3d
    _same_bits_and_torchs_values(
        torch, lambda: (conv.conv(x, w, b, **opts), *conv.conv_backward(g, x, w, **opts)),
        lambda a, w_, b_: torch_conv(a, w_, b_, **opts), x, w, b, g, dtype)
    assert all(calls) and not any(spies)


@pytest.mark.parametrize("where", ["weight", "grad_output"])
def test_depthwise_infinities_skip_the_padding_as_torch(where, torch):
    """An infinity in the weight or the output gradient meets the stride-1 path's zero
    padding (0 * inf): PyTorch skips padded taps, and so do the values and both
    gradients here (inf where torch has inf, no NaN where it has none)."""
    c = 3
    x = np.arange(2 * c * 5 * 6, dtype=np.float32).reshape(2, c, 5, 6) / 50
    w = np.linspace(-1, 1, c * 9, dtype=np.float32).reshape(c, 1, 3, 3)
    g = np.ones((2, c, 5, 6), np.float32)
    if where == "weight":
        w[1, 0, 0, 2] = np.inf
    else:
        g[0, 2, 4, 0] = -np.inf
    ours = (conv.conv(x, w, None, padding=1, groups=c),
            *conv.conv_backward(g, x, w, padding=1, groups=c)[:2])
    tx, tw = (torch.from_numpy(a).requires_grad_() for a in (x, w))
    ty = torch.nn.functional.conv2d(tx, tw, padding=1, groups=c)
    ty.backward(torch.from_numpy(g))
    for a, b in zip(ours, (ty.detach(), tx.grad, tw.grad), strict=True):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-5)


def test_depthwise_convolution_gradcheck(rng):
    """F.conv2d / F.conv3d with groups == channels: float64 finite differences."""
    from sandbox.gradcheck import gradcheck

    import sandbox.functional as F

    for shape, fn in (((1, 3, 5, 6), F.conv2d), ((1, 2, 4, 4, 5), F.conv3d)):
        nd = len(shape) - 2
        x = sandbox.tensor(rng.standard_normal(shape), requires_grad=True)
        w = sandbox.tensor(rng.standard_normal((shape[1], 1) + (3,) * nd), requires_grad=True)
        b = sandbox.tensor(rng.standard_normal(shape[1]), requires_grad=True)
        assert gradcheck(lambda a, w_, b_, fn=fn, c=shape[1]: fn(a, w_, b_, stride=2, padding=1,
                                                                groups=c), (x, w, b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, c, o, size, k", [
    (8, 32, 16, (16, 16), 2),  # the original UNet's up-convolution
    (2, 3, 5, (5, 7), 3),
    (1, 4, 2, (3, 4), (2, 3)),
])
def test_transposed_convolutions_with_kernel_equal_to_stride_are_products_and_a_shuffle(
        dtype, n, c, o, size, k, rng, torch, monkeypatch):
    """A 2-D transposed convolution whose kernel equals its stride (no padding, dilation or
    output padding) runs _patches (a 1x1 product and depth-to-space), not the im2col
    loops: values and gradients against torch, the same bits for 1-3 threads; with an
    output padding it takes the loops."""
    from sandbox.array.conv import _patches

    calls = [_spy(monkeypatch, _patches, name) for name in ("transpose_forward",
                                                            "transpose_backward")]
    spies = _spy_loops(monkeypatch, 2)
    kk = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = rng.standard_normal((c, o, *kk)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    y = conv.conv_transpose2d(x, w, b, stride=kk)
    g = rng.standard_normal(y.shape).astype(dtype)
    _same_bits_and_torchs_values(
        torch, lambda: (conv.conv_transpose2d(x, w, b, stride=kk),
                        *conv.conv_transpose2d_backward(g, x, w, stride=kk)),
        lambda a, w_, b_: torch.nn.functional.conv_transpose2d(a, w_, b_, stride=kk),
        x, w, b, g, dtype)
    assert all(calls) and not any(spies)
    conv.conv_transpose2d(x, w, b, stride=kk, output_padding=1)  # not a shuffle: the loops
    assert any(spies)


@pytest.mark.parametrize("kernel", [(2, 2), (3, 2), (2, 3), (1, 1)])
def test_depth_to_space_kernels_equal_numpys_permutation(kernel, rng):
    """The up-convolution's permutations (``_patches._to_space`` / ``_to_depth``): the
    kernels' bits equal numpy's transposed copy for both dtypes and any thread count,
    read-only inputs included; float16 takes numpy's path and agrees too."""
    from sandbox.array.conv import _patches

    n, o, h, w = 3, 5, 6, 7
    kh, kw = kernel
    for dtype in (np.float32, np.float64, np.float16):
        cols = rng.standard_normal((n, o * kh * kw, h, w)).astype(dtype)
        cols.setflags(write=False)
        want = cols.reshape(n, o, kh, kw, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(
            n, o, h * kh, w * kw)
        for threads in (1, 2, 3):
            with sandbox.num_threads(threads):
                space = _patches._to_space(cols, kernel)
                space.setflags(write=False)
                back = _patches._to_depth(space, kernel)
            np.testing.assert_array_equal(space, want)
            np.testing.assert_array_equal(back, cols)
            assert space.flags.c_contiguous and back.flags.c_contiguous


def test_kernel_stride_transposed_convolution_gradcheck(rng):
    from sandbox.gradcheck import gradcheck

    import sandbox.functional as F

    x = sandbox.tensor(rng.standard_normal((2, 3, 3, 4)), requires_grad=True)
    w = sandbox.tensor(rng.standard_normal((3, 2, 2, 2)), requires_grad=True)
    b = sandbox.tensor(rng.standard_normal(2), requires_grad=True)
    assert gradcheck(lambda a, w_, b_: F.conv_transpose2d(a, w_, b_, stride=2), (x, w, b))


#: the GEMM paths whose direct 3x3 form this CPU runs (``avx512``: the 16-pixel form)
_DIRECT_PATHS = [pytest.param(
    path, marks=pytest.mark.skipif(not _im2col.direct3x3_available(path == "avx512"),
                                   reason=f"the direct 3x3 kernel's {path} form needs {path}"))
    for path in ("avx2", "avx512")]


@pytest.mark.parametrize("path", _DIRECT_PATHS)
@pytest.mark.parametrize("n,c,o,h,w,p", [(8, 1, 16, 64, 64, 1), (4, 3, 16, 32, 40, 1),
                                         (2, 1, 16, 13, 21, 1), (3, 2, 16, 5, 30, 2),
                                         (2, 4, 24, 18, 17, 0), (2, 2, 9, 16, 16, 1),
                                         (2, 1, 8, 33, 47, 1), (1, 3, 64, 9, 16, 1),
                                         (1, 1, 43, 7, 35, 1)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_direct_first_layer_gives_the_im2col_bits(path, n, c, o, h, w, p, with_bias, rng,
                                                  monkeypatch):
    """A 3x3 forward of 1-4 input channels on the AVX2 or AVX-512 GEMM's path runs the
    direct kernel (taken: checked) with the im2col product's sums in their order: the same
    bits as im2col on that path's GEMM (odd sizes, rows shorter and longer than a block,
    paddings 0-2, output channels not a multiple of 8, a bias; 43 channels: two groups of
    16 along the row, one of 8, then 3 one at a time)."""
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32) if with_bias else None
    calls = _spy(monkeypatch, _im2col, "direct3x3")
    with simd.using(isa=path, gemm=path):
        direct = conv.conv2d(x, wt, bias, padding=p)
        assert calls, "the direct kernel was not taken"
        with conv.tuned(direct_max_channels=0):
            im2col = conv.conv2d(x, wt, bias, padding=p)
    assert len(calls) == 1
    assert direct.tobytes() == im2col.tobytes()


@pytest.mark.parametrize("path", _DIRECT_PATHS)
@pytest.mark.parametrize("n,o,size,pad,with_bias", [
    (2, 16, (5, 7, 9), (1, 1, 1), False), (1, 24, (4, 9, 18), (2, 0, 1), True),
    (2, 8, (3, 8, 40), (0, 1, 1), False), (1, 16, (1, 12, 12), (1, 1, 1), True),
    (1, 43, (6, 5, 33), (1, 2, 0), False)])
def test_a_volume_first_layer_runs_direct(path, n, o, size, pad, with_bias, rng, monkeypatch):
    """A 3x3x3 stride-1 convolution of one input channel on the AVX2 or AVX-512 GEMM's
    path runs the direct kernels (taken: checked), the depth taps as channels: the forward
    gives vol2col's bits on that GEMM (planes at the volume's faces, paddings 0-2, one
    plane, output channels not a multiple of 8, a bias); the weight gradient the float64
    gradient's values to float32 rounding, the same bits at 1-3 threads, and the bias
    gradient beside it."""
    from sandbox._C import _vol2col

    x = rng.standard_normal((n, 1, *size)).astype(np.float32)
    w = rng.standard_normal((o, 1, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if with_bias else None
    fwd = _spy(monkeypatch, _vol2col, "direct3x3x3")
    dws = _spy(monkeypatch, _vol2col, "direct3x3x3_weight_grad")
    with simd.using(isa=path, gemm=path):
        direct = conv.conv3d(x, w, b, padding=pad)
        with conv.tuned(direct_max_channels=0):
            columns = conv.conv3d(x, w, b, padding=pad)
        g = rng.standard_normal(direct.shape).astype(np.float32)
        runs = []
        for threads in (1, 2, 3):
            with sandbox.num_threads(threads):
                runs.append(conv.conv3d_backward(g, x, w, padding=pad,
                                                 needs=(False, True, True))[1:])
    assert len(fwd) == 1 and len(dws) == 3
    assert direct.tobytes() == columns.tobytes()
    exact = conv.conv3d_backward(g.astype(np.float64), x.astype(np.float64),
                                 w.astype(np.float64), padding=pad)[1]
    assert all(r[0].tobytes() == runs[0][0].tobytes() for r in runs[1:])
    np.testing.assert_allclose(runs[0][0], exact, rtol=2e-5, atol=2e-5 * np.abs(exact).max())
    np.testing.assert_allclose(runs[0][1], g.astype(np.float64).sum(axis=(0, 2, 3, 4)),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("path", _DIRECT_PATHS)
def test_a_large_first_layer_weight_gradient_takes_im2col(path, rng, monkeypatch):
    """Above ``direct_weight_grad_max_bytes`` of output gradient the weight gradient runs
    im2col and the GEMM (the direct kernel not called), at the limit the direct kernel;
    both give the float64 gradient's values to float32 rounding."""
    x = rng.standard_normal((2, 1, 12, 12)).astype(np.float32)
    g = rng.standard_normal((2, 5, 12, 12)).astype(np.float32)
    wt = rng.standard_normal((5, 1, 3, 3)).astype(np.float32)
    exact = conv.conv2d_backward(g.astype(np.float64), x.astype(np.float64),
                                 wt.astype(np.float64), padding=1)[1]
    calls = _spy(monkeypatch, _im2col, "direct3x3_weight_grad")
    with simd.using(isa=path, gemm=path):
        for limit, taken in ((g.nbytes - 1, 0), (g.nbytes, 1)):
            with conv.tuned(direct_weight_grad_max_bytes=limit):
                gw = conv.conv2d_backward(g, x, wt, padding=1, needs=(False, True, False))[1]
            assert len(calls) == taken
            np.testing.assert_allclose(gw, exact, rtol=2e-5, atol=2e-5 * np.abs(exact).max())


@pytest.mark.parametrize("path", _DIRECT_PATHS)
@pytest.mark.parametrize("n,c,o,h,w,p", [(8, 1, 16, 64, 64, 1), (2, 3, 16, 13, 21, 1),
                                         (3, 2, 9, 5, 30, 2), (2, 4, 24, 18, 17, 0),
                                         (1, 1, 5, 9, 9, 1), (2, 1, 7, 40, 33, 1),
                                         (1, 2, 3, 1, 70, 1)])
def test_direct_first_layer_weight_gradient(path, n, c, o, h, w, p, rng, monkeypatch):
    """A first layer's weight gradient (1-4 input channels, 3x3, stride 1) runs the direct
    kernel (taken: checked): the float64 im2col gradient's values to float32 rounding, the
    same bits for 1-3 threads (odd sizes, rows shorter and longer than a vector, paddings
    0-2, an odd number of output channels), and the bias gradient beside it."""
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    ho, wo = h + 2 * p - 2, w + 2 * p - 2
    g = rng.standard_normal((n, o, ho, wo)).astype(np.float32)
    wt = rng.standard_normal((o, c, 3, 3)).astype(np.float32)
    calls = _spy(monkeypatch, _im2col, "direct3x3_weight_grad")
    exact = conv.conv2d_backward(g.astype(np.float64), x.astype(np.float64),
                                 wt.astype(np.float64), padding=p)[1]
    runs = []
    with simd.using(isa=path, gemm=path):
        for threads in (1, 2, 3):
            with sandbox.num_threads(threads):
                runs.append(conv.conv2d_backward(g, x, wt, padding=p,
                                                 needs=(False, True, True))[1:])
    assert len(calls) == 3
    assert all(r[0].tobytes() == runs[0][0].tobytes() for r in runs[1:])
    np.testing.assert_allclose(runs[0][0], exact, rtol=2e-5, atol=2e-5 * np.abs(exact).max())
    np.testing.assert_allclose(runs[0][1], g.astype(np.float64).sum(axis=(0, 2, 3)),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("path", _DIRECT_PATHS)
def test_direct_weight_gradient_multiplies_the_padding_as_im2col(path, rng, monkeypatch):
    """An infinite output gradient next to the padding gives NaN where im2col's columns
    (their zeros times infinity) give it: the padding's zeros are multiplied in."""
    from sandbox.array.conv import _direct

    x = rng.standard_normal((2, 1, 6, 7)).astype(np.float32)
    g = rng.standard_normal((2, 4, 6, 7)).astype(np.float32)
    g[1, 2, 0, 3] = np.inf  # on the first row: its kh = 0 taps read the padding
    wt = rng.standard_normal((4, 1, 3, 3)).astype(np.float32)
    with simd.using(isa=path, gemm=path):
        direct = conv.conv2d_backward(g, x, wt, padding=1, needs=(False, True, False))[1]
        monkeypatch.setattr(_direct, "eligible", lambda plan, x: False)
        im2col = conv.conv2d_backward(g, x, wt, padding=1, needs=(False, True, False))[1]
    np.testing.assert_array_equal(np.isnan(direct), np.isnan(im2col))
    assert np.isnan(direct).any() and np.isinf(direct).any()


@pytest.mark.parametrize("path", _DIRECT_PATHS)
def test_direct_first_layer_is_the_same_for_any_thread_count(path, rng):
    x = rng.standard_normal((3, 3, 37, 29)).astype(np.float32)
    wt = rng.standard_normal((20, 3, 3, 3)).astype(np.float32)
    results = []
    with simd.using(isa=path, gemm=path):
        for threads in (1, 2, 3):
            with sandbox.num_threads(threads):
                results.append(conv.conv2d(x, wt, padding=1))
    assert all(r.tobytes() == results[0].tobytes() for r in results[1:])
    exact = conv.conv2d(x.astype(np.float64), wt.astype(np.float64), padding=1)
    np.testing.assert_allclose(results[0], exact, rtol=1e-5, atol=1e-5)
