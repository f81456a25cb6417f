"""Tensor's operators and methods, written out as a mixin class.

Why a mixin, and how it reaches :class:`~sandbox.autograd.Tensor`
-----------------------------------------------------------------
The engine (:mod:`sandbox.autograd`) knows no op: it defines ``Tensor`` as an
ndarray plus a link to the graph, and never imports this package.  The ops need
``Tensor`` (and ``Function``) to exist first, so ``Tensor`` cannot inherit from a
class defined here without a circular import.  Instead:

* :class:`TensorMethods` below holds every operator (``+ - * / ** @ [] < ...``)
  and method (``x.sum()``, ``x.reshape()`` ...) as a real ``def`` with a
  docstring, each a one-line call of the op function that does the work
  (``sandbox.ops.add`` ...).  Grep for ``def __add__`` lands here.
* :func:`install` copies those attributes onto the engine's ``Tensor`` once, when
  :mod:`sandbox.ops` is imported (``import sandbox`` always does).  There is one
  ``Tensor`` class: ``sandbox.Tensor is sandbox.autograd.Tensor``, ``Tensor._make``,
  ``isinstance`` and hooks are untouched; ``Tensor.__add__ is TensorMethods.__add__``.
* For type checkers, ``sandbox/autograd/_tensor.pyi`` declares the same methods
  on ``Tensor``; ``tests/autograd/test_tensor_methods.py`` checks that stub against the
  runtime class (names and parameters), so the two cannot drift apart.

The methods are split by topic: this module has the operators, math, reductions
and shapes; ``_methods_convert`` dtypes, copies, devices, new tensors and
printing; ``_methods_inplace`` the in-place methods and ``+=``-style operators;
``_methods_api`` the rest of torch's everyday API (``t``, ``sort``, ``std`` ...).
A new method goes in the module of its topic (and in the stub); a new op goes in
its op module.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from . import _arith, _linalg, _nonlinear, _reduce, _shape

__all__ = ["TensorMethods", "install"]


class TensorMethods:
    """Operators and methods of :class:`~sandbox.autograd.Tensor` (see the module doc)."""

    __slots__ = ()

    # ------------------------------------------------------------------ operators
    def __add__(self, other) -> Tensor:
        """``self + other`` (:func:`sandbox.ops.add`)."""
        return _arith.add(self, other)

    def __radd__(self, other) -> Tensor:
        """``other + self``."""
        return _arith.add(other, self)

    def __sub__(self, other) -> Tensor:
        """``self - other`` (:func:`sandbox.ops.sub`)."""
        return _arith.sub(self, other)

    def __rsub__(self, other) -> Tensor:
        """``other - self``."""
        return _arith.sub(other, self)

    def __mul__(self, other) -> Tensor:
        """``self * other`` (:func:`sandbox.ops.mul`)."""
        return _arith.mul(self, other)

    def __rmul__(self, other) -> Tensor:
        """``other * self``."""
        return _arith.mul(other, self)

    def __truediv__(self, other) -> Tensor:
        """``self / other`` (:func:`sandbox.ops.div`)."""
        return _arith.div(self, other)

    def __rtruediv__(self, other) -> Tensor:
        """``other / self``."""
        return _arith.div(other, self)

    def __pow__(self, other) -> Tensor:
        """``self ** other`` (:func:`sandbox.ops.pow`)."""
        return _arith.pow(self, other)

    def __rpow__(self, other) -> Tensor:
        """``other ** self``."""
        return _arith.pow(other, self)

    def __matmul__(self, other) -> Tensor:
        """``self @ other`` (:func:`sandbox.ops.matmul`)."""
        return _linalg.matmul(self, other)

    def __rmatmul__(self, other) -> Tensor:
        """``other @ self``."""
        return _linalg.matmul(other, self)

    def __neg__(self) -> Tensor:
        """``-self``."""
        return _arith.neg(self)

    def __pos__(self) -> Tensor:
        """``+self``: self itself."""
        return self

    def __abs__(self) -> Tensor:
        """``abs(self)``."""
        return _arith.abs(self)

    def __getitem__(self, index) -> Tensor:
        """``self[index]``, numpy indexing (:func:`sandbox.ops.getitem`)."""
        return _shape.getitem(self, index)

    def __setitem__(self, index, value) -> None:
        """``self[index] = value`` (:func:`sandbox.ops.setitem`)."""
        _shape.setitem(self, index, value)

    # Comparisons and logic give bool tensors outside the graph.
    def __lt__(self, other) -> Tensor:
        """``self < other``, elementwise."""
        return _arith.lt(self, other)

    def __le__(self, other) -> Tensor:
        """``self <= other``, elementwise."""
        return _arith.le(self, other)

    def __gt__(self, other) -> Tensor:
        """``self > other``, elementwise."""
        return _arith.gt(self, other)

    def __ge__(self, other) -> Tensor:
        """``self >= other``, elementwise."""
        return _arith.ge(self, other)

    def __eq__(self, other) -> Tensor:  # type: ignore[override]
        """``self == other``, elementwise."""
        return _arith.eq(self, other)

    def __ne__(self, other) -> Tensor:  # type: ignore[override]
        """``self != other``, elementwise."""
        return _arith.ne(self, other)

    __hash__ = object.__hash__  # defining __eq__ would otherwise make tensors unhashable

    def __and__(self, other) -> Tensor:
        """``self & other``: elementwise logical and."""
        return _arith.logical_and(self, other)

    def __or__(self, other) -> Tensor:
        """``self | other``: elementwise logical or."""
        return _arith.logical_or(self, other)

    def __invert__(self) -> Tensor:
        """``~self``: elementwise logical not."""
        return Tensor._make(np.logical_not(self._data))

    # ------------------------------------------------------------------ math
    def add(self, other) -> Tensor:
        """See :func:`sandbox.ops.add`."""
        return _arith.add(self, other)

    def sub(self, other) -> Tensor:
        """See :func:`sandbox.ops.sub`."""
        return _arith.sub(self, other)

    def mul(self, other) -> Tensor:
        """See :func:`sandbox.ops.mul`."""
        return _arith.mul(self, other)

    def div(self, other) -> Tensor:
        """See :func:`sandbox.ops.div`."""
        return _arith.div(self, other)

    def pow(self, p) -> Tensor:
        """See :func:`sandbox.ops.pow`."""
        return _arith.pow(self, p)

    def matmul(self, other) -> Tensor:
        """See :func:`sandbox.ops.matmul`."""
        return _linalg.matmul(self, other)

    def exp(self) -> Tensor:
        """See :func:`sandbox.ops.exp`."""
        return _arith.exp(self)

    def log(self) -> Tensor:
        """See :func:`sandbox.ops.log`."""
        return _arith.log(self)

    def log1p(self) -> Tensor:
        """See :func:`sandbox.ops.log1p`."""
        return _arith.log1p(self)

    def sqrt(self) -> Tensor:
        """See :func:`sandbox.ops.sqrt`."""
        return _arith.sqrt(self)

    def abs(self) -> Tensor:
        """See :func:`sandbox.ops.abs`."""
        return _arith.abs(self)

    def clamp(self, min=None, max=None) -> Tensor:  # noqa: A002 - torch's argument names
        """See :func:`sandbox.ops.clamp`."""
        return _arith.clamp(self, min, max)

    def relu(self) -> Tensor:
        """See :func:`sandbox.ops.relu`."""
        return _nonlinear.relu(self)

    def leaky_relu(self, negative_slope=0.01) -> Tensor:
        """See :func:`sandbox.ops.leaky_relu`."""
        return _nonlinear.leaky_relu(self, negative_slope)

    def sigmoid(self) -> Tensor:
        """See :func:`sandbox.ops.sigmoid`."""
        return _nonlinear.sigmoid(self)

    def tanh(self) -> Tensor:
        """See :func:`sandbox.ops.tanh`."""
        return _nonlinear.tanh(self)

    def softplus(self, beta=1.0, threshold=20.0) -> Tensor:
        """See :func:`sandbox.ops.softplus`."""
        return _nonlinear.softplus(self, beta, threshold)

    def softmax(self, dim=-1) -> Tensor:
        """See :func:`sandbox.ops.softmax`."""
        return _nonlinear.softmax(self, dim)

    def log_softmax(self, dim=-1) -> Tensor:
        """See :func:`sandbox.ops.log_softmax`."""
        return _nonlinear.log_softmax(self, dim)

    def logsumexp(self, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.logsumexp`."""
        return _nonlinear.logsumexp(self, dim, keepdim)

    # ------------------------------------------------------------------ reductions
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.sum`."""
        return _reduce.sum(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.mean`."""
        return _reduce.mean(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=False):
        """The largest value, or a ``(values, indices)`` pair along ``dim`` (:func:`.max`)."""
        return _reduce.max(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=False):
        """The smallest value, or a ``(values, indices)`` pair along ``dim`` (:func:`.min`)."""
        return _reduce.min(self, dim, keepdim, axis=axis, keepdims=keepdims)

    def amax(self, axis=None, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.amax`."""
        return _reduce.amax(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def amin(self, axis=None, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.amin`."""
        return _reduce.amin(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def maximum(self, other) -> Tensor:
        """See :func:`sandbox.ops.maximum`."""
        return _arith.maximum(self, other)

    def minimum(self, other) -> Tensor:
        """See :func:`sandbox.ops.minimum`."""
        return _arith.minimum(self, other)

    def any(self, dim=None, keepdim=False) -> Tensor:
        """Whether any element (along ``dim``) is non-zero, as a bool tensor."""
        return Tensor._make(np.asarray(np.any(self._data, axis=dim, keepdims=keepdim)))

    def all(self, dim=None, keepdim=False) -> Tensor:
        """Whether all elements (along ``dim``) are non-zero, as a bool tensor."""
        return Tensor._make(np.asarray(np.all(self._data, axis=dim, keepdims=keepdim)))

    def isnan(self) -> Tensor:
        """See :func:`sandbox.ops.isnan`."""
        return _arith.isnan(self)

    def isinf(self) -> Tensor:
        """See :func:`sandbox.ops.isinf`."""
        return _arith.isinf(self)

    def isfinite(self) -> Tensor:
        """See :func:`sandbox.ops.isfinite`."""
        return _arith.isfinite(self)

    def var(self, axis=None, correction=1, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.var`."""
        return _reduce.var(self, axis, correction, keepdims, dim=dim, keepdim=keepdim)

    def argmax(self, axis=None, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.argmax`."""
        return _reduce.argmax(self, axis, keepdims, dim=dim, keepdim=keepdim)

    def argmin(self, axis=None, keepdims=False, *, dim=None, keepdim=False) -> Tensor:
        """See :func:`sandbox.ops.argmin`."""
        return _reduce.argmin(self, axis, keepdims, dim=dim, keepdim=keepdim)

    # ------------------------------------------------------------------ shapes
    def reshape(self, *shape) -> Tensor:
        """See :func:`sandbox.ops.reshape`."""
        return _shape.reshape(self, *shape)

    def view(self, *shape) -> Tensor:
        """Same as :meth:`reshape` (torch's name)."""
        return _shape.reshape(self, *shape)

    def flatten(self, start_dim=0, end_dim=-1) -> Tensor:
        """See :func:`sandbox.ops.flatten`."""
        return _shape.flatten(self, start_dim, end_dim)

    def permute(self, *axes) -> Tensor:
        """See :func:`sandbox.ops.permute`."""
        return _shape.permute(self, *axes)

    def transpose(self, dim0=-2, dim1=-1) -> Tensor:
        """See :func:`sandbox.ops.transpose`."""
        return _shape.transpose(self, dim0, dim1)

    def squeeze(self, dim=None) -> Tensor:
        """See :func:`sandbox.ops.squeeze`."""
        return _shape.squeeze(self, dim)

    def unsqueeze(self, dim) -> Tensor:
        """See :func:`sandbox.ops.unsqueeze`."""
        return _shape.unsqueeze(self, dim)

    def expand(self, *shape) -> Tensor:
        """See :func:`sandbox.ops.expand`."""
        return _shape.expand(self, *shape)

    def broadcast_to(self, *shape) -> Tensor:
        """Same as :meth:`expand` (numpy's name)."""
        return _shape.expand(self, *shape)

    @property
    def T(self) -> Tensor:
        """All dims reversed."""
        return _shape.permute(self, *reversed(range(self.ndim)))

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped (a batch of transposed matrices)."""
        return _shape.transpose(self, -2, -1)

# Class bookkeeping that must stay the engine's own.
_NOT_COPIED = {"__module__", "__qualname__", "__doc__", "__slots__", "__dict__", "__weakref__"}


def install(cls=Tensor) -> None:
    """Give ``cls`` (the engine's Tensor) every attribute defined in :class:`TensorMethods`
    and in the mixins of the other ``_methods_*`` modules (one topic each)."""
    from ._methods_api import ApiMethods
    from ._methods_convert import ConvertMethods
    from ._methods_inplace import InplaceMethods

    for mixin in (TensorMethods, ConvertMethods, InplaceMethods, ApiMethods):
        for name, value in vars(mixin).items():
            if name not in _NOT_COPIED:
                setattr(cls, name, value)
