"""Tensor methods of PyTorch's everyday API beyond the core set: ``t``, ``repeat``,
``std``, ``norm``, ``topk``, ``sort``, ``round``, ``chunk``, ``split``, ``flip``,
``unique``, ``erf`` ..., a mixin installed on Tensor by :func:`sandbox.ops._methods.install`."""

from __future__ import annotations

from ..autograd import Tensor
from . import _arith, _intdiv, _linalg, _nonlinear, _reduce, _select, _tile


class ApiMethods:
    """More methods of :class:`~sandbox.autograd.Tensor` (see the module doc)."""

    __slots__ = ()

    def t(self) -> Tensor:
        """See :func:`sandbox.t`."""
        return _tile.t(self)

    def repeat(self, *sizes) -> Tensor:
        """See :func:`sandbox.ops.repeat`."""
        return _tile.repeat(self, *sizes)

    def flip(self, *dims) -> Tensor:
        """See :func:`sandbox.flip` (``x.flip(0, 1)`` or ``x.flip((0, 1))``)."""
        return _tile.flip(self, dims[0] if len(dims) == 1 else dims)

    def chunk(self, chunks, dim=0) -> tuple:
        """See :func:`sandbox.chunk`."""
        return _tile.chunk(self, chunks, dim)

    def split(self, split_size, dim=0) -> tuple:
        """See :func:`sandbox.split`."""
        return _tile.split(self, split_size, dim)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None) -> Tensor:
        """See :func:`sandbox.std`."""
        return _reduce.std(self, dim, unbiased, keepdim, correction=correction)

    def norm(self, p="fro", dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.norm`."""
        return _reduce.norm(self, p, dim, keepdim)

    def sort(self, dim=-1, descending=False, stable=False):
        """See :func:`sandbox.sort`."""
        return _select.sort(self, dim, descending, stable)

    def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - torch's names
        """See :func:`sandbox.topk`."""
        return _select.topk(self, k, dim, largest, sorted)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """See :func:`sandbox.unique`."""
        return _select.unique(self, sorted, return_inverse, return_counts, dim)

    def round(self, *, decimals=0) -> Tensor:
        """See :func:`sandbox.round`."""
        return _intdiv.round(self, decimals=decimals)

    def floor_divide(self, other) -> Tensor:
        """See :func:`sandbox.floor_divide`."""
        return _intdiv.floor_divide(self, other)

    def remainder(self, other) -> Tensor:
        """See :func:`sandbox.remainder`."""
        return _intdiv.remainder(self, other)

    def __floordiv__(self, other) -> Tensor:
        """``self // other``: rounded toward minus infinity, as torch."""
        return _intdiv.floor_divide(self, other)

    def __rfloordiv__(self, other) -> Tensor:
        """``other // self``."""
        return _intdiv.floor_divide(other, self)

    def __mod__(self, other) -> Tensor:
        """``self % other``: the sign of ``other``, as torch."""
        return _intdiv.remainder(self, other)

    def __rmod__(self, other) -> Tensor:
        """``other % self``."""
        return _intdiv.remainder(other, self)

    def neg(self) -> Tensor:
        """``-self`` (torch's name)."""
        return _arith.neg(self)

    def erf(self) -> Tensor:
        """See :func:`sandbox.erf`."""
        return _nonlinear.erf(self)

    def einsum(self, equation, *others) -> Tensor:
        """``sandbox.einsum(equation, self, *others)``."""
        return _linalg.einsum(equation, self, *others)
