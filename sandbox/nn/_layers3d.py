"""3-D layers over ``(N, C, D, H, W)`` volumes: thin wrappers around :mod:`sandbox.functional`.

``Conv3d`` and ``ConvTranspose3d`` live with the 2-D convolutions (``_conv``).

PyTorch's names, arguments, weight layouts and default initialisation.
``GroupNorm`` and ``Upsample`` (in ``_layers``) already take 5-D inputs.
"""

from __future__ import annotations

from .. import functional as F
from ._conv import Conv3d, ConvTranspose3d
from ._layers import _AvgPoolNd, _MaxPoolNd
from ._norm import _BatchNorm

__all__ = ["AvgPool3d", "BatchNorm3d", "Conv3d", "ConvTranspose3d", "MaxPool3d"]


def _check_5d(x, name: str) -> None:
    if x.ndim != 5:
        raise ValueError(f"{name} expects a 5-D input (N, C, D, H, W), got shape {tuple(x.shape)}")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over ``(N, C, D, H, W)`` with running statistics.

    It shares :class:`BatchNorm2d`'s base but is not a subclass of it, so that
    ``isinstance(m, BatchNorm2d)`` keeps meaning 2-D (the PyTorch and ONNX exporters map
    that class to ``torch.nn.BatchNorm2d``).
    """

    def forward(self, x):
        _check_5d(x, "BatchNorm3d")
        return super().forward(x)

    def forward_relu(self, x):
        _check_5d(x, "BatchNorm3d")
        return super().forward_relu(x)


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling (PyTorch's semantics, incl. ``ceil_mode`` and dilation)."""

    _pool = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling."""

    _pool = staticmethod(F.avg_pool3d)
