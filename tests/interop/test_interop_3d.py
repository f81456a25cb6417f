"""Interop of volumes: the 3-D layers and UNet(spatial_dims=3) through safetensors, to_torch,
to_onnx and ``sandbox export``."""

import json

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn, optim
from sandbox.cli.commands import main
from sandbox.interop import architecture, from_torch, run_onnx, to_onnx, to_torch
from sandbox.interop._cli import load_checkpoint_model
from tests.support.interop_models import assert_state_bitwise, eval_output, make_unet

# PyTorch's interpolate has these on 5-D input; bicubic, Lanczos and antialias only in 2-D.
TORCH_3D_MODES = [("trilinear", {}), ("trilinear", {"align_corners": True}), ("nearest", {}),
                  ("nearest-exact", {}), ("area", {}), ("transposed", {})]
NOT_IN_TORCH_3D = [("bicubic", {}), ("lanczos3", {"antialias": True}),
                   ("trilinear", {"antialias": True}), ("cubic", {})]


def _every_3d_layer(dtype=np.float32, running_stats=True):
    sandbox.manual_seed(0)
    return nn.Sequential(
        nn.Conv3d(2, 6, 3, stride=(1, 2, 1), padding=2, dilation=2, groups=2, dtype=dtype),
        nn.BatchNorm3d(6, dtype=dtype),
        nn.LeakyReLU(0.2),
        nn.ConvTranspose3d(6, 4, 3, stride=2, padding=1, output_padding=1, dtype=dtype),
        nn.GroupNorm(2, 4, dtype=dtype),
        nn.ReLU(),
        nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True),
        nn.BatchNorm3d(4, affine=False, track_running_stats=running_stats, dtype=dtype),
        nn.AvgPool3d(2, stride=1, padding=1, count_include_pad=False),
        nn.Upsample(size=(5, 6, 7), mode="trilinear"),
        nn.AvgPool3d(2, divisor_override=3),
        nn.Conv3d(4, 3, 1, dtype=dtype),
    )


def _moved(model, shape, dtype=np.float32):
    """``model`` in eval mode after two training-mode batches moved its running statistics."""
    model.train()
    rng = np.random.default_rng(0)
    with sandbox.no_grad():
        for _ in range(2):
            model(sandbox.tensor(rng.standard_normal(shape).astype(dtype)))
    return model.eval()


# --------------------------------------------------------------------------- PyTorch

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_3d_layer_translates(torch, dtype):
    ours = _moved(_every_3d_layer(dtype), (2, 2, 7, 9, 8), dtype)
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


@pytest.mark.parametrize(("mode", "opts"), TORCH_3D_MODES)
@pytest.mark.parametrize("size", [8, (9, 10, 11)])
def test_unet3d_twin_equals_sandbox(torch, mode, opts, size):
    ours = make_unet(mode, opts, spatial_dims=3)
    twin = to_torch(ours)
    assert list(twin.state_dict()) == list(ours.state_dict())
    assert type(twin.inc.conv1).__name__ == "Conv3d"
    spatial = (size,) * 3 if isinstance(size, int) else size
    x = np.random.default_rng(2).standard_normal((2, 2, *spatial)).astype(np.float32)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    ref = eval_output(ours, x)
    np.testing.assert_allclose(theirs, ref, rtol=0, atol=2e-6 * np.abs(ref).max())
    with pytest.raises(ValueError, match=r"\(N, 2, D, H, W\)"):
        twin(torch.zeros(1, 2, 8, 8))


@pytest.mark.parametrize(("mode", "opts"), NOT_IN_TORCH_3D)
def test_modes_pytorch_lacks_in_3d_are_refused(torch, mode, opts):
    with pytest.raises(ValueError, match="to_onnx"):
        to_torch(make_unet(mode, opts, spatial_dims=3))


