"""Layers: thin :class:`Module` wrappers around :mod:`sandbox.functional`."""

from __future__ import annotations

import math

import numpy as np

from .. import functional as F
from ..runtime.device import check_device
from ..runtime.dtypes import get_default_dtype
from . import init
from ._activation import ReLU
from ._module import Module, Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _positive(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _float_dtype(dtype):
    """float32 or float64 (None: the default dtype); anything else is a TypeError."""
    dtype = np.dtype(get_default_dtype() if dtype is None else dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


def _affine_parameters(module: Module, affine: bool, channels: int, dtype) -> None:
    """Register per-channel ``weight`` (ones) and ``bias`` (zeros), or ``None`` placeholders."""
    if affine:
        module.weight = Parameter(np.ones(channels, dtype))
        module.bias = Parameter(np.zeros(channels, dtype))
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


class Identity(Module):
    """Returns its input unchanged."""

    def forward(self, x):
        return x


class Linear(Module):
    """``y = x Wᵀ + b`` with ``W`` of shape ``(out_features, in_features)``."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        check_device(device)
        self.in_features = _positive(in_features, "in_features")
        self.out_features = _positive(out_features, "out_features")
        dtype = _float_dtype(dtype)
        self.weight = Parameter(np.empty((out_features, in_features), dtype))
        self.bias = Parameter(np.empty(out_features, dtype)) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        y = x @ self.weight.T
        return y + self.bias if self.bias is not None else y

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class _MaxPoolNd(Module):
    """Max pooling of any rank; subclasses set ``_pool`` (the functional op)."""

    _pool = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.ceil_mode = ceil_mode

    def forward(self, x):
        return type(self)._pool(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class _AvgPoolNd(Module):
    """Average pooling of any rank; subclasses set ``_pool`` (the functional op)."""

    _pool = None

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x):
        return type(self)._pool(
            x,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling (PyTorch's semantics, incl. ``ceil_mode`` and dilation)."""

    _pool = staticmethod(F.max_pool2d)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling."""

    _pool = staticmethod(F.avg_pool2d)


def resample_repr(mode, align_corners, antialias) -> str:
    """``mode=..., align_corners=..., antialias=True`` with the defaults left out.

    Parameters
    ----------
    mode : str
    align_corners : bool or None
        Shown unless None.
    antialias : bool
        Shown when True.

    Returns
    -------
    str
    """
    s = f"mode={mode!r}"
    if align_corners is not None:
        s += f", align_corners={align_corners}"
    if antialias:
        s += ", antialias=True"
    return s


class Upsample(Module):
    """Resampling layer for every mode of :func:`sandbox.functional.interpolate`.

    Unlike PyTorch's ``nn.Upsample`` it also takes ``antialias`` (bilinear,
    bicubic, lanczos3) and works in 1-D, 2-D and 3-D for every mode.
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners=None,
        recompute_scale_factor=None,
        antialias: bool = False,
    ):
        super().__init__()
        from ..array.resample import check_options

        check_options(mode, align_corners, antialias)
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample needs exactly one of size or scale_factor")
        self.size = size
        self.scale_factor = scale_factor
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor
        self.antialias = antialias

    def forward(self, x):
        return F.interpolate(
            x,
            size=self.size,
            scale_factor=self.scale_factor,
            mode=self.mode,
            align_corners=self.align_corners,
            antialias=self.antialias,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, {resample_repr(self.mode, self.align_corners, self.antialias)}"


class Dropout(Module):
    """Zeroes elements with probability ``p`` in training, scaling the rest by ``1/(1-p)``."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)  # accepted; the result is a new tensor
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability p must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Dropout2d(Dropout):
    """Zeroes whole channels with probability ``p`` in training."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training)


class _ModuleSequence(Module):
    """Shared list behaviour of :class:`Sequential` and :class:`ModuleList`."""

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module):
        """Add ``module`` at the end (registered under its index)."""
        self.add_module(str(len(self)), module)
        return self

    def __getitem__(self, index):
        items = list(self._modules.values())
        if isinstance(index, slice):
            return type(self)(items[index])
        return items[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Sequential(_ModuleSequence):
    """Applies its modules in order: ``Sequential(conv, norm, relu)``.

    A batch norm followed by a ``ReLU`` runs as one fused pass forward and backward
    (:meth:`BatchNorm2d.forward_relu`), which gives bitwise the same values and
    gradients as the two modules one after the other, with one pass over memory
    instead of two.
    """

    def __init__(self, *modules: Module):
        super().__init__(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(*list(self._modules.values())[index])
        return super().__getitem__(index)

    def forward(self, x):
        modules = list(self._modules.values())
        last = len(modules) - 1
        i = 0
        while i <= last:
            m = modules[i]
            if i < last and type(modules[i + 1]) is ReLU:
                fuses = getattr(m, "fuses_relu", None)  # batch norms: see _BatchNorm
                if fuses and fuses():
                    x = m.forward_relu(x)
                    i += 2
                    continue
            x = m(x)
            i += 1
        return x


class ModuleList(_ModuleSequence):
    """A list of modules, registered so their parameters are found."""
