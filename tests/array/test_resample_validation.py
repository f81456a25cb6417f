"""Every bad input to sandbox.resample raises a clear ValueError/TypeError."""

import numpy as np
import pytest

from sandbox.array.resample import resize, resize_adjoint

X = np.zeros((1, 2, 6, 6), dtype=np.float32)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"size": 4, "mode": "foo"}, ValueError, r"mode must be one of .*nearest.*lanczos3"),
        ({"size": 4, "mode": 3}, ValueError, "mode must be one of"),
        ({"size": 4, "align_corners": False}, ValueError, "align_corners option can only be set"),
        ({"size": 4, "mode": "area", "align_corners": True}, ValueError, "align_corners"),
        ({"size": 4, "mode": "nearest-exact", "align_corners": False}, ValueError, "linear"),
        ({"size": 4, "mode": "area", "antialias": True}, ValueError, r"antialias=True .*bicubic"),
        ({"size": 4, "mode": "nearest", "antialias": True}, ValueError, "antialias"),
        ({"size": 4, "mode": "lanczos"}, ValueError, "requires antialias=True"),
        (
            {"size": 4, "mode": "lanczos", "antialias": True, "align_corners": True},
            ValueError,
            "does not support align_corners",
        ),
        ({"size": 4, "scale_factor": 2.0}, ValueError, "only one of size or scale_factor"),
        ({}, ValueError, "either size or scale_factor"),
        ({"size": 0}, ValueError, "size must be positive"),
        ({"size": (4, -1)}, ValueError, "size must be positive"),
        ({"size": (4, 4, 4)}, ValueError, "size must be .* sequence of 2"),
        ({"size": 2.5}, TypeError, "size must be a positive int"),
        ({"size": True}, TypeError, "size must be a positive int"),
        ({"scale_factor": (2.0,)}, ValueError, "scale_factor must be .* sequence of 2"),
        ({"scale_factor": float("nan")}, ValueError, "finite and > 0"),
        ({"scale_factor": float("inf")}, ValueError, "finite and > 0"),
        ({"scale_factor": -1.0}, ValueError, "finite and > 0"),
        ({"scale_factor": 0.0}, ValueError, "finite and > 0"),
        ({"scale_factor": 0.1}, ValueError, "empty output"),
        ({"scale_factor": "2"}, TypeError, "scale_factor must be a positive number"),
        ({"size": 4, "recompute_scale_factor": True}, ValueError, "not meaningful"),
        ({"scale_factor": 2.0, "recompute_scale_factor": 1}, TypeError, "recompute_scale_factor"),
        ({"size": 4, "antialias": None}, TypeError, "antialias must be a bool"),
        ({"size": 4, "mode": "bilinear", "align_corners": 1}, TypeError, "align_corners"),
    ],
)
def test_option_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        resize(X, **kwargs)
    g = np.zeros((1, 2, 4, 4), dtype=np.float32)
    with pytest.raises(exc, match=match):
        resize_adjoint(g, (6, 6), **kwargs)


@pytest.mark.parametrize(
    "x", [np.zeros((1, 1, 4, 4), dtype=d) for d in (np.int64, np.int32, bool, np.complex128)]
)
def test_dtype_errors(x):
    with pytest.raises(TypeError, match="float32 or float64"):
        resize(x, size=2)
    with pytest.raises(TypeError, match="grad must have dtype float32 or float64"):
        resize_adjoint(x, (4, 4), size=4)


def test_float16_rejected():
    with pytest.raises(TypeError, match="float32 or float64"):
        resize(np.zeros((1, 1, 4, 4), np.float16), size=2)


def test_not_an_array():
    with pytest.raises(TypeError, match="x must be a numpy.ndarray"):
        resize([[[[1.0]]]], size=2)
    with pytest.raises(TypeError, match="grad must be a numpy.ndarray"):
        resize_adjoint(None, (2, 2), size=2)


@pytest.mark.parametrize("shape", [(4,), (4, 4), (1, 1, 1, 1, 1, 1)])
def test_wrong_ndim(shape):
    with pytest.raises(ValueError, match=r"x must have 3, 4 or 5 dimensions"):
        resize(np.zeros(shape), size=2)


def test_empty_spatial_axis():
    with pytest.raises(ValueError, match="non-empty spatial axes"):
        resize(np.zeros((1, 1, 0, 4)), size=2)


def test_grad_shape_mismatch_names_expected_shape():
    g = np.zeros((1, 2, 5, 4))
    with pytest.raises(ValueError, match=r"grad has shape .* must have shape \(1, 2, 4, 4\)"):
        resize_adjoint(g, (6, 6), size=4, mode="bilinear")
    with pytest.raises(ValueError, match=r"grad .* \(1, 2, 12, 12\)"):
        resize_adjoint(g, (6, 6), scale_factor=2.0)


@pytest.mark.parametrize("input_size", [(6,), (6, 6, 6), (6, 0), (6, -2), "66", None, (6, 2.0)])
def test_input_size_errors(input_size):
    with pytest.raises(ValueError, match="input_size"):
        resize_adjoint(np.zeros((1, 2, 4, 4)), input_size, size=4)
