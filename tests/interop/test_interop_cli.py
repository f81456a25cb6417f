"""sandbox export: a trained checkpoint out as safetensors, PyTorch and ONNX."""

import json
import sys

import numpy as np
import pytest

from sandbox import nn
from sandbox.cli.commands import main
from sandbox.interop import architecture, run_onnx, to_torch
from sandbox.interop._cli import load_checkpoint_model
from sandbox.train import checkpoint
from tests.support.interop_models import assert_state_bitwise, eval_output, make_unet

TINY = ["--image-size", "16", "--depth", "2", "--width", "4", "--train-samples", "8",
        "--val-samples", "4", "--batch-size", "4", "--quiet", "--no-plots"]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    assert main(["train", "--steps", "2", "--out", str(out), "--upsample", "lanczos3",
                 "--antialias", *TINY]) == 0
    return out / "best.ckpt"


def test_export_safetensors(safetensors, ckpt, tmp_path, capsys):
    out = tmp_path / "w.safetensors"
    assert main(["export", str(ckpt), "--to", "safetensors", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    model, _ = load_checkpoint_model(ckpt)
    from sandbox.interop import read_weights

    _, header = read_weights(out)
    arch = json.loads(header["sandbox.architecture"])
    again = nn.UNet(**arch["kwargs"])
    again.load_weights(out)
    assert_state_bitwise(again.state_dict(), model.state_dict())


def test_export_torch(torch, ckpt, tmp_path, capsys):
    from sandbox.interop import to_torch

    assert main(["export", str(ckpt), "--to", "torch", "--out", str(tmp_path / "m.pt")]) == 0
    capsys.readouterr()
    arch = json.loads((tmp_path / "m.json").read_text())
    assert arch["kwargs"]["upsample"] == "lanczos3" and arch["kwargs"]["antialias"] is True
    twin = to_torch(nn.UNet(**arch["kwargs"])).eval()
    twin.load_state_dict(torch.load(tmp_path / "m.pt"))
    model, _ = load_checkpoint_model(ckpt)
    x = np.random.default_rng(0).standard_normal((2, 1, 16, 16)).astype(np.float32)
    with torch.no_grad():
        theirs = twin(torch.from_numpy(x)).numpy()
    ref = eval_output(model, x)
    np.testing.assert_allclose(theirs, ref, rtol=0, atol=2e-6 * np.abs(ref).max())


def test_a_trained_checkpoint_matches_onnx_runtime_within_the_trained_tolerance(
        onnx, onnxruntime, tmp_path, capsys):
    from sandbox.interop import run_onnx
    from tests.interop.test_interop_onnx import RTOL_TRAINED

    run = tmp_path / "run"
    assert main(["train", "--epochs", "3", "--lr", "0.05", "--out", str(run), *TINY]) == 0
    out = tmp_path / "m.onnx"
    assert main(["export", str(run / "best.ckpt"), "--to", "onnx", "--out", str(out)]) == 0
    capsys.readouterr()
    model, _ = load_checkpoint_model(run / "best.ckpt")
    x = np.random.default_rng(2).standard_normal((4, 1, 16, 16)).astype(np.float32)
    ref = eval_output(model, x)
    # relative to the output's scale: the error of float32 sums grows with it
    assert np.abs(run_onnx(out, x) - ref).max() <= RTOL_TRAINED * np.abs(ref).max()


def test_export_onnx(onnx, onnxruntime, ckpt, tmp_path, capsys):
    from sandbox.interop import run_onnx

    out = tmp_path / "m.onnx"
    assert main(["export", str(ckpt), "--to", "onnx", "--out", str(out), "--size", "24"]) == 0
    printed = capsys.readouterr().out
    assert "shape (batch, 1, 24, 24)" in printed and "ONNX Runtime output vs sandbox" in printed
    model, _ = load_checkpoint_model(ckpt)
    x = np.random.default_rng(1).standard_normal((3, 1, 24, 24)).astype(np.float32)
    ref = eval_output(model, x)
    # a checkpoint, trained if only for 2 steps: the trained tolerance
    assert np.abs(run_onnx(out, x) - ref).max() <= 1e-5 * np.abs(ref).max()


def test_default_output_name(safetensors, ckpt, tmp_path, capsys):
    copy = tmp_path / "model.ckpt"
    copy.write_bytes(ckpt.read_bytes())
    assert main(["export", str(copy), "--to", "safetensors"]) == 0
    assert (tmp_path / "model.safetensors").is_file()


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda d: d / "missing.ckpt", "checkpoint not found"),
        (lambda d: checkpoint.save({"x": 1}, d / "other.ckpt"), "is not a training checkpoint"),
    ],
)
def test_bad_checkpoints_give_one_line(tmp_path, capsys, make, match):
    assert main(["export", str(make(tmp_path)), "--to", "safetensors"]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and err.startswith("sandbox export: error:") and "\n" not in err


def test_missing_extra_gives_one_line(ckpt, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    assert main(["export", str(ckpt), "--to", "onnx", "--out", str(tmp_path / "m.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert "pip install 'cpu-train-sandbox[interop]'" in err and "\n" not in err


def test_architecture_rebuilds_the_unet():
    from sandbox.interop import architecture

    model = make_unet("bicubic", {"align_corners": True}, norm="group", dtype=np.float64)
    arch = json.loads(json.dumps(architecture(model)))
    assert arch["class"] == "UNet" and arch["kwargs"]["dtype"] == "float64"
    again = nn.UNet(**arch["kwargs"])
    assert repr(again) == repr(model)
    with pytest.raises(TypeError, match="describes a sandbox.nn.UNet"):
        architecture(nn.ReLU())


# ------------------------------------------- export never replaces what it was not told to
def _export(capsys, *argv):
    status = main(["export", *map(str, argv)])
    return status, capsys.readouterr()


@pytest.mark.parametrize("fmt", ["safetensors", "torch", "onnx"])
def test_export_refuses_its_input_and_existing_files(ckpt, tmp_path, capsys, fmt):
    from tests.support.cli_helpers import assert_one_line_error

    run = tmp_path / "run"
    run.mkdir()
    own = run / "good.ckpt"
    own.write_bytes(ckpt.read_bytes())
    original = own.read_bytes()
    status, cap = _export(capsys, own, "--to", fmt, "--out", own)
    assert_one_line_error(status, cap.err, "--out", command="export")  # extension or input
    status, cap = _export(capsys, own, "--to", fmt, "--out", own, "--overwrite")
    assert_one_line_error(status, cap.err, command="export")
    assert own.read_bytes() == original
    # another run's checkpoint and an unrelated image: existing files are refused
    suffix = {"safetensors": ".safetensors", "torch": ".pt", "onnx": ".onnx"}[fmt]
    for name in ("other.ckpt", "picture.png", "model" + suffix):
        other = tmp_path / name
        other.write_bytes(b"keep me")
        status, cap = _export(capsys, own, "--to", fmt, "--out", other)
        assert_one_line_error(status, cap.err, str(other), command="export")
        assert other.read_bytes() == b"keep me"


def test_export_checks_the_extension_and_names_every_file(torch, ckpt, tmp_path, capsys):
    from tests.support.cli_helpers import assert_one_line_error

    status, cap = _export(capsys, ckpt, "--to", "onnx", "--out", tmp_path / "m.pt")
    assert_one_line_error(status, cap.err, "ONNX files take the extension .onnx",
                          command="export")
    out = tmp_path / "m.pt"
    (tmp_path / "m.json").write_text("{}")  # the architecture file would replace this
    status, cap = _export(capsys, ckpt, "--to", "torch", "--out", out)
    assert_one_line_error(status, cap.err, "m.json", "its architecture file", "--overwrite",
                          command="export")
    assert not out.exists() and (tmp_path / "m.json").read_text() == "{}"
    status, cap = _export(capsys, ckpt, "--to", "torch", "--out", out, "--overwrite")
    assert status == 0
    assert str(out) in cap.out and str(tmp_path / "m.json") in cap.out
    assert json.loads((tmp_path / "m.json").read_text())["kwargs"]


@pytest.mark.parametrize("argv, flag", [
    (["--to", "safetensors", "--size", "64"], "--size"),
    (["--to", "torch", "--resize", "matmul"], "--resize"),
])
def test_export_options_of_another_format_are_refused(ckpt, tmp_path, capsys, argv, flag):
    from tests.support.cli_helpers import assert_one_line_error

    status, cap = _export(capsys, ckpt, *argv, "--out", tmp_path / "x")
    assert_one_line_error(status, cap.err, f"{flag} applies to --to onnx only",
                          command="export")


def test_export_to_a_read_only_folder_is_one_clear_line(torch, ckpt, tmp_path, capsys,
                                                         monkeypatch):
    import os
    import stat

    from tests.support.cli_helpers import assert_one_line_error

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.geteuid() == 0:  # root writes through permission bits: a read-only mount instead
        import tempfile

        def refuse(*args, **kwargs):
            raise PermissionError(13, "Read-only file system")

        monkeypatch.setattr(tempfile, "mkstemp", refuse)
    try:
        status, cap = _export(capsys, ckpt, "--to", "torch", "--out", folder / "m.pt")
    finally:
        folder.chmod(stat.S_IRWXU)
    assert_one_line_error(status, cap.err, "cannot write in the folder", str(folder),
                          command="export")
    assert "internal error" not in cap.err and not (folder / "m.pt").exists()


# 3-D --------------------------------------------------------------------------
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
