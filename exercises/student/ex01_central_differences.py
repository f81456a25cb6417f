"""Exercise 1: central differences, the referee of every gradient.

What it teaches: a derivative can be *measured* without knowing any rule, by
evaluating the function twice around a point; the central difference
``(f(x+h) - f(x-h)) / 2h`` is accurate to O(h²), so every backward written later
in this track (and in the library) is checked against it.  A backward computes a
vector-Jacobian product, so the check compares ``<g, J d>`` both ways.

Compare with: ``sandbox.gradcheck.gradcheck`` (the library's checker, same idea
with float64 and per-element perturbations).

Run: ``python -m pytest exercises/test_ex01_central_differences.py --student``
"""

from __future__ import annotations

import numpy as np

from .._track import todo


def central_difference(f, x: float, eps: float = 1e-6) -> float:
    """Estimate ``f'(x)`` of a scalar function of one float by a central difference.

    Hint: ``(f(x + eps) - f(x - eps)) / (2 * eps)``; a one-sided difference is
    only accurate to O(eps) and the tests can tell.
    """
    todo("central_difference")


def numerical_gradient(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Gradient of a scalar-valued ``f`` at the float64 array ``x``.

    One central difference per element: perturb ``x`` in place, evaluate, put the
    value back.  ``x`` must hold its original values when the function returns.
    Hint: ``x.reshape(-1)`` is a view, so writing into it perturbs ``x``.
    """
    todo("numerical_gradient")


def numerical_vjp(f, x: np.ndarray, grad_out: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """The vector-Jacobian product ``grad_out · ∂f/∂x`` of an array-valued ``f``.

    That is what a backward returns for ``x``: the gradient of
    ``sum(grad_out * f(x))`` with respect to ``x``.  One line with the function above.
    """
    todo("numerical_vjp")
