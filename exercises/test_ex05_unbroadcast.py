"""Exercise 5: unbroadcast (see exercises/student/ex05_unbroadcast.py)."""

import numpy as np
import pytest

from exercises._track import load
from sandbox.autograd import unbroadcast as library_unbroadcast

ex = load("ex05_unbroadcast")

CASES = [
    ((3,), (3,)),
    ((), (2, 3)),
    ((1,), (4, 5)),
    ((3,), (2, 3)),
    ((3, 1), (2, 3, 4)),
    ((1, 4), (3, 4)),
    ((2, 1, 1), (2, 5, 6)),
    ((1, 1), (1, 1)),
    ((5, 1, 3), (7, 5, 1, 3)),
]


@pytest.mark.parametrize("small, big", CASES, ids=str)
def test_dot_product_identity(small, big):
    # <expand(x), g> == <x, unbroadcast(g)> for all x, g: the definition of the adjoint
    rng = np.random.default_rng(len(big))
    x = rng.standard_normal(small)
    g = rng.standard_normal(big)
    gx = ex.unbroadcast(g, small)
    assert np.shape(gx) == small
    lhs = np.vdot(np.broadcast_to(x, big), g)
    rhs = np.vdot(x, gx)
    assert abs(lhs - rhs) <= 1e-12 * max(1.0, abs(lhs))


@pytest.mark.parametrize("small, big", CASES, ids=str)
def test_matches_the_library(small, big):
    g = np.random.default_rng(1).standard_normal(big)
    np.testing.assert_allclose(ex.unbroadcast(g, small), library_unbroadcast(g, small))


def test_counts_copies():
    # a uniform gradient of ones tells how many copies each element had
    got = ex.unbroadcast(np.ones((2, 3, 4)), (3, 1))
    np.testing.assert_array_equal(got, np.full((3, 1), 8.0))


def test_too_many_dims_is_an_error():
    with pytest.raises(ValueError):
        ex.unbroadcast(np.ones(3), (1, 3))
