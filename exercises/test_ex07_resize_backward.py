"""Exercise 7: resize backward by the transposed table (see the student file)."""

import numpy as np
import pytest

from exercises._track import load
from sandbox.array import resample

ex = load("ex07_resize_backward")
rng = np.random.default_rng(7)

MODES = ["nearest", "nearest-exact", "bilinear", "bicubic", "lanczos3", "area"]
SIZES = [(4, 8), (8, 4), (10, 16), (7, 5), (5, 13)]


def dense(table, n_in):
    start, ntap, weights = table
    A = np.zeros((len(start), n_in))
    for o in range(len(start)):
        A[o, start[o] : start[o] + ntap[o]] = weights[o, : ntap[o]]
    return A


def check_table(table, n_rows):
    start, ntap, weights = table
    assert len(start) == len(ntap) == weights.shape[0] == n_rows
    assert weights.shape[1] >= int(np.max(ntap))
    assert np.issubdtype(np.asarray(start).dtype, np.integer)


@pytest.mark.parametrize("n_in, n_out", SIZES)
@pytest.mark.parametrize("mode", MODES)
def test_band_table_and_gather(mode, n_in, n_out):
    A = resample.weight_matrix(n_in, n_out, mode=mode)
    table = ex.band_table(A)
    check_table(table, n_out)
    np.testing.assert_array_equal(dense(table, n_in), A)
    x = rng.standard_normal((2, 3, n_in))
    np.testing.assert_allclose(ex.apply_table(x, table), x @ A.T, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("n_in, n_out", SIZES)
@pytest.mark.parametrize("mode", MODES)
def test_transposed_table_is_the_transpose(mode, n_in, n_out):
    A = resample.weight_matrix(n_in, n_out, mode=mode)
    t = ex.transpose_table(ex.band_table(A), n_in)
    check_table(t, n_in)
    np.testing.assert_array_equal(dense(t, n_out), A.T)


@pytest.mark.parametrize("mode", MODES)
def test_resize_and_its_backward_match_the_library(mode):
    (h, w), (ho, wo) = (7, 5), (10, 13)
    A_h = resample.weight_matrix(h, ho, mode=mode)
    A_w = resample.weight_matrix(w, wo, mode=mode)
    x = rng.standard_normal((2, 3, h, w))
    y = ex.resize2d(x, A_h, A_w)
    np.testing.assert_allclose(y, resample.resize(x, size=(ho, wo), mode=mode), atol=1e-12)
    g = rng.standard_normal(y.shape)
    gx = ex.resize2d_backward(g, A_h, A_w)
    want = resample.resize_adjoint(g, (h, w), size=(ho, wo), mode=mode)
    np.testing.assert_allclose(gx, want, atol=1e-12)
    # the dot-product test: <A x, g> == <x, A^T g>
    assert abs(np.vdot(y, g) - np.vdot(x, gx)) <= 1e-12 * abs(np.vdot(y, g))
