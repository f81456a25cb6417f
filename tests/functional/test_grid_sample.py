"""sandbox.nn.functional.grid_sample / affine_grid: PyTorch parity (values and every
gradient), gradcheck for every mode and padding (3-D tricubic included), double
backward, warnings and validation."""

import itertools
import warnings

import numpy as np
import pytest
import sandbox.nn.functional as F

from sandbox import Tensor
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck

from ..support.grid_points import safe_grid

MODES = ("nearest", "bilinear", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
SHAPES = {2: ((2, 2, 4, 5), (3, 2)), 3: ((1, 2, 3, 4, 3), (2, 2, 2))}


def _inputs(seed, nd, ac):
    rng = np.random.default_rng(seed)
    in_shape, out = SHAPES[nd]
    x = rng.standard_normal(in_shape)
    g = safe_grid(rng, in_shape[0], out, in_shape[2:], ac)
    return Tensor(x, requires_grad=True), Tensor(g, requires_grad=True)


@pytest.mark.parametrize("nd,mode,padding,ac",
                         [c for c in itertools.product((2, 3), MODES, PADDINGS, (False, True))
                          if not (c[0] == 3 and c[1] == "bicubic")])
def test_matches_torch(torch, nd, mode, padding, ac):
    x, g = _inputs(11, nd, ac)
    opts = dict(mode=mode, padding_mode=padding, align_corners=ac)
    y = F.grid_sample(x, g, **opts)
    w = np.random.default_rng(1).standard_normal(y.shape)
    (y * Tensor(w)).sum().backward()
    tx = torch.tensor(x.numpy(), requires_grad=True)
    tg = torch.tensor(g.numpy(), requires_grad=True)
    ty = torch.nn.functional.grid_sample(tx, tg, **opts)
    (ty * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g.grad.numpy(), tg.grad.numpy(), rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("nd,mode,padding", list(itertools.product((2, 3), MODES, PADDINGS)))
@pytest.mark.parametrize("ac", [False, True])
def test_gradcheck(nd, mode, padding, ac):
    x, g = _inputs(5, nd, ac)
    assert gradcheck(lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=padding,
                                                align_corners=ac), (x, g))


@pytest.mark.parametrize("nd,padding", list(itertools.product((2, 3), PADDINGS)))
def test_gradgradcheck_bilinear(nd, padding):
    x, g = _inputs(8, nd, False)
    assert gradgradcheck(lambda a, b: F.grid_sample(a, b, padding_mode=padding,
                                                    align_corners=False), (x, g))


@pytest.mark.parametrize("mode", ["nearest", "bicubic"])
def test_gradgradcheck_other_modes(mode):
    x, g = _inputs(9, 2, True)
    assert gradgradcheck(lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode="border",
                                                    align_corners=True), (x, g))


