"""Exercise 2: a scalar engine the size of micrograd.

What it teaches: reverse mode needs only two things from each operation, its
value and the *local* derivative of that value with respect to each input;
everything else is bookkeeping done once, by the engine (exercises 3 and 4).
Here every op returns a ``Value`` that remembers its parents and those local
derivatives, which is exactly what a graph node is.

Compare with: ``sandbox.autograd.Function.apply`` and ``sandbox.autograd._node.Node``
(the library's node, ``y.grad_fn``: its ``_next`` edges lead to the parents, and
the local rule lives in the Function's ``backward``).

Run: ``python -m pytest exercises/test_ex02_scalar_engine.py --student``
"""

from __future__ import annotations

import math  # noqa: F401 - you will need it

from .._track import todo


class Value:
    """A float that records how it was computed.

    ``parents`` are the Values it was computed from and ``local_grads`` the partial
    derivative of this value with respect to each parent, in the same order.
    ``grad`` (d output / d self) is filled in by :meth:`backward`.
    """

    def __init__(self, data, parents=(), local_grads=(), op=""):
        self.data = float(data)
        self.grad = 0.0
        self.parents = tuple(parents)
        self.local_grads = tuple(local_grads)
        self.op = op

    def __repr__(self):
        return f"Value({self.data:.6g}, grad={self.grad:.6g}{', ' + self.op if self.op else ''})"

    # -- the ops to write: return Value(result, parents, local_grads, op_name)
    def __add__(self, other):
        """``self + other``: value, parents ``(self, other)``, local derivatives."""
        other = _as_value(other)
        todo("Value.__add__")

    def __mul__(self, other):
        """``self * other``: d(ab)/da = b, d(ab)/db = a."""
        other = _as_value(other)
        todo("Value.__mul__")

    def __pow__(self, p):
        """``self ** p`` for a constant number ``p``."""
        if not isinstance(p, int | float):
            raise TypeError("only a constant int or float exponent is supported")
        todo("Value.__pow__")

    def exp(self):
        """e**self; its derivative is its own value."""
        todo("Value.exp")

    def log(self):
        """Natural logarithm."""
        todo("Value.log")

    def tanh(self):
        """tanh; write its derivative with the output y: 1 - y**2."""
        todo("Value.tanh")

    def relu(self):
        """max(self, 0), with derivative 0 at 0 (as the library and torch)."""
        todo("Value.relu")

    # -- given: everything else is built from the ops above
    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-_as_value(other))

    def __truediv__(self, other):
        return self * _as_value(other) ** -1

    def __radd__(self, other):
        return _as_value(other) + self

    def __rmul__(self, other):
        return _as_value(other) * self

    def __rsub__(self, other):
        return _as_value(other) - self

    def __rtruediv__(self, other):
        return _as_value(other) / self

    def backward(self):
        """Fill ``.grad`` of every Value this one depends on (exercise 4)."""
        from .ex04_backward_walk import backward

        backward(self)


def _as_value(x):
    return x if isinstance(x, Value) else Value(x)
