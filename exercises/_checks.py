"""Test helpers of the track, independent of any exercise (so a student's bug in
exercise 1 cannot hide one in exercise 6)."""

from __future__ import annotations

import numpy as np


def fd_grad(f, x, eps=1e-6):
    """Central-difference gradient of a scalar ``f`` at a float64 array ``x``."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        plus = float(f(x))
        x[i] = old - eps
        minus = float(f(x))
        x[i] = old
        g[i] = (plus - minus) / (2 * eps)
    return g


def fd_vjp(f, x, grad_out, eps=1e-6):
    """``grad_out · ∂f/∂x`` by central differences (what a backward must return)."""
    return fd_grad(lambda t: np.sum(grad_out * f(t)), x, eps)


def fd_scalar(f, x, eps=1e-6):
    return (f(x + eps) - f(x - eps)) / (2 * eps)
