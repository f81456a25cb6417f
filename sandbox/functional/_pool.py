"""Differentiable 2-D max and average pooling (array ops in ``sandbox.array.pool``).

The Functions come from :func:`sandbox.functional._poolnd.pool_family`, shared by
both ranks; this module adds the PyTorch-style wrappers.
"""

from __future__ import annotations

from ..array import pool as _pool
from ._poolnd import pool_family

__all__ = ["avg_pool2d", "max_pool2d"]


_FAMILY = pool_family(2, _pool)
MaxPool2d = _FAMILY.max_pool
MaxPool2dScatter = _FAMILY.max_pool_scatter
MaxPool2dGather = _FAMILY.max_pool_gather
AvgPool2d = _FAMILY.avg_pool
AvgPool2dAdjoint = _FAMILY.avg_pool_adjoint


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling of a Tensor, as ``torch.nn.functional.max_pool2d``.

    With ``return_indices=True`` also returns the int64 flat argmax indices
    (a Tensor without gradient).
    """
    out, idx = MaxPool2d.apply(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling of a Tensor, as ``torch.nn.functional.avg_pool2d``."""
    return AvgPool2d.apply(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override)
