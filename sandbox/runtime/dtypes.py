"""dtype names as in ``torch`` (``sandbox.float32``, ``sandbox.long`` ...).

They are numpy's scalar types, so ``x.dtype == sandbox.float32``,
``x.to(sandbox.float64)`` and ``sandbox.zeros(2, dtype=sandbox.long)`` read as in
PyTorch.  (This module shadows the builtins ``float``, ``int`` and ``bool``.)
:func:`set_default_dtype` / :func:`get_default_dtype` choose the dtype of new float
tensors and layers, as in PyTorch.
"""

import numpy as np

float32 = float = np.float32  # noqa: A001
float64 = double = np.float64
float16 = half = np.float16
int64 = long = np.int64
int32 = int = np.int32  # noqa: A001
int16 = short = np.int16
int8 = np.int8
uint8 = np.uint8
bool = np.bool_  # noqa: A001

# The dtype of new floating tensors and layers (torch.set_default_dtype).
_default_float = np.float32


def set_default_dtype(d) -> None:
    """Make ``d`` (float32 or float64) the dtype of new float tensors and layer weights."""
    global _default_float
    d = np.dtype(d)
    if d not in (np.float32, np.float64):
        raise TypeError(f"set_default_dtype: only float32 and float64 are supported, got {d}")
    _default_float = d.type


def get_default_dtype():
    """The dtype of new float tensors and layers (float32 unless changed)."""
    return _default_float
