"""Tensor methods for dtypes, copies, devices and new tensors (part of the mixin of
:mod:`sandbox.ops._methods`, installed on Tensor with it)."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..runtime import device as _device
from . import _arith, _create, _inplace
from ._repr import tensor_repr


class ConvertMethods:
    """``astype``, ``float``, ``to``, ``clone``, ``new_zeros`` ... of Tensor."""

    __slots__ = ()

    def __repr__(self) -> str:
        """As PyTorch prints: ``tensor([1., 2.], requires_grad=True)`` (see ``ops._repr``)."""
        return tensor_repr(self)

    def __str__(self) -> str:
        """The same as ``repr``, as in PyTorch."""
        return tensor_repr(self)

    # ------------------------------------------------------------------ dtypes and copies
    def astype(self, dtype) -> Tensor:
        """See :func:`sandbox.ops.astype`."""
        return _arith.astype(self, dtype)

    def float(self) -> Tensor:
        """As float32."""
        return _arith.astype(self, np.float32)

    def double(self) -> Tensor:
        """As float64."""
        return _arith.astype(self, np.float64)

    def long(self) -> Tensor:
        """As int64."""
        return _arith.astype(self, np.int64)

    def clone(self) -> Tensor:
        """See :func:`sandbox.ops.clone`."""
        return _arith.clone(self)

    def contiguous(self) -> Tensor:
        """Self if its data is C-contiguous, else a copy in the graph."""
        return self if self._data.flags.c_contiguous else _arith.clone(self)

    def int(self) -> Tensor:
        """As int32."""
        return _arith.astype(self, np.int32)

    def bool(self) -> Tensor:
        """As bool."""
        return _arith.astype(self, np.bool_)

    def type_as(self, other) -> Tensor:
        """As ``other``'s dtype."""
        return _arith.astype(self, other.dtype)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        """Zeros of ``size`` with this tensor's dtype (unless ``dtype``)."""
        return _create.zeros(*size, dtype=dtype or self.dtype, device=device,
                             requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
        """Ones of ``size`` with this tensor's dtype (unless ``dtype``)."""
        return _create.ones(*size, dtype=dtype or self.dtype, device=device,
                            requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
        """``fill_value`` of ``size`` with this tensor's dtype (unless ``dtype``)."""
        return _create.full(size, fill_value, dtype=dtype or self.dtype, device=device,
                            requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False) -> Tensor:
        """A copy of ``data`` with this tensor's dtype (unless ``dtype``)."""
        return _create.tensor(data, dtype=dtype or self.dtype, device=device,
                              requires_grad=requires_grad)

    def tolist(self):
        """The values as (nested) Python lists."""
        return self._data.tolist()

    def __format__(self, spec) -> str:
        """``f"{loss:.4f}"`` formats the value of a one-element tensor, as PyTorch."""
        if spec and self._data.size == 1:
            return format(self._data.item(), spec)
        return object.__format__(self, spec) if spec else repr(self)

    def dim(self) -> int:
        """Number of dims (torch's name for ``ndim``)."""
        return self._data.ndim

    # ------------------------------------------------------------------ devices
    def to(self, *args, **kwargs) -> Tensor:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)``: CPU only."""
        return _inplace.to(self, *args, **kwargs)

    def cpu(self) -> Tensor:
        """Self: the sandbox runs on the CPU."""
        return self

    def cuda(self, device=None) -> Tensor:
        """Raises: the sandbox runs on the CPU only."""
        _device.device("cuda" if device is None else device)
        return self

    @property
    def device(self):
        """Always ``sandbox.device("cpu")``."""
        return _device.CPU

    @property
    def is_cuda(self) -> bool:
        """Always False."""
        return False
