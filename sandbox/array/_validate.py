"""Argument checks shared by the array-level ops (conv, pool, norm).

These run in the thin Python wrappers; the Cython kernels behind them never
validate.  Every failure names the argument and what would be valid.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_float", "check_same_dtype", "check_ndim", "check_groups", "pair", "triple"]


def pair(value, name: str, minimum: int) -> tuple[int, int]:
    """``int`` or length-2 sequence of ints -> ``(rows, cols)``, each ``>= minimum``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        result = (int(value), int(value))
    elif (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        result = (int(value[0]), int(value[1]))
    else:
        raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}")
    if min(result) < minimum:
        what = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name} must be {what} (>= {minimum}), got {value!r}")
    return result


def triple(value, name: str, minimum: int) -> tuple[int, int, int]:
    """``int`` or length-3 sequence of ints -> ``(depth, rows, cols)``, each ``>= minimum``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        result = (int(value),) * 3
    elif (
        isinstance(value, (tuple, list))
        and len(value) == 3
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        result = tuple(int(v) for v in value)
    else:
        raise TypeError(f"{name} must be an int or a triple of ints, got {value!r}")
    if min(result) < minimum:
        what = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name} must be {what} (>= {minimum}), got {value!r}")
    return result


def check_float(arr, name: str) -> np.ndarray:
    """Return ``arr``, raising TypeError unless it is a float32/float64 ndarray."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype not in (np.float32, np.float64):
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
