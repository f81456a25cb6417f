"""Exercise 8: conv2d via im2col (see exercises/student/ex08_conv2d_im2col.py)."""

import numpy as np
import pytest

from exercises._checks import fd_vjp
from exercises._track import load
from sandbox.array import conv

ex = load("ex08_conv2d_im2col")
rng = np.random.default_rng(8)

GEOMETRIES = [  # (N, C, H, W), (F, kh, kw), stride, padding
    ((2, 3, 7, 6), (4, 3, 3), 1, 0),
    ((1, 2, 8, 8), (3, 3, 3), 2, 1),
    ((2, 1, 5, 7), (2, 2, 4), 1, 2),
    ((1, 3, 9, 9), (2, 1, 1), 3, 0),
]


def setup(xshape, wshape):
    n, c, h, w = xshape
    f, kh, kw = wshape
    return rng.standard_normal(xshape), rng.standard_normal((f, c, kh, kw)), rng.standard_normal(f)


@pytest.mark.parametrize("xshape, wshape, stride, padding", GEOMETRIES)
def test_im2col_and_col2im_are_adjoint(xshape, wshape, stride, padding):
    x = rng.standard_normal(xshape)
    _, kh, kw = wshape
    cols = ex.im2col(x, kh, kw, stride, padding)
    ho = ex.out_size(xshape[2], kh, stride, padding)
    wo = ex.out_size(xshape[3], kw, stride, padding)
    assert cols.shape == (xshape[0], xshape[1] * kh * kw, ho * wo)
    g = rng.standard_normal(cols.shape)
    back = ex.col2im(g, xshape, kh, kw, stride, padding)
    assert back.shape == xshape
    assert np.isclose(np.vdot(cols, g), np.vdot(x, back), rtol=1e-12)


@pytest.mark.parametrize("xshape, wshape, stride, padding", GEOMETRIES)
def test_forward_matches_the_library(xshape, wshape, stride, padding):
    x, w, b = setup(xshape, wshape)
    got = ex.conv2d_forward(x, w, b, stride, padding)
    np.testing.assert_allclose(got, conv.conv2d(x, w, b, stride, padding), atol=1e-12)


@pytest.mark.parametrize("xshape, wshape, stride, padding", GEOMETRIES)
def test_backward_matches_the_library_and_finite_differences(xshape, wshape, stride, padding):
    x, w, b = setup(xshape, wshape)
    y = ex.conv2d_forward(x, w, b, stride, padding)
    g = rng.standard_normal(y.shape)
    gx, gw, gb = ex.conv2d_backward(g, x, w, stride, padding)
    lx, lw, lb = conv.conv2d_backward(g, x, w, stride, padding)
    np.testing.assert_allclose(gx, lx, atol=1e-11)
    np.testing.assert_allclose(gw, lw, atol=1e-11)
    np.testing.assert_allclose(gb, lb, atol=1e-11)
    fx = fd_vjp(lambda t: conv.conv2d(t, w, b, stride, padding), x, g)
    fw = fd_vjp(lambda t: conv.conv2d(x, t, b, stride, padding), w, g)
    np.testing.assert_allclose(gx, fx, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gw, fw, rtol=1e-6, atol=1e-7)
