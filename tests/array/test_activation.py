"""sandbox.array.activation: the threaded ReLU and leaky ReLU kernels are bitwise numpy's, for any
thread count; the smooth activations (exp, sigmoid, SiLU, GELU) are within a few ulps of the
exact values and do not depend on the thread count either."""

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
    half = np.linspace(-3, 3, 13).astype(np.float16)  # in float32, rounded once
    got = activation.erf(half)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, activation.erf(half.astype(np.float32)).astype(np.float16))


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


# -- the smooth activations ---------------------------------------------------------------

_SQRT_2_OVER_PI = np.sqrt(np.longdouble(2) / np.longdouble(np.pi))


def _wide_data(dtype, seed=0):
    """Values across the whole range (underflow and overflow of exp included)."""
    rng = np.random.default_rng(seed)
    hi = 88.0 if dtype == np.float32 else 709.0
    return np.concatenate([rng.standard_normal(20000) * 4, rng.uniform(-1.3 * hi, hi, 20000),
                           np.linspace(-12, 12, 4801)]).astype(dtype)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _normal_cdf(u_rounded):
    """``erfc(u) / 2`` in float64 for each (already rounded) argument ``u = -x/sqrt 2``."""
    import math

    return np.array([math.erfc(float(u)) for u in u_rounded.ravel()]) / 2


def _ulps(got, want, dtype):
    """|got - want| in units of the last place of ``want`` in ``dtype``, where ``want`` is
    a normal number of ``dtype`` (subnormal results carry fewer bits)."""
    want = np.asarray(want, np.float64)
    keep = np.isfinite(want) & (np.abs(want) >= np.finfo(dtype).tiny) & (
        np.abs(want) <= np.finfo(dtype).max)
    return np.abs(got[keep] - want[keep]) / np.spacing(np.abs(want[keep]).astype(dtype))


def test_exp_sigmoid_silu_and_tanh_are_within_ulps_of_long_double(dtype):
    x = np.concatenate([_wide_data(dtype), np.linspace(-1e-3, 1e-3, 2001, dtype=dtype)])
    wide = x.astype(np.longdouble)
    with np.errstate(over="ignore"):
        exact = {"exp": np.exp(wide), "sigmoid": _sig(wide), "silu": wide * _sig(wide),
                 "tanh": np.tanh(wide)}
        for name, most in (("exp", 2), ("sigmoid", 4), ("silu", 5), ("tanh", 6)):
            got = getattr(activation, name)(x)
            assert got.dtype == dtype
            want = exact[name].astype(np.float64)
            if name == "silu":  # where sigmoid(x) is subnormal, x * it has lost bits too
                want[exact["sigmoid"] < np.finfo(dtype).tiny] = np.nan
            assert _ulps(got, want, dtype).max() <= most, name


def test_gelu_is_within_its_documented_error(dtype):
    """The exact form against erfc of the same rounded argument: a relative error under
    1e-6 (float32: the erfc fit and z^2's rounding; float64: the C library's erfc,
    a few ulps) while |x| < 5, and every value close to float64's; the tanh form
    against long double."""
    x = _wide_data(dtype)[::7]
    x = x[np.abs(x) < 30]
    u = (-x * dtype(0.70710678118654752440)).astype(dtype)
    want = x.astype(np.float64) * _normal_cdf(u)
    got = activation.gelu(x)
    core = (np.abs(x) < 5) & (want != 0)
    rel = np.abs(got[core] - want[core]) / np.abs(want[core])
    assert rel.max() < (1e-6 if dtype == np.float32 else 1e-14)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-13,
                               atol=1e-30)
    wide = x.astype(np.longdouble)
    tanh_form = wide * _sig(2 * _SQRT_2_OVER_PI * (wide + np.longdouble(0.044715) * wide ** 3))
    # float32 rounds sqrt(2/pi) (x + 0.044715 x^3) to 24 bits: e^-|2u| then carries a
    # relative error of about |2u| ulps (PyTorch's 1 + tanh(u) cancels there instead)
    np.testing.assert_allclose(activation.gelu(x, "tanh"), tanh_form.astype(np.float64),
                               rtol=2e-5 if dtype == np.float32 else 1e-14, atol=1e-30)


