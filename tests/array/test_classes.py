"""Gathers along the class axis: sandbox.array.classes against numpy's along-axis ops."""

import numpy as np
import pytest

import sandbox
from sandbox.array.classes import softmax_cross_entropy_grad, take_classes

SHAPES = [(8, 4, 64, 64), (1, 3, 5000), (3, 2), (2, 5, 3, 4, 5), (1, 1, 7, 7)]


def _reference_grad(prob, t, s):
    s = np.broadcast_to(s, t.shape)[:, None]
    out = -(prob * s)
    at = s - np.take_along_axis(prob, t[:, None], axis=1) * s
    np.put_along_axis(out, t[:, None], at, axis=1)
    return out


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equal_numpys_along_axis_ops_for_any_thread_count(shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    t = rng.integers(0, shape[1], (shape[0], *shape[2:]))
    s = rng.standard_normal(t.shape).astype(dtype)
    want_take = np.take_along_axis(x, t[:, None], axis=1)[:, 0]
    want_grad = _reference_grad(x, t, s)
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            got_take = take_classes(x, t)
            got_grad = softmax_cross_entropy_grad(x, t, s)
        assert got_take.dtype == dtype and got_take.shape == t.shape
        np.testing.assert_array_equal(got_take, want_take)
        assert got_grad.dtype == dtype and got_grad.shape == x.shape
        np.testing.assert_array_equal(got_grad, want_grad)
        np.testing.assert_array_equal(np.signbit(got_grad), np.signbit(want_grad))


def test_scalar_s_broadcasts_and_views_are_read_as_values():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3, 6, 10)).astype(np.float32)[..., ::2]  # a strided view
    t = rng.integers(0, 3, (4, 6, 5)).astype(np.uint8)  # any integer dtype
    s = np.float32(-0.25)
    np.testing.assert_array_equal(take_classes(x, t),
                                  np.take_along_axis(x, t[:, None].astype(int), 1)[:, 0])
    np.testing.assert_array_equal(softmax_cross_entropy_grad(x, t, s),
                                  _reference_grad(x, t.astype(int), s))


def test_empty_inputs():
    x = np.zeros((0, 3, 4), np.float32)
    t = np.zeros((0, 4), np.int64)
    assert take_classes(x, t).shape == (0, 4)
    assert softmax_cross_entropy_grad(x, t, np.zeros((0, 4), np.float32)).shape == (0, 3, 4)


@pytest.mark.parametrize("x, t, exc, match", [
    (np.zeros((2, 3, 4), np.float32), np.array([[0, 1, 2, 3], [0, 0, 0, 0]]), ValueError,
     r"classes in \[0, 3\)"),
    (np.zeros((2, 3, 4), np.float32), np.full((2, 4), -1), ValueError, "from -1"),
    (np.zeros((2, 3, 4), np.float32), np.zeros((2, 5), np.int64), ValueError, "shape"),
    (np.zeros((2, 3, 4), np.float32), np.zeros((2, 4)), TypeError, "integer"),
    (np.zeros((2, 3, 4), np.int64), np.zeros((2, 4), np.int64), TypeError, "float32"),
    ([[0.0]], np.zeros((1,), np.int64), TypeError, "ndarray"),
])
def test_bad_arguments_are_refused_before_any_kernel(x, t, exc, match):
    with pytest.raises(exc, match=match):
        take_classes(x, t)
    with pytest.raises(exc, match=match):
        softmax_cross_entropy_grad(x, t, np.float32(1))
