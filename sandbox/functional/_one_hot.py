"""``one_hot``: class indices to an int64 indicator tensor, as ``torch.nn.functional.one_hot``."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor


def one_hot(tensor, num_classes=-1):
    """Indicator of each index along a new last dim of size ``num_classes``.

    Parameters
    ----------
    tensor : Tensor or array of int
        Class indices, any shape.
    num_classes : int, default -1
        Size of the new dim; -1 means ``max(tensor) + 1``.

    Returns
    -------
    Tensor
        int64, shape ``tensor.shape + (num_classes,)`` (not differentiable; use
        ``.permute(0, 3, 1, 2)`` to put classes on axis 1 of an ``(N, H, W)`` mask).
    """
    idx = tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"one_hot: expected an integer (class index) tensor, got dtype {idx.dtype}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int | np.integer):
        raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    if idx.size and idx.min() < 0:
        raise ValueError("one_hot: class values must be non-negative")
    if num_classes == -1:
        if not idx.size:
            raise ValueError("one_hot: cannot infer num_classes from an empty tensor; pass it")
        num_classes = int(idx.max()) + 1
    elif num_classes < 1:
        raise ValueError(f"one_hot: num_classes must be positive or -1, got {num_classes}")
    elif idx.size and idx.max() >= num_classes:
        raise ValueError(
            f"one_hot: class value {int(idx.max())} is out of range for num_classes={num_classes}"
        )
    out = (idx[..., None] == np.arange(num_classes)).astype(np.int64)
    return Tensor._make(out)