def test_smooth_gradients_equal_their_formulas(dtype):
    """sigmoid (through its output), SiLU and both GELUs (through the input) against their
    derivatives in long double."""
    x = (np.random.default_rng(4).standard_normal(5000) * 4).astype(dtype)
    g = np.random.default_rng(5).standard_normal(5000).astype(dtype)
    wide, gw = x.astype(np.longdouble), g.astype(np.longdouble)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    y = activation.sigmoid(x)
    yw = y.astype(np.longdouble)
    np.testing.assert_allclose(activation.sigmoid_backward(g, y),
                               (gw * yw * (1 - yw)).astype(np.float64), rtol=rtol, atol=1e-30)
    y = activation.tanh(x)  # 1 - y^2 cancels near |y| = 1: the dtype's numpy form, bitwise
    np.testing.assert_array_equal(activation.tanh_backward(g, y), g * (1 - y * y))
    s = _sig(wide)
    np.testing.assert_allclose(activation.silu_backward(g, x),
                               (gw * s * (1 + wide * (1 - s))).astype(np.float64), rtol=rtol,
                               atol=1e-7 if dtype == np.float32 else 1e-15)
    u = (-x * dtype(0.70710678118654752440)).astype(dtype)
    pdf = np.exp(-wide * wide / 2) / np.sqrt(2 * np.longdouble(np.pi))
    want = gw * (_normal_cdf(u) + wide * pdf)
    np.testing.assert_allclose(activation.gelu_backward(g, x), want.astype(np.float64),
                               rtol=rtol, atol=1e-6 if dtype == np.float32 else 1e-14)
    c = np.longdouble(0.044715)
    s2 = _sig(2 * _SQRT_2_OVER_PI * (wide + c * wide ** 3))
    du2 = 2 * _SQRT_2_OVER_PI * (1 + 3 * c * wide * wide)
    want = gw * (s2 + wide * s2 * (1 - s2) * du2)
    np.testing.assert_allclose(activation.gelu_backward(g, x, "tanh"), want.astype(np.float64),
                               rtol=rtol, atol=1e-6 if dtype == np.float32 else 1e-14)


def test_smooth_special_values_match_torch(dtype, torch):
    """NaN stays NaN; infinities, signed zeros (tanh keeps the sign) and the edges of
    exp's range give what PyTorch gives."""
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.5, 89.5, -87.0, -104.5, 30.0, -30.0],
                 dtype)
    t = torch.from_numpy(x)
    fn = torch.nn.functional
    with np.errstate(over="ignore"):
        pairs = [(activation.exp(x), torch.exp(t)), (activation.sigmoid(x), torch.sigmoid(t)),
                 (activation.tanh(x), torch.tanh(t)),
                 (activation.silu(x), fn.silu(t)), (activation.gelu(x), fn.gelu(t))]
    gelu_ours, gelu_ref = pairs[-1]
    # PyTorch 2.13's gelu(+inf) depends on the CPU it runs on (inf on a Zen 3 with AVX2,
    # NaN on a Zen 5 with AVX-512): ours keeps the limit, x * Phi(x) -> inf.
    assert gelu_ours[1] == np.inf
    gelu_ref = gelu_ref.numpy().copy()
    gelu_ref[1] = np.inf
    pairs[-1] = (gelu_ours, gelu_ref)
    for ours, ref in pairs:
        np.testing.assert_allclose(ours, np.asarray(ref), rtol=1e-6, atol=1e-30)
    assert np.signbit(activation.tanh(x)[4]) and not np.signbit(activation.tanh(x)[3])


def test_smooth_results_do_not_depend_on_the_thread_count(dtype):
    x = _data((4, 16, 64, 64), dtype) * 4
    g = _data((4, 16, 64, 64), dtype, seed=2)
    y = activation.sigmoid(x)
    runs = []
    for n in (1, 2, 3):
        with sandbox.num_threads(n):
            runs.append([activation.exp(x), activation.sigmoid(x), activation.silu(x),
                         activation.tanh(x), activation.tanh_backward(g, y),
                         activation.gelu(x), activation.gelu(x, "tanh"),
                         activation.silu_backward(g, x), activation.gelu_backward(g, x),
                         activation.gelu_backward(g, x, "tanh"),
                         activation.sigmoid_backward(g, y)])
    for run in runs[1:]:
        for got, first in zip(run, runs[0], strict=True):
            np.testing.assert_array_equal(got.view(np.uint8), first.view(np.uint8))