@pytest.mark.parametrize(("mode", "norm"), [("trilinear", "batch"), ("transposed", "group")])
def test_unet3d_optimiser_step_matches_and_round_trips(torch, mode, norm):
    ours = make_unet(mode, norm=norm, dtype=np.float64, spatial_dims=3).train()
    twin = to_torch(ours)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 2, 8, 8, 8))
    y = rng.integers(0, 3, size=(2, 8, 8, 8))
    opt = optim.AdamW(ours.parameters(), lr=1e-2, weight_decay=0.05)
    F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y)).backward()
    opt.step()
    topt = torch.optim.AdamW(twin.parameters(), lr=1e-2, weight_decay=0.05)
    torch.nn.functional.cross_entropy(twin(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    topt.step()
    theirs = {k: v.detach().numpy() for k, v in twin.state_dict().items()}
    for key, value in ours.state_dict().items():
        np.testing.assert_allclose(value, theirs[key], rtol=1e-10, atol=1e-12, err_msg=key)
    other = make_unet(mode, norm=norm, dtype=np.float64, spatial_dims=3, seed=9)
    from_torch(twin, other)
    assert_state_bitwise(other.state_dict(), {k: np.asarray(v) for k, v in theirs.items()})


# --------------------------------------------------------------------------- safetensors

def test_unet3d_safetensors_round_trip(safetensors, tmp_path):
    model = make_unet("lanczos3", {"antialias": True}, spatial_dims=3)
    path = model.save_weights(tmp_path / "w.safetensors")
    other = make_unet("lanczos3", {"antialias": True}, spatial_dims=3, seed=1)
    assert other.load_weights(path) == ([], [])
    assert_state_bitwise(other.state_dict(), model.state_dict())
    with pytest.raises(ValueError, match="inc.conv1.weight"):
        make_unet(spatial_dims=2).load_weights(path)  # 3x3 kernels cannot take 3x3x3 ones


# --------------------------------------------------------------------------- ONNX

@pytest.mark.parametrize(("mode", "opts"), [
    ("trilinear", {}), ("nearest", {}), ("area", {}), ("transposed", {}), ("bicubic", {}),
    ("lanczos3", {"antialias": True}),
])
def test_unet3d_matches_onnx_runtime(onnx, onnxruntime, tmp_path, mode, opts):
    model = make_unet(mode, opts, spatial_dims=3)
    shape = (1, 2, 9, 10, 11)  # odd sizes: the decoder resamples (or pads) to the skip's size
    path = to_onnx(model, shape, tmp_path / "u.onnx")
    for batch in (1, 2):
        x = np.random.default_rng(batch).standard_normal((batch, *shape[1:])).astype(np.float32)
        ref = eval_output(model, x)
        assert np.abs(run_onnx(path, x) - ref).max() <= 1e-6 * np.abs(ref).max()
    with pytest.raises(ValueError, match=r"\(N, 2, D, H, W\)"):
        to_onnx(model, (1, 2, 16, 16), tmp_path / "bad.onnx")


def test_every_3d_layer_matches_onnx_runtime(onnx, onnxruntime, tmp_path):
    # One batch norm without running statistics: the batch's own, even in eval mode.
    model = _moved(_every_3d_layer(running_stats=False), (2, 2, 7, 9, 8))
    path = to_onnx(model, (1, 2, 7, 9, 8), tmp_path / "layers.onnx")
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 7, 9, 8)).astype(np.float32)
        ref = eval_output(model, x)
        assert np.abs(run_onnx(path, x) - ref).max() <= 1e-5 * np.abs(ref).max()


# --------------------------------------------------------------------------- sandbox export

@pytest.fixture(scope="module")
def ckpt3d(tmp_path_factory):
    out = tmp_path_factory.mktemp("run3d")
    assert main(["train", "--data", "shapes3d", "--steps", "2", "--out", str(out),
                 "--image-size", "16", "--depth", "2", "--width", "4", "--batch-size", "2",
                 "--train-samples", "4", "--val-samples", "2", "--quiet", "--no-plots"]) == 0
    return out / "best.ckpt"


def test_export_3d_checkpoint(torch, safetensors, onnx, onnxruntime, ckpt3d, tmp_path, capsys):
    model, _ = load_checkpoint_model(ckpt3d)
    assert model.spatial_dims == 3 and architecture(model)["kwargs"]["spatial_dims"] == 3
    x = np.random.default_rng(0).standard_normal((2, 1, 16, 12, 8)).astype(np.float32)
    ref = eval_output(model, x)

    assert main(["export", str(ckpt3d), "--to", "torch", "--out", str(tmp_path / "m.pt")]) == 0
    arch = json.loads((tmp_path / "m.json").read_text())
    twin = to_torch(nn.UNet(**arch["kwargs"])).eval()
    twin.load_state_dict(torch.load(tmp_path / "m.pt"))
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(theirs, ref, rtol=0, atol=2e-6 * np.abs(ref).max())

    out = tmp_path / "m.onnx"
    assert main(["export", str(ckpt3d), "--to", "onnx", "--out", str(out),
                 "--size", "16", "12", "8"]) == 0
    assert "shape (batch, 1, 16, 12, 8)" in capsys.readouterr().out
    assert np.abs(run_onnx(out, x) - ref).max() <= 1e-6 * np.abs(ref).max()
    assert main(["export", str(ckpt3d), "--to", "onnx", "--out", str(out),
                 "--overwrite"]) == 0
    assert "shape (batch, 1, 16, 16, 16)" in capsys.readouterr().out  # the training size
    assert main(["export", str(ckpt3d), "--to", "onnx", "--out", str(out),
                 "--size", "16", "16"]) == 2
    assert "one or three positive ints" in capsys.readouterr().err
