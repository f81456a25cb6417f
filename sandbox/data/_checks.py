"""Argument checks shared by the datasets (synthetic sets, folders, pairs, nuclei)."""

from __future__ import annotations

import numpy as np


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_num_classes(num_classes, shape_names) -> int:
    """``num_classes`` of a synthetic dataset: background plus 1 .. all of ``shape_names``."""
    n = _check_int("num_classes", num_classes, 2)
    if n > len(shape_names) + 1:
        raise ValueError(
            f"num_classes must be between 2 and {len(shape_names) + 1} "
            f"(background + {', '.join(shape_names)}), got {num_classes}"
        )
    return n


def _check_count_range(name, value) -> tuple[int, int]:
    """A ``(low, high)`` pair of integers ``1 <= low <= high`` (shapes per sample)."""
    lo, hi = _check_range(name, value)
    if lo < 1 or lo != int(lo) or hi != int(hi):
        raise ValueError(f"{name} must be a pair of integers 1 <= low <= high, got {value!r}")
    return int(lo), int(hi)


def _check_range(name, value):
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (low, high) of numbers, got {value!r}") from None
    if not (0.0 <= lo <= hi):
        raise ValueError(f"{name} must satisfy 0 <= low <= high, got {value!r}")
    return lo, hi


def _check_index(index, length):
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError(f"index must be an integer, got {type(index).__name__}")
    index = int(index)
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError(f"index {index} out of range for a dataset of length {length}")
    return index


def _check_prob(p):
    if not 0.0 <= float(p) <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    return float(p)


def _check_pair(image, mask, nd=2):
    """An image ``(C, *spatial)`` and its mask ``spatial`` of ``nd`` axes (augmentations)."""
    if image.ndim != nd + 1 or mask.ndim != nd or image.shape[1:] != mask.shape:
        axes = "H, W" if nd == 2 else "D, H, W"
        raise ValueError(
            f"expected image (C, {axes}) and mask ({axes}) of the same {axes}; got image "
            f"{image.shape} and mask {mask.shape}"
        )
