"""nn.Warp (dense displacement warping) and nn.VecInt (scaling and squaring)."""

import numpy as np
import pytest

import sandbox
from sandbox import nn
from sandbox.autograd.gradcheck import gradcheck


def T(a, grad=False):
    return sandbox.Tensor(np.asarray(a), requires_grad=grad)


def torch_warp(torch, image, flow, mode="bilinear", padding_mode="zeros", align_corners=True):
    """VoxelMorph's SpatialTransformer written for torch from the formulas (test oracle)."""
    spatial = flow.shape[2:]
    axes = [torch.arange(s, dtype=flow.dtype) for s in spatial]
    pos = torch.stack(torch.meshgrid(*axes, indexing="ij"))[None] + flow
    channels = []
    for i, s in enumerate(spatial):
        p = pos[:, i]
        channels.append(2 * (p / (s - 1) - 0.5) if align_corners else (2 * p + 1) / s - 1)
    grid = torch.stack(channels[::-1], dim=-1)  # grid_sample wants x, y(, z) last
    return torch.nn.functional.grid_sample(image, grid, mode=mode, padding_mode=padding_mode,
                                           align_corners=align_corners)


def torch_vecint(torch, v, steps):
    u = v / 2**steps
    for _ in range(steps):
        u = u + torch_warp(torch, u, u)
    return u


def smooth_field(rng, shape, amplitude):
    """A smooth random displacement (N, nd, *spatial): a few low-frequency sines."""
    n, nd, *spatial = shape
    grids = np.meshgrid(*[np.linspace(0, 1, s) for s in spatial], indexing="ij")
    out = np.zeros(shape)
    for b in range(n):
        for k in range(nd):
            phase = rng.uniform(0, 2 * np.pi, size=nd)
            freq = rng.uniform(0.5, 1.5, size=nd)
            waves = [np.sin(2 * np.pi * f * g + ph)
                     for f, g, ph in zip(freq, grids, phase, strict=True)]
            out[b, k] = amplitude * np.prod(waves, axis=0)
    return out


@pytest.mark.parametrize("shape", [(2, 3, 6, 7), (1, 2, 4, 5, 6)])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_zero_flow_is_identity(shape, align_corners, mode):
    x = np.random.default_rng(0).standard_normal(shape)
    flow = np.zeros((shape[0], len(shape) - 2, *shape[2:]))
    y = nn.Warp(mode=mode, align_corners=align_corners)(T(x), T(flow))
    np.testing.assert_allclose(y.numpy(), x, atol=1e-12)


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_integer_shift_is_a_roll_in_the_interior_2d(align_corners, mode):
    x = np.random.default_rng(1).standard_normal((1, 2, 9, 10))
    dy, dx = 2, -3  # channel 0 moves along H, channel 1 along W
    flow = np.zeros((1, 2, 9, 10))
    flow[:, 0], flow[:, 1] = dy, dx
    y = nn.Warp(mode=mode, align_corners=align_corners)(T(x), T(flow)).numpy()
    expected = np.roll(x, (-dy, -dx), axis=(2, 3))  # y[i, j] = x[i + dy, j + dx]
    np.testing.assert_allclose(y[..., :9 - dy, -dx:], expected[..., :9 - dy, -dx:], atol=1e-12)
    # Outside the input, zeros padding reads 0.
    np.testing.assert_allclose(y[..., 9 - dy:, :], 0, atol=1e-12)


def test_integer_shift_is_a_roll_in_the_interior_3d():
    x = np.random.default_rng(2).standard_normal((2, 1, 5, 6, 7))
    shift = (1, -2, 3)  # (dz, dy, dx)
    flow = np.zeros((2, 3, 5, 6, 7))
    for k, s in enumerate(shift):
        flow[:, k] = s
    y = nn.Warp()(T(x), T(flow)).numpy()
    expected = np.roll(x, tuple(-s for s in shift), axis=(2, 3, 4))
    inner = (slice(None), slice(None), slice(0, 4), slice(2, 6), slice(0, 4))
    np.testing.assert_allclose(y[inner], expected[inner], atol=1e-12)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_matches_a_torch_voxelmorph_transformer_2d(torch, mode, padding_mode, align_corners):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 7, 8))
    flow = rng.uniform(-2.5, 2.5, size=(2, 2, 7, 8))
    gy = rng.standard_normal((2, 3, 7, 8))
    xs, fs = T(x, True), T(flow, True)
    y = nn.Warp(mode, padding_mode, align_corners)(xs, fs)
    (y * T(gy)).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    ft = torch.tensor(flow, requires_grad=True)
    yt = torch_warp(torch, xt, ft, mode, padding_mode, align_corners)
    yt.backward(torch.tensor(gy))
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(fs.grad.numpy(), ft.grad.numpy(), atol=1e-9)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_matches_a_torch_voxelmorph_transformer_3d(torch, mode, padding_mode):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 2, 4, 5, 6))
    flow = rng.uniform(-1.5, 1.5, size=(1, 3, 4, 5, 6))
    xs, fs = T(x, True), T(flow, True)
    y = nn.Warp(mode, padding_mode)(xs, fs)
    y.sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    ft = torch.tensor(flow, requires_grad=True)
    yt = torch_warp(torch, xt, ft, mode, padding_mode)
    yt.sum().backward()
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(fs.grad.numpy(), ft.grad.numpy(), atol=1e-9)


