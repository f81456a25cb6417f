"""Tensor's in-place methods and augmented assignments (``add_``, ``+=`` ...), a mixin
installed on Tensor by :func:`sandbox.ops._methods.install`; the rules (version
counter, leaves, the graph) are in :mod:`sandbox.ops._inplace`."""

from __future__ import annotations

from ..autograd import Tensor
from . import _inplace


class InplaceMethods:
    """The in-place methods of :class:`~sandbox.autograd.Tensor`."""

    __slots__ = ()

    def add_(self, other, *, alpha=1) -> Tensor:
        """``self += alpha * other`` in place."""
        return _inplace.add_(self, other, alpha=alpha)

    def sub_(self, other, *, alpha=1) -> Tensor:
        """``self -= alpha * other`` in place."""
        return _inplace.sub_(self, other, alpha=alpha)

    def mul_(self, other) -> Tensor:
        """``self *= other`` in place."""
        return _inplace.mul_(self, other)

    def div_(self, other) -> Tensor:
        """``self /= other`` in place (float tensors)."""
        return _inplace.div_(self, other)

    def pow_(self, exponent) -> Tensor:
        """``self **= exponent`` in place."""
        return _inplace.pow_(self, exponent)

    def floor_divide_(self, other) -> Tensor:
        """``self //= other`` in place."""
        return _inplace.floor_divide_(self, other)

    def remainder_(self, other) -> Tensor:
        """``self %= other`` in place."""
        return _inplace.remainder_(self, other)

    def clamp_(self, min=None, max=None) -> Tensor:  # noqa: A002 - torch's argument names
        """Clamp to ``[min, max]`` in place."""
        return _inplace.clamp_(self, min, max)

    def abs_(self) -> Tensor:
        """``abs`` in place."""
        return _inplace.abs_(self)

    def neg_(self) -> Tensor:
        """``-self`` in place."""
        return _inplace.neg_(self)

    def exp_(self) -> Tensor:
        """``exp`` in place."""
        return _inplace.exp_(self)

    def log_(self) -> Tensor:
        """``log`` in place."""
        return _inplace.log_(self)

    def sqrt_(self) -> Tensor:
        """``sqrt`` in place."""
        return _inplace.sqrt_(self)

    def relu_(self) -> Tensor:
        """``relu`` in place."""
        return _inplace.relu_(self)

    def sigmoid_(self) -> Tensor:
        """``sigmoid`` in place."""
        return _inplace.sigmoid_(self)

    def tanh_(self) -> Tensor:
        """``tanh`` in place."""
        return _inplace.tanh_(self)

    def fill_(self, value) -> Tensor:
        """Set every element to ``value`` in place."""
        return _inplace.fill_(self, value)

    def zero_(self) -> Tensor:
        """Set every element to zero in place."""
        return _inplace.zero_(self)

    def copy_(self, src) -> Tensor:
        """Copy ``src`` into self (broadcast, cast to self's dtype)."""
        return _inplace.copy_(self, src)

    def normal_(self, mean=0.0, std=1.0, *, generator=None) -> Tensor:
        """Fill with N(mean, std²) samples in place (``nn.init``-style)."""
        return _inplace.normal_(self, mean, std, generator=generator)

    def uniform_(self, a=0.0, b=1.0, *, generator=None) -> Tensor:
        """Fill with U(a, b) samples in place."""
        return _inplace.uniform_(self, a, b, generator=generator)

    def __iadd__(self, other) -> Tensor:
        """``self += other``: in place, as PyTorch (``d = c; c += 1`` changes ``d``)."""
        return _inplace.add_(self, other)

    def __isub__(self, other) -> Tensor:
        """``self -= other`` in place (``with no_grad(): p -= lr * p.grad``)."""
        return _inplace.sub_(self, other)

    def __imul__(self, other) -> Tensor:
        """``self *= other`` in place."""
        return _inplace.mul_(self, other)

    def __itruediv__(self, other) -> Tensor:
        """``self /= other`` in place."""
        return _inplace.div_(self, other)

    def __ifloordiv__(self, other) -> Tensor:
        """``self //= other`` in place."""
        return _inplace.floor_divide_(self, other)

    def __imod__(self, other) -> Tensor:
        """``self %= other`` in place."""
        return _inplace.remainder_(self, other)

    def __ipow__(self, other) -> Tensor:
        """``self **= other`` in place."""
        return _inplace.pow_(self, other)
