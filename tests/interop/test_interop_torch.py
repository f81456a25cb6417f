"""to_torch / from_torch: same names, same bits, same outputs, same optimiser steps, for
the 2-D and the 3-D layers and UNets."""

import pickle

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn, optim
from sandbox.interop import from_torch, to_torch
from tests.support.interop_models import (
    TORCH_UNET_MODES,
    UNET_MODES,
    assert_state_bitwise,
    eval_output,
    every_3d_layer,
    make_unet,
    moved,
)

# PyTorch's interpolate has these on 5-D input; bicubic, Lanczos and antialias only in 2-D.
TORCH_3D_MODES = [("trilinear", {}), ("trilinear", {"align_corners": True}), ("nearest", {}),
                  ("nearest-exact", {}), ("area", {}), ("transposed", {})]
NOT_IN_TORCH_3D = [("bicubic", {}), ("lanczos3", {"antialias": True}),
                   ("trilinear", {"antialias": True}), ("cubic", {})]


def _torch_state(twin):
    return {k: v.detach().numpy() for k, v in twin.state_dict().items()}


def _every_layer(dtype):
    """A Sequential holding every layer type of sandbox.nn (2-D, shape-preserving enough)."""
    sandbox.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(2, 6, 3, stride=1, padding=2, dilation=2, groups=2, dtype=dtype),
        nn.BatchNorm2d(6, momentum=None, dtype=dtype),
        nn.LeakyReLU(0.2),
        nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1, dtype=dtype),
        nn.GroupNorm(2, 4, dtype=dtype),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        nn.Conv2d(4, 4, 1, bias=False, dtype=dtype),
        nn.BatchNorm2d(4, affine=False, dtype=dtype),
        nn.AvgPool2d(2, stride=1, padding=1, count_include_pad=False),
        nn.Dropout(0.3),
        nn.Dropout2d(0.2),
        nn.Identity(),
        nn.Upsample(size=(9, 7), mode="bicubic", align_corners=True),
        nn.AvgPool2d(2, divisor_override=3),
        nn.Linear(3, 5, dtype=dtype),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_layer_translates(torch, dtype):
    ours = _every_layer(dtype).eval()
    twin = to_torch(ours)
    assert_state_bitwise(_torch_state(twin), ours.state_dict())
    assert not twin.training
    x = np.random.default_rng(0).standard_normal((2, 2, 8, 8)).astype(dtype)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(theirs, eval_output(ours, x), **tol)


@pytest.mark.parametrize(
    ("mode", "opts", "shape"),
    [
        ("nearest", {"scale_factor": 1.7}, (1, 2, 5)),
        ("linear", {"size": 11, "align_corners": True}, (1, 2, 5)),
        ("trilinear", {"scale_factor": 2.0}, (1, 2, 3, 4, 5)),
        ("area", {"size": (3, 4)}, (2, 2, 9, 9)),
        ("nearest-exact", {"scale_factor": 0.6, "recompute_scale_factor": True}, (1, 1, 7, 9)),
        ("bilinear", {"size": (4, 5), "antialias": True}, (1, 2, 13, 16)),
        ("lanczos", {"size": (6, 20), "antialias": True}, (1, 2, 13, 8)),
    ],
)
def test_upsample_layers_translate(torch, mode, opts, shape):
    ours = nn.Upsample(mode=mode, **opts)
    x = np.random.default_rng(1).standard_normal(shape)
    with torch.no_grad():
        theirs = to_torch(ours)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(theirs, eval_output(ours, x), rtol=1e-10, atol=1e-12)


def test_round_trip_through_pytorch_is_bitwise(torch):
    ours = make_unet("bicubic", {"antialias": True}, norm="batch")
    other = make_unet("bicubic", {"antialias": True}, norm="batch", seed=7)
    from_torch(to_torch(ours), other)
    assert_state_bitwise(other.state_dict(), ours.state_dict())


