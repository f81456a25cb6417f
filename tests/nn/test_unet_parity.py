"""The same UNet in the sandbox and in PyTorch (2-D and 3-D): same loss, gradients and Adam
steps; and the 3-D layers: parity with PyTorch, gradients, errors."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn, optim
from sandbox.autograd.gradcheck import gradcheck
from sandbox.interop import to_torch

# (sandbox upsample mode, options) that PyTorch can mirror, in 2-D and in 3-D.
MODES = {
    2: [
        ("bilinear", {}),
        ("bilinear", {"align_corners": True}),
        ("bilinear", {"antialias": True}),
        ("nearest", {}),
        ("nearest-exact", {}),
        ("bicubic", {}),
        ("area", {}),
        ("lanczos3", {"antialias": True}),
        ("transposed", {}),
    ],
    3: [
        ("trilinear", {}),
        ("trilinear", {"align_corners": True}),
        ("transposed", {}),
        ("nearest", {}),
        ("nearest-exact", {}),
        ("area", {}),
    ],
}
#: a small 2-D net of base width 4; a smaller 3-D one (base width 2)
BASE_WIDTH = {2: 4, 3: 2}


def _pair(torch, mode, opts, dtype, norm="batch", size=(16, 16), spatial_dims=2):
    sandbox.manual_seed(0)
    ours = nn.UNet(2, 3, depth=2, base_width=BASE_WIDTH[spatial_dims], upsample=mode, norm=norm,
                   dtype=dtype, spatial_dims=spatial_dims, **opts)
    theirs = to_torch(ours)  # the architecture's PyTorch copy (sandbox.interop), same weights
    assert next(theirs.parameters()).dtype == (torch.float64 if dtype == np.float64
                                               else torch.float32)
    if spatial_dims == 3:
        assert theirs.spatial_dims == 3
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, *size)).astype(dtype)
    y = rng.integers(0, 3, size=(2, *size))
    return ours, theirs, x, y


def _tols(dtype):
    return dict(rtol=1e-9, atol=1e-11) if dtype == np.float64 else dict(rtol=2e-3, atol=2e-5)


TOL = _tols(np.float64)


def _size(spatial_dims, mode):
    if spatial_dims == 2:
        return (16, 16)
    # an odd depth exercises the edge effects (and the transposed path's padding)
    return (6, 8, 9) if mode != "area" else (8, 8, 8)


@pytest.mark.parametrize(
    ("spatial_dims", "mode", "opts", "dtype"),
    [*[(2, mode, opts, dtype) for dtype in (np.float64, np.float32) for mode, opts in MODES[2]],
     *[(3, mode, opts, np.float64) for mode, opts in MODES[3]]],
)
def test_unet_loss_and_gradients_match_torch(torch, spatial_dims, mode, opts, dtype):
    ours, theirs, x, y = _pair(torch, mode, opts, dtype, size=_size(spatial_dims, mode),
                               spatial_dims=spatial_dims)
    assert dict(ours.state_dict()).keys() == theirs.state_dict().keys()
    loss = F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y))
    loss.backward()
    tloss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
    tloss.backward()
    tol = _tols(dtype)
    np.testing.assert_allclose(loss.item(), tloss.item(), **tol)
    tgrads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        ref = tgrads[name].grad.numpy()
        scale = max(np.abs(ref).max(), 1e-6)
        np.testing.assert_allclose(p.grad.numpy() / scale, ref / scale, err_msg=name, **tol)
    # Running statistics were updated identically.
    tstate = theirs.state_dict()
    for name, value in ours.state_dict().items():
        if "running" in name:
            np.testing.assert_allclose(value, tstate[name].numpy(), err_msg=name, **tol)


@pytest.mark.parametrize("norm", ["batch", "group", "none"])
@pytest.mark.parametrize(("spatial_dims", "mode", "opts", "steps"), [
    (2, "bilinear", {}, 3), (2, "transposed", {}, 3), (3, "trilinear", {}, 2)])
def test_unet_adam_steps_match_torch(torch, spatial_dims, mode, opts, steps, norm):
    dtype = np.float64
    size = (16, 16) if spatial_dims == 2 else (8, 8, 8)
    ours, theirs, x, y = _pair(torch, mode, opts, dtype, norm=norm, size=size,
                               spatial_dims=spatial_dims)
    opt = optim.Adam(ours.parameters(), lr=1e-2)
    topt = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y)).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.cross_entropy(
            theirs(torch.from_numpy(x)), torch.from_numpy(y)
        ).backward()
        topt.step()
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.numpy(), tparams[name].detach().numpy(), rtol=1e-8, atol=1e-10, err_msg=name
        )
    # Eval mode uses the running statistics in both.
    ours.eval()
    theirs.eval()
    out = ours(sandbox.tensor(x)).numpy()
    ref = theirs(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-8, atol=1e-10)


# Modes PyTorch lacks in 3-D: the input gradient of a tiny float64 UNet by finite differences.
@pytest.mark.parametrize(("mode", "opts"), [
    ("bicubic", {}),
    ("lanczos3", {}),
    ("lanczos3", {"antialias": True}),
    ("bicubic", {"antialias": True, "align_corners": False}),
    ("cubic", {}),
])
def test_unet3d_gradcheck_modes_torch_lacks(mode, opts):
    sandbox.manual_seed(0)
    model = nn.UNet(1, 2, depth=1, base_width=2, upsample=mode, norm="group", dtype=np.float64,
                    spatial_dims=3, **opts)
    rng = np.random.default_rng(2)
    x = sandbox.Tensor(rng.standard_normal((1, 1, 4, 4, 6)), requires_grad=True)
    assert gradcheck(lambda t: model(t), (x,))


@pytest.mark.parametrize(("mode", "opts"), [
    ("bicubic", {}),
    ("lanczos3", {"antialias": True}),
    ("cubic", {"align_corners": True}),
])
def test_unet3d_forward_matches_the_float64_reference_resize(mode, opts, rng, monkeypatch):
    """A whole 3-D UNet forward, against the same model whose decoder resizes with the
    dense float64 reference matrices written from the formulas (docs/design.md §2)."""
    from sandbox.array.resample import reference

    sandbox.manual_seed(0)
    model = nn.UNet(2, 3, depth=2, base_width=2, upsample=mode, norm="batch",
                    dtype=np.float64, spatial_dims=3, **opts)
    x = sandbox.tensor(rng.standard_normal((2, 2, 6, 8, 5)))
    ours = model(x).numpy()

    calls = []

    def reference_interpolate(t, size, mode, align_corners=None, antialias=False):
        calls.append(size)
        mats = [reference.axis_matrix(mode, n, m, None, bool(align_corners), antialias)
                for n, m in zip(t.shape[2:], size, strict=True)]
        return sandbox.tensor(reference.reference_resize(t.numpy(), mats))

    monkeypatch.setattr(F, "interpolate", reference_interpolate)
    sandbox.manual_seed(0)
    twin = nn.UNet(2, 3, depth=2, base_width=2, upsample=mode, norm="batch",
                   dtype=np.float64, spatial_dims=3, **opts)
    np.testing.assert_allclose(ours, twin(x).numpy(), rtol=1e-10, atol=1e-12)
    assert calls == [(3, 4, 2), (6, 8, 5)]  # both decoder levels went through the reference


@pytest.mark.parametrize("module, kwargs, shape", [
    ("Conv3d", dict(in_channels=4, out_channels=6, kernel_size=(3, 2, 3), stride=(1, 2, 1),
                    padding=(1, 0, 1), dilation=(2, 1, 1), groups=2), (2, 4, 6, 5, 7)),
    ("ConvTranspose3d", dict(in_channels=4, out_channels=6, kernel_size=3, stride=2, padding=1,
                             output_padding=(1, 0, 1), groups=2), (2, 4, 3, 4, 3)),
    ("MaxPool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True), (2, 3, 5, 6, 7)),
    ("AvgPool3d", dict(kernel_size=(2, 3, 2), stride=(2, 1, 2), padding=(1, 1, 0),
                       ceil_mode=True, count_include_pad=False), (2, 3, 5, 6, 7)),
    ("BatchNorm3d", dict(num_features=3), (2, 3, 4, 3, 5)),
    ("GroupNorm", dict(num_groups=2, num_channels=4), (2, 4, 3, 3, 5)),
    ("Upsample", dict(scale_factor=2, mode="trilinear"), (1, 2, 3, 4, 5)),
    ("Upsample", dict(size=(4, 6, 3), mode="nearest"), (1, 2, 3, 4, 5)),
])
def test_layers_match_torch(module, kwargs, shape, rng, torch):
    sandbox.manual_seed(3)
    params = dict(kwargs)
    if module not in ("MaxPool3d", "AvgPool3d", "Upsample"):
        params["dtype"] = np.float64
    ours = getattr(nn, module)(**params)
    theirs = getattr(torch.nn, module)(**kwargs).to(torch.float64)
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in
                            ours.state_dict().items()})
    x = rng.standard_normal(shape)
    sx, tx = sandbox.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    sy, ty = ours(sx), theirs(tx)
    gy = rng.standard_normal(ty.shape)
    (sy * sandbox.Tensor(gy)).sum().backward()
    ty.backward(torch.tensor(gy))
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **TOL)
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), **TOL)
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[name].grad.numpy(), err_msg=name, **TOL)
    for name, value in ours.state_dict().items():
        np.testing.assert_allclose(value, theirs.state_dict()[name].numpy(), err_msg=name, **TOL)


def test_batchnorm3d_is_not_a_batchnorm2d():
    """Exporters map BatchNorm2d to torch's 2-D class; the 3-D layer must not match it."""
    m = nn.BatchNorm3d(2, track_running_stats=False)
    assert not isinstance(m, nn.BatchNorm2d)
    assert m.running_mean is None and dict(m.named_parameters()).keys() == {"weight", "bias"}
    assert repr(m) == ("BatchNorm3d(2, eps=1e-05, momentum=0.1, affine=True, "
                       "track_running_stats=False)")


