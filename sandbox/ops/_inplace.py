"""In-place updates (``add_``, ``mul_``, ``clamp_``, ``fill_``, ``copy_`` ...) and ``Tensor.to``.

In-place ops write into the tensor's array and return the tensor, as PyTorch.  They
serve tensors outside the autograd graph: accumulators, buffers, and parameters
updated under ``no_grad()``.  While grad mode is on, a tensor that requires grad
(or an operand that does) raises a ``RuntimeError`` naming the out-of-place form,
because an in-place op is not recorded in the graph.  Each write bumps the tensor's
version counter, so a backward that still needs the old values raises PyTorch's
"modified by an inplace operation" error instead of using the new ones.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, is_grad_enabled
from ..runtime.device import parse_to
from ._arith import astype


def _value(x):
    return x._data if isinstance(x, Tensor) else x


def _check(x, other, op):
    """Refuse in-place writes the graph cannot follow; count the write in ``x``'s version."""
    x._bump_version()
    if not is_grad_enabled():
        return
    if x.requires_grad and x.grad_fn is None:
        raise RuntimeError(
            f"{op}: a leaf tensor that requires grad cannot be changed in place while "
            "recording; do it inside `with sandbox.no_grad():`"
        )
    if x.requires_grad or (isinstance(other, Tensor) and other.requires_grad):
        raise RuntimeError(
            f"{op}: in-place ops on tensors in the autograd graph are not supported; use "
            f"the out-of-place form (e.g. x = x.{op.rstrip('_')}(...))"
        )


def _ufunc_(ufunc, name):
    def op_(x, other, *, alpha=1):
        _check(x, other, name)
        value = _value(other)
        if alpha != 1:
            value = np.multiply(value, alpha)
        ufunc(x._data, value, out=x._data, casting="same_kind")
        return x

    op_.__name__ = name
    return op_


add_ = _ufunc_(np.add, "add_")
sub_ = _ufunc_(np.subtract, "sub_")


def mul_(x, other):
    """``x *= other`` in place."""
    _check(x, other, "mul_")
    np.multiply(x._data, _value(other), out=x._data, casting="same_kind")
    return x


def div_(x, other):
    """``x /= other`` in place (float tensors)."""
    _check(x, other, "div_")
    np.true_divide(x._data, _value(other), out=x._data, casting="same_kind")
    return x


def clamp_(x, min=None, max=None):  # noqa: A002 - torch's argument names
    """Limit ``x`` to ``[min, max]`` in place."""
    if min is None and max is None:
        raise ValueError("clamp_: give at least one of min and max")
    _check(x, None, "clamp_")
    np.clip(x._data, _value(min), _value(max), out=x._data)
    return x


def fill_(x, value):
    """Set every element to ``value``."""
    _check(x, value, "fill_")
    x._data[...] = _value(value)
    return x


def copy_(x, src):
    """Copy ``src`` (broadcast, cast to ``x``'s dtype) into ``x``."""
    _check(x, src, "copy_")
    np.copyto(x._data, np.asarray(_value(src)), casting="unsafe")
    return x


def to(x, *args, **kwargs):
    """``x`` with the requested dtype (device: the CPU only); self when nothing changes."""
    _, dtype = parse_to(args, kwargs)
    if dtype is None or dtype == x.dtype:
        return x.clone() if kwargs.get("copy") else x
    return astype(x, dtype)
