"""Exercise 1: central differences (see exercises/student/ex01_central_differences.py)."""

import math

import numpy as np
import pytest

from exercises._track import load

ex = load("ex01_central_differences")


@pytest.mark.parametrize("x", [-2.0, -0.3, 0.0, 0.7, 3.0])
def test_central_difference_matches_known_derivatives(x):
    assert abs(ex.central_difference(math.sin, x) - math.cos(x)) < 1e-8
    assert abs(ex.central_difference(math.exp, x) - math.exp(x)) < 1e-7 * math.exp(x) + 1e-9
    assert abs(ex.central_difference(lambda t: t**3, x) - 3 * x * x) < 1e-7


def test_central_difference_error_is_second_order():
    # Halving h divides the error of a central difference by about 4 (a one-sided
    # difference only by 2): the estimate is O(h^2).
    errs = [abs(ex.central_difference(math.exp, 1.0, h) - math.e) for h in (1e-2, 5e-3, 2.5e-3)]
    for big, small in zip(errs, errs[1:], strict=False):
        assert 3.6 < big / small < 4.4


def test_numerical_gradient_matches_analytic_and_restores_x():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4))
    before = x.copy()

    def f(t):
        return np.sum(t**3) + t[0, 0] * t[1, 2] + np.sum(np.sin(t))

    want = 3 * x**2 + np.cos(x)
    want[0, 0] += x[1, 2]
    want[1, 2] += x[0, 0]
    got = ex.numerical_gradient(f, x)
    assert got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-8)
    np.testing.assert_array_equal(x, before)  # every perturbation was undone


def test_numerical_vjp_is_the_backward_of_a_layer():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3))
    m = rng.standard_normal((3, 5))
    g = rng.standard_normal((2, 5))

    def layer(t):
        return np.tanh(t) @ m

    want = (g @ m.T) * (1 - np.tanh(x) ** 2)  # the chain rule, by hand
    np.testing.assert_allclose(ex.numerical_vjp(layer, x, g), want, rtol=1e-6, atol=1e-8)
