"""Convolution layers: :class:`Conv2d`, :class:`Conv3d` and their transposed twins.

One base, :class:`_ConvNd`, validates every argument of every rank when the layer is
made (same checks, same messages), with PyTorch's arguments and defaults:
``padding_mode``, ``device`` and ``dtype`` (None: :func:`sandbox.get_default_dtype`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from ..array._validate import ntuple
from ..functional._conv import string_padding
from ..runtime.device import check_device
from . import init
from ._layers import _PADDING_MODES, _float_dtype, _positive
from ._module import Module, Parameter

__all__ = ["Conv2d", "Conv3d", "ConvTranspose2d", "ConvTranspose3d"]


class _ConvNd(Module):
    """Shared by the convolution layers of every rank; subclasses set ``_nd`` (the
    spatial rank), ``transposed`` and ``_conv`` (the functional op)."""

    _nd = 2
    transposed = False
    _conv = None

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride,
        padding,
        dilation,
        groups,
        bias,
        padding_mode,
        device,
        dtype,
        output_padding=0,
    ):
        nd = self._nd
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(
                f"ConvTranspose{nd}d only supports padding_mode='zeros' (as PyTorch)")
        check_device(device)
        super().__init__()
        self.in_channels = _positive(in_channels, "in_channels")
        self.out_channels = _positive(out_channels, "out_channels")
        self.groups = _positive(groups, "groups")
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"groups={groups} must divide in_channels={in_channels} "
                f"and out_channels={out_channels}"
            )
        self.kernel_size = ntuple(kernel_size, "kernel_size", 1, nd)
        self.stride = ntuple(stride, "stride", 1, nd)
        if isinstance(padding, str) and not self.transposed:
            string_padding(padding, self.kernel_size, self.stride, dilation)  # validates
            self.padding = padding
        else:
            self.padding = ntuple(padding, "padding", 0, nd)
        self.dilation = ntuple(dilation, "dilation", 1, nd)
        self.output_padding = ntuple(output_padding, "output_padding", 0, nd)
        self.padding_mode = padding_mode
        dtype = _float_dtype(dtype)
        if self.transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(np.empty(shape, dtype))
        if bias:
            self.bias = Parameter(np.empty(out_channels, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch's default: kaiming_uniform(a=sqrt(5)) -> U(±1/sqrt(fan_in)), same bound for bias.
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight.shape)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        if self.transposed:
            return type(self)._conv(x, self.weight, self.bias, self.stride, self.padding,
                                    self.output_padding, self.groups, self.dilation)
        padding = self.padding
        if self.padding_mode != "zeros":  # pad explicitly, then convolve without padding
            if isinstance(padding, str):
                widths = string_padding(padding, self.kernel_size, self.stride, self.dilation)
            else:  # F.pad's order: last axis first
                widths = tuple(w for p in reversed(padding) for w in (p, p))
            x = F.pad(x, widths, mode=self.padding_mode)
            padding = (0,) * self._nd
        return type(self)._conv(x, self.weight, self.bias, self.stride, padding, self.dilation,
                                self.groups)

    def extra_repr(self) -> str:
        s = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        zeros, ones = (0,) * len(self.kernel_size), (1,) * len(self.kernel_size)
        if self.padding != zeros:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else \
                f", padding={self.padding}"
        if self.dilation != ones:
            s += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        if self.bias is None:
            s += ", bias=False"
        return s


class _Conv(_ConvNd):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype,
                         output_padding=output_padding)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C, H, W)`` inputs, PyTorch's semantics and weight layout."""

    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C, D, H, W)`` inputs, PyTorch's semantics and weight layout."""

    _nd = 3
    _conv = staticmethod(F.conv3d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution (the adjoint of :class:`Conv2d`), PyTorch's weight layout."""

    _conv = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution (the adjoint of :class:`Conv3d`), PyTorch's weight layout."""

    _nd = 3
    _conv = staticmethod(F.conv_transpose3d)