def test_smooth_layouts_dtypes_and_out():
    x = _data((3, 70000), np.float32)
    want = activation.sigmoid(x)
    assert activation.sigmoid(x, out=x) is x  # in place
    np.testing.assert_array_equal(x, want)
    strided = _data((6, 9), np.float64)[:, ::2]  # not contiguous: a contiguous copy
    np.testing.assert_array_equal(activation.silu(strided),
                                  activation.silu(np.ascontiguousarray(strided)))
    half = np.linspace(-4, 4, 9).astype(np.float16)  # float16: in float32, rounded once
    got = activation.gelu(half)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, activation.gelu(half.astype(np.float32)).astype(np.float16))
    grad = activation.silu_backward(half, half)
    assert grad.dtype == np.float16
    assert activation.exp(np.array(1.0)).shape == ()


# -- softmax ----------------------------------------------------------------------------------

def _softmax_exact(x, axis, log):
    wide = x.astype(np.longdouble)
    z = wide - wide.max(axis=axis, keepdims=True)
    ls = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    return (z - ls if log else np.exp(z - ls)).astype(np.float64)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape, axis", [((3, 5, 7), 1), ((4, 13), 1), ((2, 3, 300), 1),
                                          ((2, 19, 5), 2), ((6, 1, 4), 1), ((5,), 0),
                                          ((2, 16, 8, 8), 1), ((2, 4, 8, 64), 3),
                                          ((2, 1000, 5), 1), ((1, 3, 300), 0)])
def test_softmax_and_its_gradient_are_the_exact_values(shape, axis, log, dtype):
    """Both layouts (the axis last: rows; else columns, 256 positions a block), class counts
    that are and are not multiples of the rows' 8 lanes, one class; the gradient against
    its formula on the output."""
    rng = np.random.default_rng(sum(shape) + axis)
    x = (rng.standard_normal(shape) * 6).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    y = activation.softmax(x, axis, log)
    tol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(y, _softmax_exact(x, axis, log), rtol=tol, atol=tol)
    yw, gw = y.astype(np.longdouble), g.astype(np.longdouble)
    if log:
        want = gw - np.exp(yw) * gw.sum(axis=axis, keepdims=True)
    else:
        want = yw * (gw - (gw * yw).sum(axis=axis, keepdims=True))
    np.testing.assert_allclose(activation.softmax_backward(g, y, axis, log),
                               want.astype(np.float64), rtol=10 * tol, atol=10 * tol)


def test_softmax_special_values_match_torch(dtype, torch):
    """Huge logits (no overflow, and log-softmax exact next to the maximum), -inf entries,
    a NaN or +inf in a row (the whole row NaN), rows of -inf (NaN), as PyTorch."""
    x = np.array([[1000.0, -1000.0, 0.0], [-1e4, -1e4 + 1, -1e4 + 2], [0.0, -np.inf, 1.0],
                  [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf]], dtype)
    for axis, data in ((1, x), (0, np.ascontiguousarray(x.T))):
        for log, fn in ((False, torch.softmax), (True, torch.log_softmax)):
            want = fn(torch.from_numpy(data), axis).numpy()
            np.testing.assert_allclose(activation.softmax(data, axis, log), want, rtol=1e-6,
                                       atol=1e-6)


def test_softmax_does_not_depend_on_the_thread_count(dtype):
    x = _data((4, 16, 32, 33), dtype) * 3
    x[0, 0, 0, :4] = 1.0  # _data's NaN and infinities would make whole rows NaN
    g = _data((4, 16, 32, 33), dtype, seed=2)
    for axis in (1, 3):
        runs = []
        for n in (1, 2, 3):
            with sandbox.num_threads(n):
                y = activation.softmax(x, axis)
                runs.append((y, activation.softmax_backward(g, y, axis),
                             activation.softmax(x, axis, log=True)))
        for run in runs[1:]:
            for got, first in zip(run, runs[0], strict=True):
                np.testing.assert_array_equal(got.view(np.uint8), first.view(np.uint8))


def test_softmax_layouts_and_dtypes():
    x = _data((3, 8, 10), np.float64)[:, :, ::2]  # not contiguous
    np.testing.assert_array_equal(activation.softmax(x, 1),
                                  activation.softmax(np.ascontiguousarray(x), 1))
    half = np.linspace(-3, 3, 12).astype(np.float16).reshape(3, 4)
    got = activation.softmax(half, 1, log=True)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, activation.softmax(half.astype(np.float32), 1,
                                                          log=True).astype(np.float16))
    assert activation.softmax(np.zeros((2, 0, 3), np.float32), 1).shape == (2, 0, 3)
