"""Argument checks shared by the array-level ops (conv, pool, norm).

These run in the thin Python wrappers; the Cython kernels behind them never
validate.  Every failure names the argument and what would be valid.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FLOAT_DTYPES", "PlanCache", "check_float", "check_same_dtype", "check_ndim",
           "check_groups", "ntuple", "pair", "triple"]

_WHAT = {2: "pair", 3: "triple"}

#: the dtypes the kernels take; ``dtype in FLOAT_DTYPES`` is an identity test for
#: the usual (native) dtypes, cheaper than comparing with ``np.float32`` (a type)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def ntuple(value, name: str, minimum: int, n: int, what: str | None = None) -> tuple[int, ...]:
    """``int`` or length-``n`` sequence of ints -> ``n`` ints, each ``>= minimum``.

    The one tuple helper of the project (the layers above use it too).  ``what`` names
    the sequence in the error; by default "pair" for 2, "triple" for 3.
    """
    if type(value) is int and value >= minimum:  # the common cases, first (no bool)
        return (value,) * n
    if type(value) is tuple and len(value) == n:
        for v in value:
            if type(v) is not int or v < minimum:
                break
        else:
            return value
    what = what or _WHAT.get(n, f"sequence of {n}")
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        result = (int(value),) * n
    elif (
        isinstance(value, (tuple, list))
        and len(value) == n
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        result = tuple(int(v) for v in value)
    else:
        raise TypeError(f"{name} must be an int or a {what} of ints, got {value!r}")
    if min(result) < minimum:
        kind = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name} must be {kind} (>= {minimum}), got {value!r}")
    return result


def pair(value, name: str, minimum: int) -> tuple[int, int]:
    """``int`` or length-2 sequence of ints -> ``(rows, cols)``, each ``>= minimum``."""
    return ntuple(value, name, minimum, 2)


def triple(value, name: str, minimum: int) -> tuple[int, int, int]:
    """``int`` or length-3 sequence of ints -> ``(depth, rows, cols)``, each ``>= minimum``."""
    return ntuple(value, name, minimum, 3)


def check_divisor(divisor_override) -> int:
    """A pooling ``divisor_override`` as the kernels take it: 0 for None, else the
    positive int itself."""
    if divisor_override is None:
        return 0
    if (isinstance(divisor_override, bool)
            or not isinstance(divisor_override, (int, np.integer)) or divisor_override <= 0):
        raise ValueError(f"divisor_override must be None or a positive int, "
                         f"got {divisor_override!r}")
    return int(divisor_override)


def check_float(arr, name: str) -> np.ndarray:
    """Return ``arr``, raising TypeError unless it is a float32/float64 ndarray."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64, got {arr.dtype}")
    return arr


def check_same_dtype(arr, ref, name: str) -> None:
    """TypeError (with the fix) unless ``arr`` has the dtype of the input ``ref``."""
    if arr.dtype != ref.dtype:
        raise TypeError(
            f"{name} dtype {arr.dtype} does not match input dtype {ref.dtype} "
            f"(cast one of them, e.g. x.astype(np.{arr.dtype}) or model.to(np.{ref.dtype}))"
        )


def check_ndim(arr, name: str, ndim: int, layout: str) -> None:
    """ValueError unless ``arr`` has ``ndim`` dimensions (``layout`` names them)."""
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {layout}, got shape {arr.shape}")


def check_groups(groups) -> int:
    """``groups`` as a positive int, else ValueError."""
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}")
    return int(groups)


class PlanCache:
    """Validated requests by a key that identifies them (shapes, dtypes, options and the
    options' types), for wrappers whose checks cost as much as a small kernel: a layer
    repeats its request at every call.  Store only requests that passed every check, so
    a hit means the same checks would pass.  An unhashable key (a list option) is never
    stored: that request is validated every time.  A full cache (a sweep of shapes)
    starts again."""

    def __init__(self, size: int):
        self._plans: dict = {}
        self._size = size

    def get(self, key):
        """The plan stored under ``key``, or None (none, or ``key`` is unhashable)."""
        try:
            return self._plans.get(key)
        except TypeError:
            return None

    def put(self, key, plan) -> None:
        """Store ``plan`` under ``key`` (nothing for an unhashable key)."""
        try:
            hash(key)
        except TypeError:
            return
        if len(self._plans) >= self._size:
            self._plans.clear()
        self._plans[key] = plan
