"""sandbox.array.reduce: sums and means over trailing axes on every thread, numpy's values
within float rounding, the same bits for any thread count, numpy's call elsewhere."""

import numpy as np
import pytest

import sandbox
from sandbox.array import reduce
from sandbox.array.reduce import trailing_mean, trailing_sum


def _calls(monkeypatch):
    calls = []
    real = reduce._elementwise.row_sums
    monkeypatch.setattr(reduce._elementwise, "row_sums",
                        lambda x, *a: calls.append(x.shape) or real(x, *a))
    return calls


@pytest.mark.parametrize("shape, axes", [
    ((8, 16, 64, 64), (2, 3)),  # a global average pool
    ((8, 16, 64, 64), (0, 1, 2, 3)),  # everything: one row in parts
    ((4, 300000), (1,)),  # rows of several parts, the last one short
    ((2, 3, 70000), (1, 2)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("keepdims", [False, True])
def test_trailing_reductions_match_numpy_and_ignore_the_threads(shape, axes, dtype, keepdims,
                                                                monkeypatch):
    calls = _calls(monkeypatch)
    x = (np.random.default_rng(0).standard_normal(shape) + 0.5).astype(dtype)
    exact = x.astype(np.float64)
    runs = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            runs.append((trailing_sum(x, axes, keepdims), trailing_mean(x, axes, keepdims)))
    assert len(calls) == 6
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for got, want in zip(runs[0], (exact.sum(axis=axes, keepdims=keepdims),
                                   exact.mean(axis=axes, keepdims=keepdims)), strict=True):
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol)  # the values are near 0.5 a term
    for run in runs[1:]:
        for got, first in zip(run, runs[0], strict=True):
            np.testing.assert_array_equal(got, first)


def test_other_reductions_are_numpys(monkeypatch):
    calls = _calls(monkeypatch)
    big = np.random.default_rng(1).standard_normal((8, 16, 64, 64)).astype(np.float32)
    for x, axes in [(big, (1,)),  # not the trailing axes
                    (big[:, :, :, ::2], (2, 3)),  # strided
                    (big[:1, :1], (2, 3)),  # small
                    (big.astype(np.int32), (2, 3)),  # not float
                    (big, ())]:  # nothing reduced
        np.testing.assert_array_equal(trailing_sum(x, axes), np.sum(x, axis=axes))
        np.testing.assert_array_equal(trailing_mean(x, axes), np.mean(x, axis=axes))
    assert calls == []


def test_tensor_sum_and_mean_take_the_threaded_rows_and_their_gradients_spread():
    """Tensor.sum / .mean over trailing axes run the kernel; the backward spreads the
    gradient (a broadcast a leaf fills on every thread), first and second order."""
    rng = np.random.default_rng(3)
    x = sandbox.tensor(rng.standard_normal((8, 16, 64, 64)).astype(np.float32),
                       requires_grad=True)
    y = x.mean(axis=(2, 3))
    np.testing.assert_allclose(y.numpy(), x.numpy().astype(np.float64).mean(axis=(2, 3)),
                               rtol=1e-6, atol=1e-7)
    g = rng.standard_normal((8, 16)).astype(np.float32)
    y.backward(sandbox.tensor(g))
    want = np.broadcast_to((g / 4096)[:, :, None, None], x.shape)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6)
    assert x.grad.numpy().flags.c_contiguous
    w = sandbox.tensor(np.full(3, 2.0), requires_grad=True)
    (gw,) = sandbox.autograd.grad((w * w).sum(), w, create_graph=True)
    (ggw,) = sandbox.autograd.grad(gw.sum(), w)
    np.testing.assert_array_equal(ggw.numpy(), np.full(3, 2.0))