def test_float32_keeps_float32():
    x = np.ones((1, 1, 4, 4), np.float32)
    f = np.zeros((1, 2, 4, 4), np.float32)
    assert nn.Warp()(T(x), T(f)).dtype == np.float32
    assert nn.VecInt(3)(T(f)).dtype == np.float32


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_gradcheck_2d(mode):
    rng = np.random.default_rng(5)
    x = T(rng.standard_normal((1, 2, 5, 6)), True)
    # Away from integer displacements, where bilinear has kinks.
    f = T(rng.uniform(0.1, 0.4, size=(1, 2, 5, 6)) * rng.choice([-1, 1], (1, 2, 5, 6)), True)
    warp = nn.Warp(mode=mode, padding_mode="border")
    assert gradcheck(lambda a, b: warp(a, b), (x, f))


def test_gradcheck_3d():
    rng = np.random.default_rng(6)
    x = T(rng.standard_normal((1, 1, 3, 4, 4)), True)
    f = T(rng.uniform(0.1, 0.4, size=(1, 3, 3, 4, 4)), True)
    assert gradcheck(lambda a, b: nn.Warp()(a, b), (x, f))


def test_vecint_gradcheck():
    rng = np.random.default_rng(7)
    v = T(smooth_field(rng, (1, 2, 6, 6), 0.8) + 0.05, True)
    assert gradcheck(lambda a: nn.VecInt(3)(a), (v,))


def test_vecint_squaring_composes():
    # exp(2v) with n + 1 squarings is exactly exp(v) with n squarings composed with itself.
    v = smooth_field(np.random.default_rng(8), (1, 2, 12, 12), 1.0)
    u = nn.VecInt(4)(T(v))
    composed = u + nn.Warp()(u, u)
    np.testing.assert_array_equal(nn.VecInt(5)(T(2 * v)).numpy(), composed.numpy())


def test_vecint_inverse_for_small_fields():
    # exp(v) composed with exp(-v) is close to the identity (the displacement ~ 0).
    v = smooth_field(np.random.default_rng(9), (1, 2, 24, 24), 1.5)
    fwd, back = nn.VecInt(7)(T(v)).numpy(), nn.VecInt(7)(T(-v)).numpy()
    total = back + nn.Warp()(T(fwd), T(back)).numpy()
    inner = (slice(None), slice(None), slice(4, -4), slice(4, -4))
    assert np.abs(total[inner]).max() < 0.05 * np.abs(v).max()
    assert np.abs(fwd[inner]).max() > 0.5 * np.abs(v[inner]).max()  # it did move


def test_vecint_of_a_constant_field_is_that_translation():
    v = np.zeros((1, 3, 10, 10, 10))
    v[:, 0], v[:, 1], v[:, 2] = 1.5, -0.75, 0.5
    # Border padding keeps a constant field constant up to the edges (zeros padding would
    # shrink it there, and bilinear squaring spreads that inwards by a voxel per step).
    u = nn.VecInt(5, padding_mode="border")(T(v)).numpy()
    np.testing.assert_allclose(u, v, atol=1e-12)


def test_vecint_zero_steps_is_the_velocity():
    v = np.random.default_rng(10).standard_normal((1, 2, 4, 4))
    np.testing.assert_array_equal(nn.VecInt(0)(T(v)).numpy(), v)


def test_vecint_matches_torch(torch):
    v = smooth_field(np.random.default_rng(11), (2, 2, 10, 9), 2.0)
    vs = T(v, True)
    u = nn.VecInt(5)(vs)
    (u * u).sum().backward()
    vt = torch.tensor(v, requires_grad=True)
    ut = torch_vecint(torch, vt, 5)
    (ut * ut).sum().backward()
    np.testing.assert_allclose(u.numpy(), ut.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(vs.grad.numpy(), vt.grad.numpy(), atol=1e-8)


def test_spatial_transformer_is_warp():
    assert nn.SpatialTransformer is nn.Warp
    assert "bilinear" in repr(nn.Warp()) and "steps=7" in repr(nn.VecInt())


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: nn.Warp(mode="trilinear"), "mode must be one of"),
        (lambda: nn.Warp(padding_mode="constant"), "padding_mode must be one of"),
        (lambda: nn.VecInt(-1), "steps must be a non-negative integer"),
    ],
)
def test_bad_options(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_align_corners_must_be_bool():
    with pytest.raises(TypeError, match="align_corners must be True or False"):
        nn.Warp(align_corners=None)


@pytest.mark.parametrize(
    ("image", "flow", "match"),
    [
        ((1, 1, 4, 4), (1, 3, 4, 4), "flow must be"),
        ((1, 1, 4, 4), (1, 2, 4, 5), "must share N and the spatial sizes"),
        ((2, 1, 4, 4), (1, 2, 4, 4), "must share N"),
        ((1, 1, 4, 4, 4), (1, 2, 4, 4), "must share"),
    ],
)
def test_bad_shapes(image, flow, match):
    with pytest.raises(ValueError, match=match):
        nn.Warp()(T(np.zeros(image)), T(np.zeros(flow)))


def test_vecint_bad_shape():
    with pytest.raises(ValueError, match="velocity must be"):
        nn.VecInt()(T(np.zeros((1, 1, 4, 4))))
