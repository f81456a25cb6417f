"""sandbox.functional.interpolate: gradients (finite differences), second
derivatives, and parity with torch autograd (first and second order)."""

import numpy as np
import pytest

import sandbox.functional as F
from sandbox.array.resample import resize, resize_adjoint
from sandbox.autograd import Tensor, grad

CASES = [
    ("nearest", {}, (1, 2, 5), {"scale_factor": 2.0}),
    ("linear", {"align_corners": True}, (1, 2, 6), {"size": 9}),
    ("bilinear", {}, (2, 2, 5, 4), {"size": (7, 3)}),
    ("bicubic", {}, (1, 2, 5, 6), {"scale_factor": 1.5}),
    ("bicubic", {"antialias": True}, (1, 2, 9, 8), {"size": (4, 5)}),
    ("lanczos3", {}, (1, 1, 4, 7), {"size": (9, 3)}),
    ("area", {}, (1, 2, 3, 7, 5), {"size": (2, 3, 4)}),
    ("nearest-exact", {}, (1, 1, 4, 3, 5), {"scale_factor": (1.5, 2.0, 0.6)}),
]


@pytest.mark.parametrize(("mode", "opts", "shape", "spec"), CASES)
def test_gradient_matches_finite_differences(mode, opts, shape, spec):
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(shape)
    x = Tensor(x0, requires_grad=True)
    y = F.interpolate(x, mode=mode, **spec, **opts)
    w = rng.standard_normal(y.shape)
    (gx,) = grad((y * Tensor(w)).sum(), x)
    eps = 1e-6
    num = np.zeros_like(x0)
    for idx in np.ndindex(*shape):
        xp, xm = x0.copy(), x0.copy()
        xp[idx] += eps
        xm[idx] -= eps
        num[idx] = (
            np.vdot(resize(xp, mode=mode, **spec, **opts), w)
            - np.vdot(resize(xm, mode=mode, **spec, **opts), w)
        ) / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("mode", "opts", "shape", "spec"), CASES)
def test_second_derivative(mode, opts, shape, spec):
    """d/dv <adjoint(v), u> = resize(u): the double backward is the forward."""
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal(shape), requires_grad=True)
    y = F.interpolate(x, mode=mode, **spec, **opts)
    v = Tensor(rng.standard_normal(y.shape), requires_grad=True)
    (gx,) = grad((y * v).sum(), x, create_graph=True)
    np.testing.assert_allclose(
        gx.numpy(), resize_adjoint(v.numpy(), shape[2:], mode=mode, **spec, **opts), rtol=1e-12
    )
    u = rng.standard_normal(shape)
    (gv,) = grad((gx * Tensor(u)).sum(), v)
    np.testing.assert_allclose(gv.numpy(), resize(u, mode=mode, **spec, **opts), rtol=1e-12)
    # third order: differentiate the double backward w.r.t. u -> the adjoint again
    ut = Tensor(u, requires_grad=True)
    (gx2,) = grad((y * v).sum(), x, create_graph=True)
    (gv2,) = grad((gx2 * ut).sum(), v, create_graph=True)
    assert gv2.requires_grad
    t = rng.standard_normal(y.shape)
    (gu,) = grad((gv2 * Tensor(t)).sum(), ut)
    np.testing.assert_allclose(
        gu.numpy(), resize_adjoint(t, shape[2:], mode=mode, **spec, **opts), rtol=1e-12
    )


@pytest.mark.torch
@pytest.mark.parametrize(("mode", "opts", "shape", "spec"), CASES[:5] + CASES[6:])
def test_autograd_parity_with_torch(torch, mode, opts, shape, spec):
    import torch.nn.functional as TF

    rng = np.random.default_rng(2)
    x0 = rng.standard_normal(shape)
    xt = torch.tensor(x0, requires_grad=True)
    yt = TF.interpolate(xt, mode=mode, **spec, **opts)
    vt = torch.tensor(rng.standard_normal(tuple(yt.shape)), requires_grad=True)
    (gxt,) = torch.autograd.grad((yt * vt).sum(), xt, create_graph=True)
    u = rng.standard_normal(shape)
    (gvt,) = torch.autograd.grad((gxt * torch.tensor(u)).sum(), vt)

    x = Tensor(x0, requires_grad=True)
    y = F.interpolate(x, mode=mode, **spec, **opts)
    v = Tensor(vt.detach().numpy().copy(), requires_grad=True)
    (gx,) = grad((y * v).sum(), x, create_graph=True)
    (gv,) = grad((gx * Tensor(u)).sum(), v)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gxt.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gv.numpy(), gvt.numpy(), rtol=1e-10, atol=1e-12)


def test_float32_and_no_grad_input():
    x = np.ones((1, 1, 3, 3), np.float32)
    y = F.interpolate(x, scale_factor=2, mode="bilinear")
    assert isinstance(y, Tensor) and y.dtype == np.float32 and y.shape == (1, 1, 6, 6)
    assert not y.requires_grad


def test_interpolate_validates_input():
    with pytest.raises(TypeError, match="input must have dtype float32 or float64"):
        F.interpolate(Tensor(np.ones((1, 1, 2, 2), np.float64)).numpy().astype(int), size=3)
    with pytest.raises(ValueError, match="mode must be one of"):
        F.interpolate(Tensor(np.ones((1, 1, 2, 2))), size=3, mode="spline")