def test_batchnorm3d_eval_uses_running_stats(rng, torch):
    ours = nn.BatchNorm3d(3, momentum=None, dtype=np.float64)
    theirs = torch.nn.BatchNorm3d(3, momentum=None).to(torch.float64)
    for _ in range(3):
        x = rng.standard_normal((2, 3, 2, 3, 4)) * 3 + 1
        ours(sandbox.tensor(x))
        theirs(torch.from_numpy(x))
    ours.eval()
    theirs.eval()
    x = rng.standard_normal((2, 3, 2, 3, 4))
    np.testing.assert_allclose(ours(sandbox.tensor(x)).numpy(),
                               theirs(torch.from_numpy(x)).detach().numpy(), **TOL)


@pytest.mark.parametrize("make, exc, match", [
    (lambda: nn.UNet(1, 2, spatial_dims=4), ValueError, "spatial_dims must be 2 or 3"),
    (lambda: nn.UNet(1, 2, depth=1, spatial_dims=3)(sandbox.tensor(np.zeros((1, 1, 4, 4)))),
     ValueError, r"UNet expects input of shape \(N, 1, D, H, W\)"),
    (lambda: nn.UNet(1, 2, depth=1)(sandbox.tensor(np.zeros((1, 1, 4, 4, 4)))),
     ValueError, r"UNet expects input of shape \(N, 1, H, W\)"),
    (lambda: nn.BatchNorm3d(2)(sandbox.tensor(np.zeros((2, 2, 4, 4), np.float32))),
     ValueError, r"BatchNorm3d expects a 5-D input"),
    (lambda: nn.Conv3d(2, 4, (3, 3)), TypeError, "kernel_size must be an int or a triple"),
    (lambda: nn.Conv3d(2, 3, 3, groups=2), ValueError, "groups=2 must divide"),
    (lambda: nn.ConvTranspose3d(2, 4, 2, stride=0), ValueError, "stride must be positive"),
    (lambda: nn.MaxPool3d(2)(sandbox.tensor(np.zeros((4, 4), np.float32))),
     ValueError, "input must be 4-D"),
])
def test_validation(make, exc, match):
    with pytest.raises(exc, match=match):
        make()
