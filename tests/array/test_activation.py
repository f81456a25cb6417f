"""sandbox.array.activation: the threaded ReLU and leaky ReLU kernels are bitwise numpy's, for any
thread count."""

import numpy as np
import pytest

import sandbox
from sandbox.array import activation


@pytest.fixture(params=[np.float32, np.float64])
def dtype(request):
    return request.param


def _data(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:4] = [np.nan, -0.0, 0.0, -np.inf]  # the values where max(x, 0) rules differ
    return x


@pytest.mark.parametrize("shape", [(7,), (3, 5, 11), (2, 16, 64, 65)])
def test_relu_and_its_gradient_equal_numpy_bitwise(shape, dtype):
    x = _data(shape, dtype)
    g = _data(shape, dtype, seed=1)
    y = activation.relu(x)
    np.testing.assert_array_equal(y.view(np.uint8), np.maximum(x, 0).view(np.uint8))
    gx = activation.relu_backward(g, y)
    np.testing.assert_array_equal(gx.view(np.uint8), (g * (y > 0)).view(np.uint8))


def test_results_do_not_depend_on_the_thread_count(dtype):
    x = _data((4, 16, 64, 64), dtype)
    g = _data((4, 16, 64, 64), dtype, seed=2)
    runs = []
    for n in (1, 2, 3):
        with sandbox.num_threads(n):
            y = activation.relu(x)
            runs.append((y, activation.relu_backward(g, y)))
    for y, gx in runs[1:]:
        np.testing.assert_array_equal(y, runs[0][0])
        np.testing.assert_array_equal(gx, runs[0][1])


def test_in_place_and_the_numpy_fallbacks():
    x = _data((3, 70000), np.float32)
    want = np.maximum(x, 0)
    assert activation.relu(x, out=x) is x
    np.testing.assert_array_equal(x, want)
    strided = _data((6, 9), np.float64)[:, ::2]  # not contiguous: numpy's path
    np.testing.assert_array_equal(activation.relu(strided), np.maximum(strided, 0))
    ints = np.arange(-3, 4)
    np.testing.assert_array_equal(activation.relu(ints), np.maximum(ints, 0))
    half = np.linspace(-1, 1, 9).astype(np.float16)
    np.testing.assert_array_equal(activation.relu_backward(half, half), half * (half > 0))


def test_erf_equals_math_erf_for_both_dtypes_and_layouts():
    import math

    x = np.random.default_rng(3).standard_normal((4, 300)) * 3
    want = np.array([math.erf(v) for v in x.ravel()]).reshape(x.shape)
    np.testing.assert_array_equal(activation.erf(x), want)
    np.testing.assert_array_equal(activation.erf(x[:, ::3]), want[:, ::3])  # not contiguous
    np.testing.assert_array_equal(activation.erf(x.astype(np.float32)),
                                  np.array([math.erf(float(v)) for v in
                                            x.astype(np.float32).ravel()],
                                           np.float64).astype(np.float32).reshape(x.shape))
    assert activation.erf(np.array(0.5)).shape == () and activation.erf(np.array(0.5)) == \
        math.erf(0.5)
    with sandbox.num_threads(1):
        one = activation.erf(x)
    np.testing.assert_array_equal(one, want)


@pytest.mark.parametrize("slope", [0.01, 0.2, 0.0, -0.5, 1.7])
@pytest.mark.parametrize("shape", [(7,), (3, 5, 11), (2, 16, 64, 65)])
def test_leaky_relu_and_its_gradient_equal_numpy_bitwise(shape, slope, dtype):
    """The kernels compute numpy's np.where forms bit for bit (NaN, signed zeros and
    infinities included), the gradient through the input and, for a slope of at least
    0, through the output, and do not depend on the thread count."""
    x = _data(shape, dtype)
    g = _data(shape, dtype, seed=1)
    want = np.where(x > 0, x, x * slope)
    runs = []
    for n in (1, 2, 3):
        with sandbox.num_threads(n):
            y = activation.leaky_relu(x, slope)
            runs.append((y, activation.leaky_relu_backward(g, x, slope)))
    np.testing.assert_array_equal(runs[0][0].view(np.uint8), want.view(np.uint8))
    gx = g * np.where(x > 0, 1.0, slope).astype(dtype)
    np.testing.assert_array_equal(runs[0][1].view(np.uint8), gx.view(np.uint8))
    for y, grad in runs[1:]:
        np.testing.assert_array_equal(y.view(np.uint8), runs[0][0].view(np.uint8))
        np.testing.assert_array_equal(grad.view(np.uint8), runs[0][1].view(np.uint8))
    if slope >= 0:  # the output is positive exactly where the input is
        through_y = activation.leaky_relu_backward(g, want, slope)
        np.testing.assert_array_equal(through_y.view(np.uint8), gx.view(np.uint8))


def test_leaky_relu_in_place_and_the_numpy_fallbacks():
    x = _data((3, 70000), np.float32)
    want = np.where(x > 0, x, x * 0.1)
    assert activation.leaky_relu(x, 0.1, out=x) is x
    np.testing.assert_array_equal(x, want)
    strided = _data((6, 9), np.float64)[:, ::2]  # not contiguous: numpy's path
    np.testing.assert_array_equal(activation.leaky_relu(strided, 0.1),
                                  np.where(strided > 0, strided, strided * 0.1))
    half = np.linspace(-1, 1, 9).astype(np.float16)
    np.testing.assert_array_equal(activation.leaky_relu(half, 0.1),
                                  np.where(half > 0, half, half * 0.1))
    np.testing.assert_array_equal(activation.leaky_relu_backward(half, half, 0.1),
                                  half * np.where(half > 0, 1.0, 0.1).astype(np.float16))
