"""Exercise 6: op backwards (see exercises/student/ex06_op_backwards.py).

Every backward is checked twice: against central differences of the forward
(the math) and against the library's autograd (the code you can read).
"""

import numpy as np
import pytest

import sandbox
from exercises._checks import fd_vjp
from exercises._track import load

ex = load("ex06_op_backwards")
rng = np.random.default_rng(6)


def library_grads(fn, *arrays):
    """Gradients of sum(g * fn(*tensors)) from sandbox's autograd, and the g used."""
    ts = [sandbox.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    g = rng.standard_normal(out.shape)
    out.backward(g)
    return g, [t.grad.numpy() for t in ts]


BINARY_SHAPES = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 2))]


@pytest.mark.parametrize("sa, sb", BINARY_SHAPES, ids=str)
@pytest.mark.parametrize("op", ["mul", "div"])
def test_mul_div(op, sa, sb):
    a = rng.standard_normal(sa)
    b = rng.uniform(0.5, 2.0, sb) * rng.choice([-1, 1], sb)
    fwd = {"mul": lambda s, t: s * t, "div": lambda s, t: s / t}[op]
    bwd = getattr(ex, f"{op}_backward")
    g, (la, lb) = library_grads(fwd, a, b)
    ga, gb = bwd(g, a, b)
    assert np.shape(ga) == sa and np.shape(gb) == sb
    np.testing.assert_allclose(ga, la, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, lb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ga, fd_vjp(lambda s: fwd(s, b), a, g), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, fd_vjp(lambda t: fwd(a, t), b, g), rtol=1e-6, atol=1e-8)


def test_exp_uses_the_output():
    x = rng.standard_normal((3, 5))
    g = rng.standard_normal((3, 5))
    out = np.exp(x)
    np.testing.assert_allclose(ex.exp_backward(g, out), fd_vjp(np.exp, x, g), rtol=1e-7)
    # it must be written with the output it is given, not by recomputing exp(x)
    np.testing.assert_allclose(ex.exp_backward(g, np.full_like(x, 2.0)), 2.0 * g)


@pytest.mark.parametrize(
    "sa, sb", [((3, 4), (4, 2)), ((5, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 6))], ids=str
)
def test_matmul(sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    g, (la, lb) = library_grads(lambda s, t: s @ t, a, b)
    ga, gb = ex.matmul_backward(g, a, b)
    assert ga.shape == sa and gb.shape == sb
    np.testing.assert_allclose(ga, la, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, lb, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb, fd_vjp(lambda t: a @ t, b, g), rtol=1e-6, atol=1e-7)


REDUCE = [(None, False), (0, False), (-1, True), ((0, 2), False), ((1,), True)]


@pytest.mark.parametrize("axis, keepdims", REDUCE, ids=str)
@pytest.mark.parametrize("op", ["sum", "mean", "max"])
def test_reductions(op, axis, keepdims):
    x = rng.standard_normal((3, 4, 5))

    def fwd(t):
        # amax: the maximum's values, with the gradient shared among ties (t.max(dim)
        # returns PyTorch's (values, indices) pair and sends the gradient to one index)
        name = "amax" if op == "max" and isinstance(t, sandbox.Tensor) else op
        return getattr(t, name)(axis=axis, keepdims=keepdims)

    g, (lx,) = library_grads(fwd, x)
    if op == "max":
        gx = ex.max_backward(g, x, axis, keepdims)
    else:
        gx = getattr(ex, f"{op}_backward")(g, x.shape, axis, keepdims)
    assert gx.shape == x.shape
    np.testing.assert_allclose(gx, lx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, fd_vjp(fwd, x, g), rtol=1e-6, atol=1e-8)


def test_max_shares_ties():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    gx = ex.max_backward(np.array([6.0, 3.0]), x, axis=1)
    np.testing.assert_allclose(gx, [[0.0, 3.0, 3.0], [1.0, 1.0, 1.0]])
    g, (lx,) = library_grads(lambda t: t.amax(axis=1), x)
    np.testing.assert_allclose(ex.max_backward(g, x, axis=1), lx)