def test_double_backward_matches_torch(torch):
    x, g = _inputs(4, 2, False)
    y = F.grid_sample(x, g, padding_mode="reflection", align_corners=False)
    gx, gg = sandbox_grad(y, (x, g))
    ((gx * gx).sum() + (gg * gg).sum()).backward()
    tx = torch.tensor(x.numpy(), requires_grad=True)
    tg = torch.tensor(g.numpy(), requires_grad=True)
    ty = torch.nn.functional.grid_sample(tx, tg, padding_mode="reflection", align_corners=False)
    tgx, tgg = torch.autograd.grad(ty.sum(), (tx, tg), create_graph=True)
    ((tgx * tgx).sum() + (tgg * tgg).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(g.grad.numpy(), tg.grad.numpy(), rtol=1e-10, atol=1e-10)


def sandbox_grad(y, inputs):
    from sandbox.autograd import grad

    return grad(y.sum(), inputs, create_graph=True)


@pytest.mark.parametrize("nd,ac", list(itertools.product((2, 3), (False, True))))
def test_affine_grid_matches_torch(torch, nd, ac):
    rng = np.random.default_rng(nd)
    size = (2, 3, 4, 5) if nd == 2 else (2, 1, 3, 1, 5)
    theta = Tensor(rng.standard_normal((2, nd, nd + 1)), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unit-size warning, checked below
        out = F.affine_grid(theta, size, align_corners=ac)
        tt = torch.tensor(theta.numpy(), requires_grad=True)
        tout = torch.nn.functional.affine_grid(tt, size, align_corners=ac)
    w = rng.standard_normal(out.shape)
    (out * Tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(theta.grad.numpy(), tt.grad.numpy(), rtol=1e-13, atol=1e-13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda t: F.affine_grid(t, size, align_corners=ac), (theta,))


def test_affine_then_sample_trains_theta(torch):
    """theta -> affine_grid -> grid_sample, the spatial transformer's path, vs torch."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 1, 6, 7))
    theta = Tensor(np.array([[[0.9, 0.1, 0.05], [-0.1, 1.1, 0.0]]] * 2) + 0.01 * rng.random(
        (2, 2, 3)), requires_grad=True)
    y = F.grid_sample(Tensor(x), F.affine_grid(theta, x.shape, align_corners=False),
                      align_corners=False)
    (y * y).sum().backward()
    tt = torch.tensor(theta.numpy(), requires_grad=True)
    ty = torch.nn.functional.grid_sample(
        torch.tensor(x), torch.nn.functional.affine_grid(tt, x.shape, align_corners=False),
        align_corners=False)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(theta.grad.numpy(), tt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_align_corners_none_warns_like_torch():
    x, g = _inputs(1, 2, False)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        y = F.grid_sample(x, g)
    np.testing.assert_array_equal(y.numpy(), F.grid_sample(x, g, align_corners=False).numpy())
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(np.zeros((1, 2, 3)), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="unit-size grids when align_corners=True"):
        F.affine_grid(np.zeros((1, 2, 3)), (1, 1, 1, 2), align_corners=True)


def test_grid_sample_accepts_arrays():
    x, g = _inputs(1, 2, True)
    y = F.grid_sample(x.numpy(), g.numpy(), mode="bicubic", align_corners=True)
    assert isinstance(y, Tensor) and y.shape == (2, 2, 3, 2)


@pytest.mark.parametrize("call,exc,message", [
    (lambda: F.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 2, 2, 2)), mode="linear",
                           align_corners=False), ValueError, "mode must be one of"),
    (lambda: F.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 2, 2, 2)), padding_mode="wrap",
                           align_corners=False), ValueError, "padding_mode must be one of"),
    (lambda: F.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 2, 2, 2)), align_corners=1),
     TypeError, "align_corners must be True, False or None"),
    (lambda: F.grid_sample(np.zeros((1, 1, 2, 2)), np.zeros((1, 2, 2, 3)), align_corners=False),
     ValueError, "grid must be"),
    (lambda: F.affine_grid(np.zeros((1, 2, 3), np.int64), (1, 1, 2, 2), align_corners=False),
     TypeError, "theta must have dtype float32 or float64"),
    (lambda: F.affine_grid(np.zeros((1, 3, 4)), (1, 1, 2, 2), align_corners=False),
     ValueError, r"theta must be a batch of 2-D affine matrices of shape \(N, 2, 3\)"),
    (lambda: F.affine_grid(np.zeros((1, 2, 3)), (1, 1, 2), align_corners=False),
     NotImplementedError, "affine_grid supports 4-D"),
    (lambda: F.affine_grid(np.zeros((1, 2, 3)), (1, 1, 0, 2), align_corners=False),
     ValueError, "size must be positive"),
    (lambda: F.affine_grid(np.zeros((2, 2, 3)), (1, 1, 2, 2), align_corners=False),
     ValueError, "theta batch size 2 does not match size"),
    (lambda: F.affine_grid(np.zeros((1, 2, 3)), "abcd", align_corners=False),
     TypeError, "size must be a sequence of ints"),
])
def test_validation(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_third_derivative_through_the_grid_gradient_raises():
    from sandbox.autograd import grad

    x, g = _inputs(3, 2, False)
    y = F.grid_sample(x, g, align_corners=False)
    _, gg = grad(y.sum(), (x, g), create_graph=True)
    with pytest.raises(RuntimeError, match="third derivative through the grid gradient"):
        grad((gg * gg).sum(), g, create_graph=True)
    # a second derivative of the input-gradient path alone stays differentiable
    gx, = grad(F.grid_sample(x, g, align_corners=False).sum(), (x,), create_graph=True)
    (d,) = grad((gx * gx).sum(), (g,), create_graph=True)
    assert d.shape == g.shape
