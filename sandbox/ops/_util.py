"""Small helpers shared by the op modules."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor


def operand(x, op):
    """Normalise the other operand of a binary op.

    Tensors stay Tensors; Python scalars stay Python scalars (so float32 stays float32,
    as numpy treats them as weakly typed); numpy scalars become Python scalars for the
    same reason; anything else becomes an ndarray constant.
    """
    if isinstance(x, np.generic):  # before float: np.float64 subclasses float
        return x.item()
    if isinstance(x, Tensor | np.ndarray | int | float | bool):
        return x
    try:
        return np.asarray(x)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise TypeError(f"{op}: unsupported operand of type {type(x).__name__}") from exc


def shape_of(x):
    return x.shape if isinstance(x, Tensor | np.ndarray) else ()


def normalize_axes(axis, ndim, op):
    """``axis`` (None, int or tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int | np.integer) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise ValueError(f"{op}: axis {a} is out of range for a {ndim}-d tensor")
        out.append(int(a) % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: repeated axis in {axis}")
    return tuple(sorted(out))


def pick_axis(axis, dim, default=None):
    """Accept numpy's ``axis=`` or torch's ``dim=`` (not both)."""
    if axis is not None and dim is not None:
        raise TypeError("give either axis= or dim=, not both")
    return default if axis is None and dim is None else (axis if dim is None else dim)


def pick_keep(keepdims, keepdim):
    return bool(keepdims or keepdim)
