"""to_onnx: ONNX Runtime runs the exported model and gives the sandbox's eval output.

Tolerance: float32 rounding, measured as ``max|ort - sandbox| / max|sandbox|``.
The ONNX model does the sandbox's arithmetic in another order; ``Resize`` also
computes its filter weights itself.  Measured worst cases (ORT 1.32, every case
in this file): whole UNets 1.9e-7 (Resize and MatMul paths alike, also a depth-3,
width-16 UNet at 64x64), MatMul resampling layers 2.2e-7, standalone ``Resize``
layers 6.7e-7 (bicubic, antialiased downsampling).  float32 eps is 1.19e-7.
Trained weights round more (1.3e-6 measured on one trained checkpoint): the tests of
trained checkpoints allow ``RTOL_TRAINED`` = 1e-5 of the largest output.
"""

import sys

import numpy as np
import pytest

import sandbox
from sandbox import nn
from sandbox.interop import run_onnx, to_onnx
from sandbox.interop._onnx_resample import resize_attributes
from tests.support.interop_models import UNET_MODES, eval_output, every_3d_layer, make_unet, moved

RTOL = 1e-6  # UNets and whole models: measured worst 1.9e-7
# Trained checkpoints: larger weights, more cancellation in the sums, so more rounding
# relative to the output (1.3e-6 seen on a trained default run); see test_interop_cli.
RTOL_TRAINED = 1e-5
RTOL_RESIZE_LAYER = 2e-6  # a lone Resize layer: measured worst 6.7e-7

# Modes whose UNet decoder maps to ONNX Resize at these sizes (the others use MatMul).
RESIZE_EXACT = [
    ("nearest", {}),
    ("nearest-exact", {}),
    ("bilinear", {}),
    ("linear", {}),
    ("bilinear", {"align_corners": True}),
    ("bilinear", {"antialias": True}),
    ("bicubic", {}),
    ("bicubic", {"align_corners": True}),
    ("bicubic", {"antialias": True}),
]


@pytest.fixture(autouse=True)
def _interop_packages(onnx, onnxruntime):
    """Every test here needs onnx and onnxruntime (they fail, not skip, in CI)."""


def _ops(onnx, path):
    return {node.op_type for node in onnx.load(str(path)).graph.node}


def _check(path, model, shape, rtol=RTOL):
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    ref = eval_output(model, x)
    got = run_onnx(path, x)
    assert got.shape == ref.shape
    err = np.abs(got - ref).max() / np.abs(ref).max()
    assert err <= rtol, f"max |diff| / max |output| = {err:.3g}"


@pytest.mark.parametrize(("mode", "opts"), UNET_MODES)
@pytest.mark.parametrize("size", [16, 21])
def test_unet_matches_onnx_runtime(onnx, onnxruntime, tmp_path, mode, opts, size):
    model = make_unet(mode, opts)
    path = to_onnx(model, (1, 2, size, size), tmp_path / "unet.onnx")
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    assert not model.training  # flags restored (make_unet returns an eval model)
    for batch in (1, 3):  # one file, dynamic batch size
        _check(path, model, (batch, 2, size, size))
    ops = _ops(onnx, path)
    if mode == "transposed":
        assert "ConvTranspose" in ops and "Resize" not in ops
    elif (mode, opts) in RESIZE_EXACT:
        assert "Resize" in ops and "MatMul" not in ops
    else:
        assert "MatMul" in ops and "Resize" not in ops


@pytest.mark.parametrize(("mode", "opts"), RESIZE_EXACT)
def test_matmul_policy_gives_the_same_model(onnx, onnxruntime, tmp_path, mode, opts):
    model = make_unet(mode, opts)
    path = to_onnx(model, (1, 2, 21, 21), tmp_path / "unet.onnx", resize="matmul")
    assert "Resize" not in _ops(onnx, path)
    _check(path, model, (3, 2, 21, 21))


def test_unet_training_mode_is_restored_and_exported_in_eval(onnxruntime, tmp_path):
    model = make_unet("bilinear").train()
    path = to_onnx(model, (2, 2, 16, 16), tmp_path / "unet.onnx")
    assert all(m.training for m in model.modules())
    _check(path, model.eval(), (2, 2, 16, 16))  # running statistics, not batch statistics


