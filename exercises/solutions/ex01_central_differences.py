"""Exercise 1: central differences, the referee of every gradient.

What it teaches: a derivative can be *measured* without knowing any rule, by
evaluating the function twice around a point; the central difference
``(f(x+h) - f(x-h)) / 2h`` is accurate to O(h²), so every backward written later
in this track (and in the library) is checked against it.  A backward computes a
vector-Jacobian product, so the check compares ``<g, J d>`` both ways.

Compare with: ``sandbox.gradcheck.gradcheck`` (the library's checker, same idea
with float64 and per-element perturbations).
"""

from __future__ import annotations

import numpy as np


def central_difference(f, x: float, eps: float = 1e-6) -> float:
    """Estimate ``f'(x)`` of a scalar function of one float by a central difference."""
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def numerical_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Gradient of a scalar-valued ``f`` at the float64 array ``x``.

    One central difference per element: perturb ``x`` in place, evaluate, put the
    value back.  ``x`` holds its original values when the function returns.
    """
    grad = np.zeros_like(x, dtype=np.float64)
    flat = x.reshape(-1)  # a view: writing into it perturbs x
    out = grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        plus = float(f(x))
        flat[i] = old - eps
        minus = float(f(x))
        flat[i] = old
        out[i] = (plus - minus) / (2 * eps)
    return grad


def numerical_vjp(f, x: np.ndarray, grad_out: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """The vector-Jacobian product ``grad_out · ∂f/∂x`` of an array-valued ``f``.

    That is what a backward returns for ``x``: the gradient of
    ``sum(grad_out * f(x))`` with respect to ``x``.
    """
    return numerical_gradient(lambda t: np.sum(grad_out * f(t)), x, eps)
