"""dtype names as in ``torch`` (``sandbox.float32``, ``sandbox.long`` ...).

They are numpy's scalar types, so ``x.dtype == sandbox.float32``,
``x.to(sandbox.float64)`` and ``sandbox.zeros(2, dtype=sandbox.long)`` read as in
PyTorch.  (This module shadows the builtins ``float``, ``int`` and ``bool``.)
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
