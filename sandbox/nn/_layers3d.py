"""3-D layers over ``(N, C, D, H, W)`` volumes: thin wrappers around :mod:`sandbox.functional`.

PyTorch's names, arguments, weight layouts and default initialisation.
``GroupNorm`` and ``Upsample`` (in ``_layers``) already take 5-D inputs.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..array._validate import triple
from ._conv import _ConvNd
from ._layers import _AvgPoolNd, _MaxPoolNd
from ._norm import _BatchNorm

__all__ = ["AvgPool3d", "BatchNorm3d", "Conv3d", "ConvTranspose3d", "MaxPool3d"]


def _check_5d(x, name: str) -> None:
    if x.ndim != 5:
        raise ValueError(f"{name} expects a 5-D input (N, C, D, H, W), got shape {tuple(x.shape)}")


class _Conv3dBase(_ConvNd):
    _ntuple = staticmethod(triple)  # validates the ranges when the layer is made


class Conv3d(_Conv3dBase):
    """3-D convolution over ``(N, C, D, H, W)`` inputs, PyTorch's semantics and weight layout."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, dtype=np.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, dtype)

    def forward(self, x):
        return F.conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ConvTranspose3d(_Conv3dBase):
    """Transposed 3-D convolution (the adjoint of :class:`Conv3d`), PyTorch's weight layout."""

    transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 dtype=np.float32):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, dtype, output_padding=output_padding)

    def forward(self, x):
        return F.conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


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
