"""Tensor constructors (float32 by default, as torch)."""

from __future__ import annotations

import numpy as np

from .._random import default_generator
from ..autograd import Tensor


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = shape[0]
    return tuple(int(n) for n in shape)


def _new(data, requires_grad):
    return Tensor(data, requires_grad=requires_grad)


def zeros(*shape, dtype=np.float32, requires_grad=False):
    """A tensor of zeros."""
    return _new(np.zeros(_shape(shape), dtype), requires_grad)


def ones(*shape, dtype=np.float32, requires_grad=False):
    """A tensor of ones."""
    return _new(np.ones(_shape(shape), dtype), requires_grad)


def full(shape, value, dtype=np.float32, requires_grad=False):
    """A tensor filled with ``value``."""
    return _new(np.full(_shape((shape,)), value, dtype), requires_grad)


def zeros_like(t, dtype=None, requires_grad=False):
    """Zeros with the shape (and dtype, unless given) of ``t``."""
    return _new(np.zeros(np.shape(t), dtype or np.asarray(t).dtype), requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    """Ones with the shape (and dtype, unless given) of ``t``."""
    return _new(np.ones(np.shape(t), dtype or np.asarray(t).dtype), requires_grad)


def randn(*shape, rng=None, dtype=np.float32, requires_grad=False):
    """Standard normal samples from ``rng`` (a ``np.random.Generator``)."""
    rng = default_generator() if rng is None else rng
    return _new(rng.standard_normal(_shape(shape)).astype(dtype), requires_grad)


def rand(*shape, rng=None, dtype=np.float32, requires_grad=False):
    """Uniform samples in [0, 1) from ``rng``."""
    rng = default_generator() if rng is None else rng
    return _new(rng.random(_shape(shape)).astype(dtype), requires_grad)


def arange(*args, dtype=None):
    """``np.arange`` as a tensor (int64 for integer arguments, else float32)."""
    data = np.arange(*args)
    if dtype is None and data.dtype.kind == "f":
        dtype = np.float32
    return Tensor(data if dtype is None else data.astype(dtype))