def test_graph_has_dynamic_batch(onnx, tmp_path):
    path = to_onnx(make_unet("bicubic"), (1, 2, 16, 16), tmp_path / "unet.onnx")
    graph = onnx.load(str(path)).graph
    for value in (graph.input[0], graph.output[0]):
        dims = value.type.tensor_type.shape.dim
        assert dims[0].dim_param == "batch"
    assert [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim[1:]] == [3, 16, 16]


# Layer level: each Upsample alone, up- and downsampling, every mode and option.
UPSAMPLE_CASES = [
    ("nearest", {}, (7, 9), (16, 5)),
    ("nearest", {}, (28, 9), (46, 4)),  # an ONNX rounding edge: MatMul is used
    ("nearest-exact", {}, (20, 25), (46, 55)),
    ("nearest-exact", {}, (9, 6), (3, 13)),
    ("bilinear", {}, (6, 7), (1, 15)),
    ("bilinear", {"align_corners": True}, (9, 5), (4, 11)),
    ("bilinear", {"antialias": True}, (20, 17), (7, 30)),
    ("bilinear", {"antialias": True, "align_corners": True}, (20, 17), (7, 30)),
    ("bicubic", {}, (8, 13), (19, 6)),
    ("bicubic", {"align_corners": True}, (5, 13), (12, 4)),
    ("bicubic", {"antialias": True}, (23, 11), (6, 17)),
    ("bicubic", {"antialias": True, "align_corners": True}, (23, 11), (6, 17)),
    ("cubic", {"antialias": True}, (23, 11), (6, 17)),
    ("lanczos3", {}, (10, 12), (23, 5)),
    ("lanczos3", {"antialias": True}, (24, 12), (7, 31)),
    ("lanczos5", {"antialias": True, "align_corners": True}, (24, 12), (7, 31)),
    ("area", {}, (17, 12), (5, 30)),
]


@pytest.mark.parametrize(("mode", "opts", "size_in", "size_out"), UPSAMPLE_CASES)
def test_upsample_layer(onnxruntime, tmp_path, mode, opts, size_in, size_out):
    layer = nn.Upsample(size=size_out, mode=mode, **opts)
    for policy in ("auto", "matmul"):
        path = to_onnx(layer, (2, 3, *size_in), tmp_path / "up.onnx", resize=policy)
        _check(path, layer, (2, 3, *size_in), RTOL_RESIZE_LAYER if policy == "auto" else RTOL)


@pytest.mark.parametrize(
    ("opts", "shape"),
    [
        ({"scale_factor": 1.7, "mode": "bilinear"}, (1, 2, 5, 7)),  # step 1/1.7, not in/out
        ({"scale_factor": 2.0, "mode": "nearest"}, (1, 2, 5, 7)),
        ({"scale_factor": (0.4, 2.5), "mode": "bicubic", "recompute_scale_factor": True},
         (1, 2, 11, 4)),
        ({"scale_factor": 1.5, "mode": "linear", "align_corners": True}, (2, 3, 7)),  # 1-D
        ({"size": (4, 6, 3), "mode": "trilinear"}, (1, 2, 3, 5, 7)),  # 3-D
        ({"size": (2, 9, 9), "mode": "lanczos3", "antialias": True}, (1, 1, 5, 4, 3)),
    ],
)
def test_upsample_scale_factors_and_ranks(onnxruntime, tmp_path, opts, shape):
    layer = nn.Upsample(**opts)
    path = to_onnx(layer, shape, tmp_path / "up.onnx")
    _check(path, layer, shape, RTOL_RESIZE_LAYER)


def test_every_other_layer(onnxruntime, tmp_path):
    sandbox.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 6, 3, stride=2, padding=2, dilation=2, groups=2),
        nn.BatchNorm2d(6, affine=False),
        nn.LeakyReLU(0.2),
        nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1),
        nn.GroupNorm(2, 4),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
        nn.BatchNorm2d(4, track_running_stats=False),
        nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
        nn.AvgPool2d(2, stride=1, divisor_override=3),
        nn.Dropout(0.5),
        nn.Dropout2d(0.5),
        nn.Identity(),
        nn.Linear(7, 3),
    )
    model.train()
    with sandbox.no_grad():
        model(sandbox.randn(4, 2, 13, 13))  # move the running statistics
    model.eval()
    path = to_onnx(model, (1, 2, 13, 13), tmp_path / "seq.onnx")
    for batch in (1, 3):
        _check(path, model, (batch, 2, 13, 13))