def test_pytorch_model_to_sandbox_gives_same_outputs(torch, tmp_path):
    twin = to_torch(make_unet("nearest", norm="group"))
    torch.manual_seed(3)
    for m in twin.modules():  # PyTorch's own initialisation
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    torch.save(twin.state_dict(), tmp_path / "model.pt")
    ours = from_torch(torch.load(tmp_path / "model.pt"), make_unet("nearest", norm="group"))
    x = np.random.default_rng(4).standard_normal((2, 2, 16, 16)).astype(np.float32)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    ref = eval_output(ours, x)
    np.testing.assert_allclose(ref, theirs, rtol=0, atol=2e-6 * np.abs(theirs).max())


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_classic_unet_twin_equals_sandbox_and_pickles(torch, mode, tmp_path):
    ours = nn.ClassicUNet(1, 3, widths=(4, 8, 16), upsample=mode)
    twin = to_torch(ours)
    assert type(twin).__name__ == "ClassicUNet"
    assert list(twin.state_dict()) == list(ours.state_dict())
    x = np.random.default_rng(3).standard_normal((2, 1, 16, 16)).astype(np.float32)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    ref = eval_output(ours, x)
    np.testing.assert_allclose(theirs, ref, rtol=0, atol=2e-6 * np.abs(ref).max())
    torch.save(twin, tmp_path / "classic.pt")
    again = torch.load(tmp_path / "classic.pt", weights_only=False)
    assert type(again.ups[0]).__module__ == "sandbox.interop._torch_modules"


def test_whole_model_pickles(torch, tmp_path):
    twin = to_torch(make_unet("area"))
    torch.save(twin, tmp_path / "whole.pt")
    again = torch.load(tmp_path / "whole.pt", weights_only=False)
    assert type(again).__module__ == "sandbox.interop._torch_modules"
    x = torch.from_numpy(np.ones((1, 2, 16, 16), np.float32))
    with torch.no_grad():
        assert torch.equal(again.eval()(x), twin.eval()(x))
    assert pickle.loads(pickle.dumps(twin.inc)).conv1.weight.shape == twin.inc.conv1.weight.shape


