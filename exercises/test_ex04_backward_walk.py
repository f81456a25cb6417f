"""Exercise 4: the backward walk (see exercises/student/ex04_backward_walk.py).

The last two tests run your whole scalar engine (exercises 2-4) end to end and
compare it with central differences and with the library's autograd.
"""

import math

import numpy as np
import pytest

import sandbox
from exercises._checks import fd_scalar
from exercises._track import load

ex = load("ex04_backward_walk")
engine = load("ex02_scalar_engine")


class Node:
    def __init__(self, parents=(), local_grads=()):
        self.grad = 0.0
        self.parents = tuple(parents)
        self.local_grads = tuple(local_grads)


def test_chain_rule_multiplies_along_a_path():
    x = Node()
    a = Node([x], [3.0])
    y = Node([a], [-2.0])
    ex.backward(y)
    assert y.grad == 1.0 and a.grad == -2.0 and x.grad == -6.0


def test_fan_out_adds_and_order_matters():
    # y = f(a, b), a = g(x), b = h(a): a gets gradient from y directly and through b.
    # Visiting a before b has passed its share gives the wrong answer.
    x = Node()
    a = Node([x], [2.0])
    b = Node([a], [5.0])
    y = Node([a, b], [7.0, 11.0])
    ex.backward(y)
    assert b.grad == 11.0
    assert a.grad == 7.0 + 11.0 * 5.0
    assert x.grad == 2.0 * a.grad


def test_repeated_edge_counts_twice():
    x = Node()
    sq = Node([x, x], [4.0, 4.0])  # x * x at x = 4
    ex.backward(sq)
    assert x.grad == 8.0


def test_deep_chain():
    leaf = node = Node()
    for _ in range(20_000):
        node = Node([node], [1.0001])
    ex.backward(node)
    assert leaf.grad == pytest.approx(1.0001**20_000, rel=1e-9)


def _loss(a, b, c):
    # Works for Values and for sandbox Tensors alike.
    h = (a * b + c**2).tanh()
    z = h * a + (b / c).exp() - (a * a + 1.0).log()
    return z * 0.5 + h.relu() * c


def test_scalar_engine_matches_central_differences():
    point = {"a": 0.7, "b": -1.3, "c": 0.4}
    vals = {k: engine.Value(v) for k, v in point.items()}
    out = _loss(**vals)
    out.backward()
    for name in point:

        def f(t, name=name):
            args = {k: engine.Value(t if k == name else v) for k, v in point.items()}
            return _loss(**args).data

        assert vals[name].grad == pytest.approx(fd_scalar(f, point[name]), rel=1e-6)


def test_scalar_engine_matches_the_library():
    rng = np.random.default_rng(3)
    for _ in range(5):
        point = dict(zip("abc", rng.uniform(0.2, 1.5, 3) * rng.choice([-1, 1], 3), strict=True))
        vals = {k: engine.Value(v) for k, v in point.items()}
        tens = {k: sandbox.tensor(np.float64(v), requires_grad=True) for k, v in point.items()}
        out_v, out_t = _loss(**vals), _loss(**tens)
        assert out_v.data == pytest.approx(out_t.item(), rel=1e-12)
        out_v.backward()
        out_t.backward()
        for k in point:
            assert vals[k].grad == pytest.approx(tens[k].grad.item(), rel=1e-10), k
    assert math.isfinite(out_v.data)
