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


@pytest.mark.parametrize("bad, exc", [
    ({"antialias": 1}, TypeError),  # equal to True, but not a bool
    ({"align_corners": 0}, TypeError),
    ({"scale_factor": True}, TypeError),  # equal to 1
    ({"scale_factor": (2, True)}, TypeError),
    ({"size": (8.0, 8)}, TypeError),  # equal to (8, 8)
])
def test_a_cached_plan_is_never_taken_for_an_equal_option_of_another_type(bad, exc):
    x = np.ones((1, 1, 4, 4), np.float32)
    good = {"scale_factor": 2, "mode": "bilinear", "antialias": True, "align_corners": False}
    if "size" in bad:
        good = {"size": (8, 8), "mode": "bilinear"}
    for _ in range(2):  # validated once, then cached
        resize(x, **good)
    with pytest.raises(exc):
        resize(x, **{**good, **bad})


def test_a_cached_plan_still_checks_the_memory_limit(monkeypatch):
    x = np.ones((2, 3, 64, 64), np.float32)
    resize(x, scale_factor=2, mode="bilinear")  # cached now
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "100K")
    with pytest.raises(MemoryError, match="memory"):
        resize(x, scale_factor=2, mode="bilinear")
    with pytest.raises(MemoryError, match="memory"):
        resize_adjoint(np.ones((2, 3, 128, 128), np.float32), (64, 64), scale_factor=2,
                       mode="bilinear")


def test_list_options_are_validated_at_every_call():
    x = np.ones((1, 1, 4, 4), np.float32)
    for _ in range(2):
        assert resize(x, size=[6, 8], mode="nearest").shape == (1, 1, 6, 8)
    with pytest.raises(ValueError, match="sequence of 2"):
        resize(x, size=[6, 8, 2], mode="nearest")


@pytest.mark.parametrize(("mode", "opts"), [("nearest", {"size": (9, 4)}),
                                            ("bilinear", {"scale_factor": 2.0}),
                                            ("bicubic", {"size": 3, "antialias": True})])
def test_a_plan_validated_once_gives_the_same_bits(mode, opts):
    # the Function validates at the forward and hands the plan to the adjoint
    from sandbox.array.resample import plan_resize

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    plan = plan_resize(x, mode=mode, **opts)
    y = resize(x, mode=mode, **opts)
    np.testing.assert_array_equal(resize(x, plan=plan), y)
    g = rng.standard_normal(y.shape).astype(np.float32)
    np.testing.assert_array_equal(resize_adjoint(g, x.shape[2:], plan=plan),
                                  resize_adjoint(g, x.shape[2:], mode=mode, **opts))


def test_plan_resize_validates_as_resize():
    from sandbox.array.resample import plan_resize

    with pytest.raises(ValueError, match="mode must be one of"):
        plan_resize(X, size=4, mode="foo")
    with pytest.raises(ValueError, match="non-empty spatial axes"):
        plan_resize(np.zeros((1, 1, 0, 3), np.float32), size=4)