def test_errors(torch):
    class Custom(nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(TypeError, match=r"to_torch cannot translate Custom \(at '1'\)"):
        to_torch(nn.Sequential(nn.ReLU(), Custom()))
    with pytest.raises(TypeError, match="sandbox.nn.Module"):
        to_torch(torch.nn.ReLU())
    with pytest.raises(KeyError, match="unexpected keys: 1.weight"):
        from_torch(torch.nn.Sequential(torch.nn.Conv2d(1, 1, 1), torch.nn.Conv2d(1, 1, 1)),
                   nn.Sequential(nn.Conv2d(1, 1, 1)))
    with pytest.raises(ValueError, match="dtype float32 given, model has float64"):
        from_torch(torch.nn.Conv2d(1, 1, 1), nn.Conv2d(1, 1, 1, dtype=np.float64))
    with pytest.raises(ValueError, match="numpy cannot hold"):
        from_torch(torch.nn.Conv2d(1, 1, 1).bfloat16(), nn.Conv2d(1, 1, 1))
    with pytest.raises(TypeError, match="state dict"):
        from_torch([1, 2], nn.Conv2d(1, 1, 1))


def test_missing_torch_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'cpu-train-sandbox\[torch\]'"):
        to_torch(nn.ReLU())


@pytest.mark.parametrize("layer", [
    lambda: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect", dtype=np.float64),
    lambda: nn.Conv2d(2, 3, 3, padding="same", padding_mode="circular", dtype=np.float64),
    lambda: nn.Conv3d(2, 3, 3, padding=1, padding_mode="replicate", dtype=np.float64),
])
def test_conv_padding_modes_translate(torch, layer):
    ours = layer()
    twin = to_torch(ours)
    assert twin.padding_mode == ours.padding_mode
    x = np.random.default_rng(2).standard_normal((1, 2) + (5,) * (ours.weight.ndim - 2))
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(theirs, ours(sandbox.tensor(x)).numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("spatial_dims", "mode", "opts", "size"), [
    *[(2, mode, opts, size) for size in (16, 21) for mode, opts in TORCH_UNET_MODES],
    *[(3, mode, opts, size) for size in (8, (9, 10, 11)) for mode, opts in TORCH_3D_MODES],
])
def test_unet_twin_equals_sandbox(torch, spatial_dims, mode, opts, size):
    ours = make_unet(mode, opts, spatial_dims=spatial_dims)
    twin = to_torch(ours)
    assert list(twin.state_dict()) == list(ours.state_dict())
    assert type(twin.inc.conv1).__name__ == f"Conv{spatial_dims}d"
    spatial = (size,) * spatial_dims if isinstance(size, int) else size
    batch = 3 if spatial_dims == 2 else 2
    x = np.random.default_rng(2).standard_normal((batch, 2, *spatial)).astype(np.float32)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    ref = eval_output(ours, x)
    np.testing.assert_allclose(theirs, ref, rtol=0, atol=2e-6 * np.abs(ref).max())
    if spatial_dims == 3:
        with pytest.raises(ValueError, match=r"\(N, 2, D, H, W\)"):
            twin(torch.zeros(1, 2, 8, 8))


@pytest.mark.parametrize(("spatial_dims", "mode", "opts"), [
    *[(2, mode, opts) for mode, opts in UNET_MODES if (mode, opts) not in TORCH_UNET_MODES],
    *[(3, mode, opts) for mode, opts in NOT_IN_TORCH_3D],
])
def test_modes_pytorch_lacks_are_refused(torch, spatial_dims, mode, opts):
    match = "PyTorch has no resampling mode.*to_onnx" if spatial_dims == 2 else "to_onnx"
    with pytest.raises(ValueError, match=match):
        to_torch(make_unet(mode, opts, spatial_dims=spatial_dims))


@pytest.mark.parametrize(
    ("spatial_dims", "mode", "opts", "norm"),
    [(2, "bilinear", {"align_corners": True}, "batch"),
     (2, "lanczos3", {"antialias": True}, "group"), (2, "transposed", {}, "none"),
     (3, "trilinear", {}, "batch"), (3, "transposed", {}, "group")],
)
def test_one_optimiser_step_matches(torch, spatial_dims, mode, opts, norm):
    """The exported model trains on: one AdamW step in PyTorch equals one here (float64),
    and the trained twin's weights come back bitwise."""
    ours = make_unet(mode, opts, norm=norm, dtype=np.float64, spatial_dims=spatial_dims).train()
    twin = to_torch(ours)
    assert twin.training
    batch, spatial = (3, (16, 16)) if spatial_dims == 2 else (2, (8, 8, 8))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((batch, 2, *spatial))
    y = rng.integers(0, 3, size=(batch, *spatial))
    opt = optim.AdamW(ours.parameters(), lr=1e-2, weight_decay=0.05)
    opt.zero_grad()
    F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y)).backward()
    opt.step()
    topt = torch.optim.AdamW(twin.parameters(), lr=1e-2, weight_decay=0.05)
    topt.zero_grad()
    torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    topt.step()
    theirs = _torch_state(twin)
    for key, value in ours.state_dict().items():
        np.testing.assert_allclose(value, theirs[key], rtol=1e-10, atol=1e-12, err_msg=key)
    other = make_unet(mode, opts, norm=norm, dtype=np.float64, spatial_dims=spatial_dims, seed=9)
    from_torch(twin, other)
    assert_state_bitwise(other.state_dict(), {k: np.asarray(v) for k, v in theirs.items()})


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_3d_layer_translates(torch, dtype):
    ours = moved(every_3d_layer(dtype), (2, 2, 7, 9, 8), dtype)
    twin = to_torch(ours)
    assert [type(m).__name__ for m in twin][:5] == [
        "Conv3d", "BatchNorm3d", "LeakyReLU", "ConvTranspose3d", "GroupNorm"]
    assert_state_bitwise({k: v.numpy() for k, v in twin.state_dict().items()},
                         ours.state_dict())
    x = np.random.default_rng(1).standard_normal((3, 2, 7, 9, 8)).astype(dtype)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(theirs, eval_output(ours, x), **tol)
