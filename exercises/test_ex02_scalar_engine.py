"""Exercise 2: a scalar engine (see exercises/student/ex02_scalar_engine.py)."""

import math

import pytest

from exercises._checks import fd_scalar
from exercises._track import load

ex = load("ex02_scalar_engine")
Value = ex.Value

UNARY = {
    "exp": (lambda v: v.exp(), math.exp),
    "log": (lambda v: v.log(), math.log),
    "tanh": (lambda v: v.tanh(), math.tanh),
    "relu": (lambda v: v.relu(), lambda t: max(t, 0.0)),
    "pow3": (lambda v: v**3, lambda t: t**3),
    "pow-0.5": (lambda v: v**-0.5, lambda t: t**-0.5),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("x", [0.3, 1.7, -0.8])
def test_unary_value_and_local_derivative(name, x):
    op, ref = UNARY[name]
    if name in ("log", "pow-0.5") and x <= 0:
        x = -x
    out = op(Value(x))
    assert isinstance(out, Value)
    assert out.data == pytest.approx(ref(x), rel=1e-12)
    assert len(out.parents) == 1 and out.parents[0].data == x
    (local,) = out.local_grads
    assert local == pytest.approx(fd_scalar(ref, x), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("a, b", [(2.0, -3.0), (0.5, 4.0)])
def test_binary_value_and_local_derivatives(a, b):
    va, vb = Value(a), Value(b)
    for out, ref in ((va + vb, lambda s, t: s + t), (va * vb, lambda s, t: s * t)):
        assert out.data == pytest.approx(ref(a, b))
        assert out.parents == (va, vb)  # the very objects, in order
        da, db = out.local_grads
        assert da == pytest.approx(fd_scalar(lambda s, ref=ref: ref(s, b), a), rel=1e-7)
        assert db == pytest.approx(fd_scalar(lambda t, ref=ref: ref(a, t), b), rel=1e-7)


def test_numbers_become_constants_and_reuse_keeps_both_edges():
    a = Value(3.0)
    for out in (a + 2, 2 + a, a * 2, 2 * a):
        assert a in out.parents and out.data in (5.0, 6.0)
    sq = a * a  # the same parent twice: two edges, two local derivatives
    assert sq.parents == (a, a) and sq.local_grads == (3.0, 3.0)


def test_relu_derivative_is_zero_at_zero():
    assert Value(0.0).relu().local_grads == (0.0,)
    assert Value(-1.0).relu().data == 0.0


def test_composite_ops_build_on_the_basic_ones():
    a, b = Value(6.0), Value(4.0)
    assert (a - b).data == 2.0 and (a / b).data == 1.5 and (1 / b).data == 0.25
    assert (-a).data == -6.0 and (10 - a).data == 4.0
