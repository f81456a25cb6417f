"""PyTorch's type promotion: the one rule every binary op follows.

:func:`result_type` ranks operands in three priority groups, as ``torch.result_type``:
tensors with at least one dim, 0-d tensors, then Python numbers.  A lower group
changes the result only when it belongs to a higher *category* (bool < integer <
float) than everything above it, and then it brings its category at the default
width: ``int32 tensor * 2.5`` is the default float dtype (float32 unless
:func:`sandbox.set_default_dtype` says otherwise), ``float32 tensor * 2.5`` stays
float32, ``int32 tensor + 3`` stays int32, ``bool tensor + 3`` is int64.  Between
tensors of one group the wider type wins, and any integer with a float is that
float (``int64 + float32 -> float32``, where numpy would say float64).

:func:`promote` casts the operands to that dtype (differentiably for tensors that
require grad); true division and the float math functions (``exp``, ``sqrt`` ...)
then take the default float dtype for integer and bool results
(:func:`float_result`).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..runtime.dtypes import get_default_dtype

__all__ = ["float_result", "promote", "promote_types", "result_type"]

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def _category(dtype) -> int:
    return _CATEGORY.get(np.dtype(dtype).kind, 2)


def promote_types(a, b) -> np.dtype:
    """The dtype of ``a (op) b`` for two tensors of one priority group (torch.promote_types)."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca == 2 and cb < 2:  # integer/bool with a float: the float (numpy would widen it)
        return a
    if cb == 2 and ca < 2:
        return b
    return np.promote_types(a, b)


def _scalar_dtype(x) -> np.dtype:
    """A Python number's dtype when it decides: bool, int64 or the default float."""
    if isinstance(x, bool | np.bool_):
        return np.dtype(np.bool_)
    if isinstance(x, int | np.integer):
        return np.dtype(np.int64)
    return np.dtype(get_default_dtype())


def _combine(higher, lower):
    """``higher``'s dtype unless ``lower`` is of a higher category (torch's rule)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _category(lower) > _category(higher):
        return promote_types(higher, lower)
    if higher == np.bool_ and lower != np.bool_:  # bool tensor + int scalar -> int64
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> np.dtype:
    """The dtype PyTorch gives an op on ``operands`` (Tensors, arrays, Python numbers)."""
    dims = zero = scalars = None
    for x in operands:
        if x is None:
            continue
        if isinstance(x, Tensor | np.ndarray):
            if x.ndim:
                dims = x.dtype if dims is None else promote_types(dims, x.dtype)
            else:
                zero = x.dtype if zero is None else promote_types(zero, x.dtype)
        else:
            d = _scalar_dtype(x)
            scalars = d if scalars is None else promote_types(scalars, d)
    out = _combine(dims, _combine(zero, scalars))
    return np.dtype(get_default_dtype()) if out is None else np.dtype(out)


def float_result(dtype) -> np.dtype:
    """``dtype`` if it is a float, else the default float dtype (true division, exp ...)."""
    return np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.dtype(get_default_dtype())


def _cast(x, dtype):
    if isinstance(x, Tensor):
        if x.dtype == dtype:
            return x
        from ._arith import astype  # AsType records the cast for tensors that need grad

        return astype(x, dtype)
    if isinstance(x, np.ndarray):
        return x if x.dtype == dtype else x.astype(dtype)
    if isinstance(x, bool | int | float) and dtype.kind == "f":
        return float(x)  # a Python float stays weak: numpy keeps the array's dtype
    if type(x) is int and dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not info.min <= x <= info.max:  # wraps around, as in torch (numpy would raise)
            return np.array(x, dtype=np.int64).astype(dtype)
    return x


def promote(*operands, to_float=False):
    """``operands`` cast to their :func:`result_type` (the default float with ``to_float``
    for integer results), Python numbers kept weak; returns ``(dtype, operands)``."""
    dtype = result_type(*operands)
    if to_float:
        dtype = float_result(dtype)
    return dtype, tuple(_cast(x, dtype) for x in operands)
