"""conv2d / conv_transpose2d: kernels vs a numpy reference, threads, torch parity, gradients."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox._C import _im2col
from sandbox.array import conv
from sandbox.array._validate import pair
from sandbox.autograd.gradcheck import gradcheck

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
def test_conv2d_matches_reference(case, dtype, rng):
    x, w, b, s, p, d, g = _data(case, dtype, rng)
    y = conv.conv2d(x, w, b, s, p, d, g)
    assert y.dtype == dtype
    np.testing.assert_allclose(
        y, ref_conv2d(x.astype(float), w.astype(float), b, s, p, d, g), **_tol(dtype)
    )


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


@pytest.mark.parametrize("target", [1, 64])
@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[6]], ids=_ids)
def test_conv_bitwise_equal_across_thread_counts(case, target, rng, monkeypatch):
    """Chunks are fixed by the shapes; weight/bias partials are summed in chunk order."""
    monkeypatch.setattr(conv.TUNING, "target_cols", target)
    x, w, b, s, p, d, g = _data(case, np.float32, rng)
    y0 = conv.conv2d(x, w, b, s, p, d, g)
    gy = rng.standard_normal(y0.shape).astype(np.float32)
    bt = rng.standard_normal(x.shape[1]).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        monkeypatch.setattr(conv.TUNING, "kernel_threads", nt)
        with sandbox.num_threads(nt):
            y = conv.conv2d(x, w, b, s, p, d, g)
            grads = conv.conv2d_backward(gy, x, w, s, p, d, g)
            yt = conv.conv_transpose2d(gy, w, bt, s, p, 0, g, d)
            tgrads = conv.conv_transpose2d_backward(np.cos(yt), gy, w, s, p, 0, g, d)
        results.append((y, *grads, yt, *tgrads))
    for other in results[1:]:
        for a, c in zip(results[0], other, strict=True):
            assert np.array_equal(a, c)


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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[2], CASES[3], CASES[6]], ids=_ids)
def test_torch_parity(case, transposed, dtype, rng, torch):
    x, w, b, s, p, d, g = _data(case, dtype, rng, transposed=transposed)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    sx, sw_, sb = (sandbox.Tensor(a, requires_grad=True) for a in (x, w, b))
    if transposed:
        op = tuple(1 if si > 1 else 0 for si in pair(s, "s", 1))
        ty = torch.nn.functional.conv_transpose2d(tx, tw, tb, s, p, op, g, d)
        sy = F.conv_transpose2d(sx, sw_, sb, s, p, op, g, d)
    else:
        ty = torch.nn.functional.conv2d(tx, tw, tb, s, p, d, g)
        sy = F.conv2d(sx, sw_, sb, s, p, d, g)
    gy = rng.standard_normal(ty.shape).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    tol = _tol(dtype)
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    for st, tt in ((sx, tx), (sw_, tw), (sb, tb)):
        assert st.grad.numpy().dtype == dtype
        np.testing.assert_allclose(st.grad.numpy(), tt.grad.numpy(), **tol)


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
    from sandbox._C import _winograd4

    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels_input_grad", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_f4_min_pixels", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_min_pixels_weight_grad", 1)
    monkeypatch.setattr(conv.TUNING, "winograd_f4_min_pixels_weight_grad", 1)
    calls = _spy(monkeypatch, _winograd4, "input_transform")
    grad_calls = _spy(monkeypatch, _winograd4, "grad_transform")
    n, c, h, w, o, p = shape
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    wt = (rng.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    y = conv.conv2d(x, wt, b, 1, p)
    gy = rng.standard_normal(y.shape).astype(dtype)
    gx, gw, gb = conv.conv2d_backward(gy, x, wt, 1, p)
    assert len(calls) >= 3 and grad_calls, "the F(4x4, 3x3) paths were not taken"
    x64, w64, gy64 = (a.astype(np.float64) for a in (x, wt, gy))
    np.testing.assert_allclose(y, ref_conv2d(x64, w64, b, 1, p, 1, 1), **_tol(dtype))
    with conv.tuned(winograd=False):
        expected = conv.conv2d_backward(gy64, x64, w64, 1, p)
    for got, exp in zip((gx, gw, gb), expected, strict=True):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, exp, **_tol(dtype))


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
                    winograd_min_pixels=1, winograd_min_pixels_input_grad=1,
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