def test_identity_model(onnxruntime, tmp_path):
    path = to_onnx(nn.Sequential(nn.Dropout(0.1)), (1, 2, 3, 4), tmp_path / "id.onnx")
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    np.testing.assert_array_equal(run_onnx(path, x), x)


def test_resize_used_only_where_exact():
    # PyTorch's 2x nearest and nearest-exact agree with ONNX's formulas...
    assert resize_attributes("nearest", None, False, (8, 10), (16, 20), (None, None))
    assert resize_attributes("nearest-exact", None, False, (8, 10), (16, 20), (None, None))
    # ...but not on a rounding edge, for other filters, or with a different sampling step.
    assert resize_attributes("nearest", None, False, (28, 9), (46, 4), (None, None)) is None
    assert resize_attributes("lanczos3", None, True, (8, 8), (16, 16), (None, None)) is None
    assert resize_attributes("bilinear", True, True, (8, 8), (16, 16), (None, None)) is None
    assert resize_attributes("bilinear", None, False, (5, 5), (8, 8), (1.7, 1.7)) is None
    assert resize_attributes("bicubic", None, True, (9, 9), (4, 4), (None, None)) == {
        "mode": "cubic", "coordinate_transformation_mode": "half_pixel", "cubic_coeff_a": -0.5,
        "antialias": 1, "exclude_outside": 1,
    }


class _Custom(nn.Module):
    def forward(self, x):
        return x


def test_errors(onnx, tmp_path):
    model = make_unet()
    out = tmp_path / "m.onnx"
    with pytest.raises(ValueError, match=r"example_shape for this UNet must be \(N, 2, H, W\)"):
        to_onnx(model, (1, 3, 16, 16), out)
    with pytest.raises(ValueError, match="example_shape must be"):
        to_onnx(model, (1, 2, 0, 16), out)
    with pytest.raises(ValueError, match="resize must be one of"):
        to_onnx(model, (1, 2, 16, 16), out, resize="fast")
    with pytest.raises(ValueError, match="opset must be an int >= 18"):
        to_onnx(model, (1, 2, 16, 16), out, opset=13)
    with pytest.raises(ValueError, match="float32"):
        to_onnx(make_unet(dtype=np.float64), (1, 2, 16, 16), out)
    with pytest.raises(TypeError, match="to_onnx cannot export ModuleList:"):
        to_onnx(nn.ModuleList([nn.ReLU()]), (1, 2, 16, 16), out)
    model.ups[1].block.norm1 = _Custom()
    with pytest.raises(TypeError, match=r"cannot export _Custom \(at 'ups\.1\.block\.norm1'\)"):
        to_onnx(model, (1, 2, 16, 16), out)
    with pytest.raises(ValueError, match="divisor_override and ceil_mode"):
        to_onnx(nn.AvgPool2d(2, ceil_mode=True, divisor_override=2), (1, 1, 5, 5), out)
    for conv in (nn.Conv2d(1, 1, 3, padding=1, padding_mode="reflect"),
                 nn.Conv3d(1, 1, 3, padding="same")):
        with pytest.raises(ValueError, match="it exports int or tuple zero padding"):
            to_onnx(conv, (1, 1) + (5,) * (conv.weight.ndim - 2), out)
    assert not out.exists()


def test_missing_onnx_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install 'cpu-train-sandbox\[interop\]'"):
        to_onnx(nn.ReLU(), (1, 1, 2, 2), tmp_path / "m.onnx")


# 3-D --------------------------------------------------------------------------
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
    model = moved(every_3d_layer(running_stats=False), (2, 2, 7, 9, 8))
    path = to_onnx(model, (1, 2, 7, 9, 8), tmp_path / "layers.onnx")
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 2, 7, 9, 8)).astype(np.float32)
        ref = eval_output(model, x)
        assert np.abs(run_onnx(path, x) - ref).max() <= 1e-5 * np.abs(ref).max()
