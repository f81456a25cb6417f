"""Weights as safetensors: bitwise round trips, PyTorch's names, clear errors."""

import subprocess
import sys

import numpy as np
import pytest

from sandbox import nn
from sandbox.interop import read_weights
from tests.support.interop_models import assert_state_bitwise, eval_output, make_unet


@pytest.mark.parametrize("norm", ["batch", "group", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_trip_is_bitwise(safetensors, tmp_path, dtype, norm):
    model = make_unet(norm=norm, dtype=dtype)
    path = model.save_weights(tmp_path / "w.safetensors")
    other = make_unet(norm=norm, dtype=dtype, seed=1)
    assert other.load_weights(path) == ([], [])
    assert_state_bitwise(other.state_dict(), model.state_dict())
    x = np.random.default_rng(0).standard_normal((2, 2, 16, 16)).astype(dtype)
    assert eval_output(other, x).tobytes() == eval_output(model, x).tobytes()


def test_file_holds_pytorch_names_and_dtypes(safetensors, tmp_path):
    model = make_unet()
    path = model.save_weights(tmp_path / "w.safetensors", metadata={"note": "hello"})
    arrays, header = read_weights(path)
    assert header == {"format": "pt", "note": "hello"}
    assert sorted(arrays) == sorted(model.state_dict())
    nbt = arrays["inc.norm1.num_batches_tracked"]
    assert nbt.dtype == np.int64 and nbt.shape == () and int(nbt) == 2
    assert arrays["inc.conv1.weight"].dtype == np.float32
    assert "inc.conv1.bias" not in arrays  # no bias before a norm layer, as in PyTorch


def test_file_loads_into_the_pytorch_twin(safetensors, torch, tmp_path):
    from safetensors.torch import load_file

    from sandbox.interop import to_torch

    model = make_unet()
    path = model.save_weights(tmp_path / "w.safetensors")
    twin = to_torch(make_unet(seed=3))
    twin.load_state_dict(load_file(str(path)), strict=True)
    assert list(twin.state_dict()) == list(model.state_dict())  # state_dict order
    assert twin.state_dict()["inc.norm1.num_batches_tracked"].dtype == torch.int64
    x = np.random.default_rng(0).standard_normal((2, 2, 16, 16)).astype(np.float32)
    with torch.no_grad():
        theirs = twin.eval()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(theirs, eval_output(model, x), rtol=1e-5, atol=1e-6)


def test_file_written_by_pytorch_loads_here(safetensors, torch, tmp_path):
    from safetensors.torch import save_file

    from sandbox.interop import to_torch

    twin = to_torch(make_unet())
    torch.manual_seed(0)
    with torch.no_grad():
        for p in twin.parameters():
            p.normal_()
    save_file(twin.state_dict(), str(tmp_path / "t.safetensors"))
    model = make_unet(seed=5)
    model.load_weights(tmp_path / "t.safetensors")
    expected = {k: v.numpy() for k, v in twin.state_dict().items()}
    assert_state_bitwise(model.state_dict(), expected)


def test_missing_and_unexpected_keys(safetensors, tmp_path):
    small = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3))
    path = small.save_weights(tmp_path / "w.safetensors")
    bigger = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Conv2d(3, 1, 1))
    before = bigger.state_dict()
    with pytest.raises(KeyError, match=r"missing keys: 2\.weight, 2\.bias"):
        bigger.load_weights(path)
    assert_state_bitwise(bigger.state_dict(), before)  # nothing changed
    with pytest.raises(KeyError, match=r"unexpected keys: .*1\.running_mean"):
        nn.Sequential(nn.Conv2d(2, 3, 3), nn.GroupNorm(1, 3)).load_weights(path)
    missing, unexpected = bigger.load_weights(path, strict=False)
    assert missing == ["2.weight", "2.bias"] and unexpected == []
    np.testing.assert_array_equal(bigger[0].weight.numpy(), small[0].weight.numpy())


def test_shape_and_dtype_mismatches(safetensors, tmp_path):
    path = nn.Sequential(nn.Conv2d(2, 3, 3)).save_weights(tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match=r"0\.weight: shape \(3, 2, 3, 3\) given, model has "
                                         r"\(4, 2, 3, 3\)"):
        nn.Sequential(nn.Conv2d(2, 4, 3)).load_weights(path)
    with pytest.raises(ValueError, match=r"0\.weight: dtype float32 given, model has float64"):
        nn.Sequential(nn.Conv2d(2, 3, 3, dtype=np.float64)).load_weights(path)


def test_bad_files(safetensors, tmp_path):
    model = nn.Conv2d(1, 1, 1)
    with pytest.raises(FileNotFoundError, match="not found"):
        model.load_weights(tmp_path / "nothing.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"this is not a safetensors file at all")
    with pytest.raises(ValueError, match="is not a safetensors file"):
        model.load_weights(junk)
    with pytest.raises(TypeError, match="metadata must map str to str"):
        model.save_weights(tmp_path / "w.safetensors", metadata={"n": 1})


def test_missing_package_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match=r"pip install 'cpu-train-sandbox\[interop\]'"):
        nn.Conv2d(1, 1, 1).save_weights(tmp_path / "w.safetensors")


def test_import_sandbox_stays_light():
    code = (
        "import sys, sandbox, sandbox.nn, sandbox.interop, sandbox.cli\n"
        "sandbox.cli.build_parser()\n"
        "heavy = [m for m in ('torch', 'onnx', 'onnxruntime', 'safetensors') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_unet3d_safetensors_round_trip(safetensors, tmp_path):
    model = make_unet("lanczos3", {"antialias": True}, spatial_dims=3)
    path = model.save_weights(tmp_path / "w.safetensors")
    other = make_unet("lanczos3", {"antialias": True}, spatial_dims=3, seed=1)
    assert other.load_weights(path) == ([], [])
    assert_state_bitwise(other.state_dict(), model.state_dict())
    with pytest.raises(ValueError, match="inc.conv1.weight"):
        make_unet(spatial_dims=2).load_weights(path)  # 3x3 kernels cannot take 3x3x3 ones
