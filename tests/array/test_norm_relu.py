"""Fused batch norm + ReLU: torch parity, gradients, bitwise equality with the unfused ops,
determinism for any thread count, and its use by BatchNorm2d and the UNets' blocks."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn
from sandbox.array import norm
from sandbox.autograd.gradcheck import gradcheck


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-11)


def _data(rng, shape, dtype):
    c = shape[1]
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    w, b = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    rm, rv = rng.standard_normal(c).astype(dtype), (rng.random(c) + 0.5).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return x, w, b, rm, rv, g


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 6, 5, 7), (8, 3), (2, 4, 9)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_relu_torch_parity(shape, training, affine, dtype, rng, torch):
    x, w, b, rm, rv, gy = _data(rng, shape, dtype)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    tx, sx = torch.tensor(x, requires_grad=True), sandbox.Tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True) if affine else None
    tb = torch.tensor(b, requires_grad=True) if affine else None
    sw = sandbox.Tensor(w, requires_grad=True) if affine else None
    sb = sandbox.Tensor(b, requires_grad=True) if affine else None
    ty = torch.relu(torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training, 0.2, 1e-4))
    sy = F.batch_norm_relu(sx, rm, rv, sw, sb, training, 0.2, 1e-4)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    tol = _tol(dtype)
    assert sy.numpy().dtype == dtype and sx.grad.numpy().dtype == dtype
    assert (sy.numpy() == 0).any() and (sy.numpy() > 0).any()  # both sides of the ReLU are tested
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **tol)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(rm, trm.numpy(), **tol)
    np.testing.assert_allclose(rv, trv.numpy(), **tol)
    if affine:
        loose = dict(rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)
        np.testing.assert_allclose(sw.grad.numpy(), tw.grad.numpy(), **loose)
        np.testing.assert_allclose(sb.grad.numpy(), tb.grad.numpy(), **loose)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_relu_gradcheck(training):
    x, w, b, rm0, rv0, _ = _data(np.random.default_rng(3), (3, 4, 3, 2), np.float64)

    def op(x_, w_, b_):  # fresh running stats every call: the forward updates them in place
        return F.batch_norm_relu(x_, rm0.copy(), rv0.copy(), w_, b_, training)

    out = op(*(sandbox.Tensor(a) for a in (x, w, b))).numpy()
    assert np.abs(out[out > 0]).min() > 1e-3 and (out == 0).any()  # away from the kink
    assert gradcheck(op, tuple(sandbox.Tensor(a, requires_grad=True) for a in (x, w, b)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
@pytest.mark.parametrize("kernel", [True, False])
def test_fused_equals_unfused_bitwise(dtype, training, affine, kernel, rng):
    x, w, b, rm, rv, g = _data(rng, (4, 5, 24, 20), dtype)
    w = w if affine in ("both", "weight") else None
    b = b if affine in ("both", "bias") else None
    if not training:  # values whose normalised output is exactly 0 (bias 0): the kink
        x[:, :, 3] = rm[None, :, None]
        b = None if b is None else np.where(np.arange(5) % 2, b, 0).astype(dtype)
    rm2, rv2 = rm.copy(), rv.copy()
    y, mean, invstd = norm.batch_norm_relu(x, rm, rv, w, b, training, 0.1, 1e-5)
    y_ref, mean_ref, invstd_ref = norm.batch_norm(x, rm2, rv2, w, b, training, 0.1, 1e-5)
    y_ref = np.maximum(y_ref, 0)
    for a, ref in ((y, y_ref), (mean, mean_ref), (invstd, invstd_ref), (rm, rm2), (rv, rv2)):
        np.testing.assert_array_equal(a, ref)
    if not training:
        assert (y[:, ::2, 3] == 0).all()  # on the kink: no gradient passes, as PyTorch
    np.testing.assert_array_equal(norm.batch_norm_relu_mask(x, mean, invstd, w, b), y > 0)
    if not kernel:  # statistics strided: the numpy path for the scalars, the same bits
        mean, invstd = np.repeat(mean, 2)[::2], np.repeat(invstd, 2)[::2]
    grads = norm.batch_norm_relu_backward(g, x, mean, invstd, w, b, training)
    refs = norm.batch_norm_backward(g * (y_ref > 0), x, mean, invstd, w, training)
    for a, ref in zip(grads, refs, strict=True):
        np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_relu_is_bitwise_identical_for_any_thread_count(dtype, rng):
    x, w, b, _, _, g = _data(rng, (4, 5, 48, 40), dtype)  # large enough to run in parallel
    results = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            rm, rv = np.zeros(5, dtype), np.ones(5, dtype)
            out, mean, invstd = norm.batch_norm_relu(x, rm, rv, w, b, training=True)
            grads = norm.batch_norm_relu_backward(g, x, mean, invstd, w, b, training=True)
            results.append((out, mean, invstd, rm, rv, *grads))
    for other in results[1:]:
        for a, b_ in zip(results[0], other, strict=True):
            np.testing.assert_array_equal(a, b_)


def test_nan_propagates_and_needs_skips_gradients(rng):
    x, w, b, rm, rv, g = _data(rng, (2, 3, 4, 4), np.float32)
    x[0, 1, 2, 2] = np.nan
    y, mean, invstd = norm.batch_norm_relu(x, rm, rv, w, b, training=False)
    assert np.isnan(y[0, 1, 2, 2]) and np.isfinite(np.delete(y.ravel(), 16 + 10)).all()
    gx, gw, gb = norm.batch_norm_relu_backward(g, x, mean, invstd, w, b,
                                               needs=(False, True, False))
    assert gx is None and gb is None and gw.shape == (3,)


@pytest.mark.parametrize(("call", "match"), [
    (lambda x, y, g: norm.batch_norm_relu_backward(g[:1], x, *_stats(x)), "grad_output must"),
    (lambda x, y, g: norm.batch_norm_relu_backward(g, x, *_stats(x)[::-1][:1], None),
     "invstd must be"),
    (lambda x, y, g: norm.batch_norm_relu_backward(g, x, y[0, 0, 0], *_stats(x)[1:]),
     "mean must have shape"),
    (lambda x, y, g: norm.batch_norm_relu_backward(g, x, *_stats(x), None, x[0, :, 0, 0]
                                                   .astype(np.float32)), "bias"),
    (lambda x, y, g: norm.batch_norm_relu(x, None, None), "needs running_mean"),
])
def test_validation(call, match, rng):
    x = rng.standard_normal((2, 3, 4, 4))
    y = np.maximum(x, 0)
    with pytest.raises((ValueError, TypeError), match=match):
        call(x, y, np.ones_like(x))


def _stats(x):
    return np.zeros(x.shape[1]), np.ones(x.shape[1])


def test_batchnorm2d_forward_relu_matches_relu_of_forward(rng):
    x = sandbox.Tensor(rng.standard_normal((4, 3, 5, 5)).astype(np.float32), requires_grad=True)
    fused, plain = nn.BatchNorm2d(3, momentum=None), nn.BatchNorm2d(3, momentum=None)
    for _ in range(2):
        a = fused.forward_relu(x)
        b = F.relu(plain(x))
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        ga = sandbox.autograd.grad(a.sum(), [x, fused.weight])
        gb = sandbox.autograd.grad(b.sum(), [x, plain.weight])
        for u, v in zip(ga, gb, strict=True):
            np.testing.assert_array_equal(u.numpy(), v.numpy())
    for name, value in plain.state_dict().items():
        np.testing.assert_array_equal(fused.state_dict()[name], value, err_msg=name)
    assert int(fused.num_batches_tracked) == 2


def test_unet_blocks_use_the_fused_path(rng):
    x = sandbox.Tensor(rng.standard_normal((2, 1, 16, 16)).astype(np.float32),
                       requires_grad=True)
    assert "BatchNormReLU" in nn.ClassicUNet(widths=(4, 8)).inc(x).grad_fn.name()
    assert "BatchNormReLU" in nn.UNet(1, 2, depth=1, base_width=4).inc(x).grad_fn.name()
    # group-norm blocks keep norm, then ReLU
    assert "Relu" in nn.UNet(1, 2, depth=1, base_width=4, norm="group").inc(x).grad_fn.name()
