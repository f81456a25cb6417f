"""The :class:`Tensor`: an ndarray plus the link to the graph node that made it.

A tensor produced by a recorded operation has ``grad_fn`` (the node, a
:class:`~sandbox.autograd.Context`) and ``_output_nr`` (which output of that node
it is).  A tensor with ``grad_fn is None`` is a *leaf*; leaves that require grad
receive ``.grad`` from :meth:`Tensor.backward`.

This module defines only what the engine needs.  The operators and methods
(``+``, ``@``, ``sum``, ``+=``, ``add_``, ``repr`` ...) are written in
``sandbox/ops/_methods*.py`` (class ``TensorMethods`` and its sibling mixins, one
topic each) and copied onto this class when the ops package is imported
(``import sandbox`` does); ``_tensor.pyi`` next to this file declares them for type
checkers, and a test keeps that stub equal to the runtime class.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..runtime.dtypes import get_default_dtype
from ._hooks import RemovableHandle, hook_table

__all__ = ["Tensor", "as_ndarray", "tensor"]


def as_ndarray(x) -> np.ndarray:
    """``x`` as an ndarray; a numpy scalar becomes a 0-d array.

    The engine's one rule for 0-d values.  numpy's ufuncs and reductions return numpy
    scalars (``np.float64(...)``) for 0-d results; those are not ndarrays: no
    in-place ``out=``, no identity with a saved output, and their ``.data`` is a
    memoryview.  Every array the engine keeps (a Tensor's data, a Function's
    outputs, a summed gradient) passes through here, so a 0-d result is always a
    0-d ndarray.
    """
    return x if isinstance(x, np.ndarray) else np.asarray(x)


class _Version:
    """How many in-place writes an array has had, shared by the Tensors wrapping it
    (``detach()``, views made by ops, ``Tensor(t)``; not ``t.data``, as in PyTorch).

    Bumped by every in-place op (``t[i] = v``, ``t += 1``, ``t.add_()``, ``t.zero_()``
    ...) and by ``t.data = ...`` (the optimisers' ``p.data -= ...`` too); a graph
    node compares it with the value it saw when it saved the tensor (see
    ``Context.saved_tensors``).  Writes made with numpy on ``t.numpy()`` are not seen.
    ``view`` is True once a view op shared the counter between a base and a view.
    """

    __slots__ = ("value", "view")

    def __init__(self):
        self.value = 0
        self.view = False


def _as_array(data, dtype=None, copy=False, float_lists=False):
    """Convert ``data`` to an ndarray following :func:`tensor`'s dtype rules.

    ``float_lists``: Python numbers and lists become the default float dtype
    whatever they hold (``torch.Tensor([1, 2])``), not int64/bool.
    """
    if isinstance(data, Tensor):
        data = data._data
    if isinstance(data, np.ndarray):
        arr = data if dtype is None else data.astype(dtype, copy=False)
        if copy and arr is data:
            arr = data.copy()
    else:
        arr = np.array(data, dtype=dtype)
        # Python floats become the default float dtype (float32 unless set, as in torch);
        # numpy scalars keep their type.
        if dtype is None and not isinstance(data, np.generic):
            if arr.dtype == np.float64 or (float_lists and arr.dtype.kind in "iub"):
                arr = arr.astype(get_default_dtype())
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"tensor data must be float, integer or bool, got dtype {arr.dtype}")
    return arr


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    ``Tensor(data)`` wraps an ndarray (or another Tensor's array) without copying
    (``sandbox.tensor`` copies).  As ``torch.Tensor``: ``Tensor(2, 3)`` (sizes) is a
    zero-filled tensor of the default float dtype, ``Tensor([1, 2])`` (a list) holds
    the values in the default float dtype, ``Tensor()`` is empty.
    Operators and methods (``+``, ``@``, ``sum``, ``reshape`` ...) come from
    ``sandbox.ops._methods.TensorMethods`` (see the module docstring).
    """

    __slots__ = (
        "_data",
        "_requires_grad",
        "grad",
        "grad_fn",
        "_output_nr",
        "_hooks",
        "_ver",
        "__weakref__",
    )
    __array_ufunc__ = None  # ndarray (op) Tensor defers to Tensor's reflected operators

    def __init__(self, data=None, *sizes, requires_grad=False, dtype=None):
        if data is None or sizes or _is_size(data):
            # torch.Tensor(*sizes): torch leaves the memory uninitialised; zeros here.
            shape = (0,) if data is None else _sizes(data, sizes)
            data = np.zeros(shape, dtype or get_default_dtype())
        self._data = _as_array(data, dtype, float_lists=True)
        self._requires_grad = False
        self.grad = None
        self.grad_fn = None
        self._output_nr = 0
        self._hooks = None  # leaf hooks (non-leaf hooks live on the node)
        self._ver = None  # a _Version, created at the first in-place write (or detach)
        if isinstance(data, Tensor) and self._data is data._data:  # one array, one count
            if data._ver is None:
                data._ver = _Version()
            self._ver = data._ver
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _make(cls, data, grad_fn=None, output_nr=0):
        """Fast internal constructor: no validation."""
        t = object.__new__(cls)
        t._data = data if isinstance(data, np.ndarray) else np.asarray(data)  # as_ndarray
        t._requires_grad = grad_fn is not None
        t.grad = None
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        t._hooks = None
        t._ver = None
        return t

    # -- data and flags
    @property
    def data(self) -> Tensor:
        """A Tensor sharing this tensor's storage, detached from the graph (PyTorch's).

        ``requires_grad`` is False and writes through it are not recorded:
        ``p.data.zero_()``, ``p.data.normal_(0, 0.02)``, ``p.data.copy_(w)`` change
        ``p`` itself.  Unlike :meth:`detach`, it has its own version counter (as in
        PyTorch), so autograd does not see writes made through it.  The ndarray
        itself is ``t.numpy()``.  Assigning (``p.data = value``) replaces the array.
        """
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        arr = _as_array(value)
        if self._requires_grad and arr.dtype.kind != "f":
            raise TypeError(f"a tensor that requires grad needs float data, got {arr.dtype}")
        self._data = arr
        self._bump_version()

    @property
    def _version(self) -> int:
        """The number of in-place writes so far (as ``torch.Tensor._version``)."""
        return 0 if self._ver is None else self._ver.value

    def _bump_version(self) -> None:
        """Record an in-place write (setitem, zero_, the data setter)."""
        if self._ver is None:
            self._ver = _Version()
        self._ver.value += 1

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        if self.grad_fn is not None:
            raise RuntimeError(
                "requires_grad can only be changed on leaf tensors; use .detach() on "
                f"this output of {self.grad_fn.name()}"
            )
        if flag and self._data.dtype.kind != "f":
            raise TypeError(
                f"only floating-point tensors can require gradients, got dtype {self.dtype}"
            )
        self._requires_grad = bool(flag)

    def requires_grad_(self, requires_grad=True) -> Tensor:
        """Set ``requires_grad`` in place (leaves only) and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded operation."""
        return self.grad_fn is None

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (no-op on leaves)."""
        if self.grad_fn is None:
            return
        if self.grad_fn._retained is None:
            self.grad_fn._retained = {}
        self.grad_fn._retained[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook) -> RemovableHandle:
        """Call ``hook(grad)`` with this tensor's gradient during backward.

        ``hook`` returns None (observe) or a replacement gradient.  Works on leaves
        and non-leaves; see :mod:`sandbox.autograd._hooks` for when it runs.
        Returns a handle whose ``.remove()`` unregisters the hook.
        """
        if not callable(hook):
            raise TypeError(f"hook must be callable, got {type(hook).__name__}")
        if not self._requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that does not require grad "
                "(set requires_grad=True on the leaf first)"
            )
        hooks = hook_table(self)
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    # -- array-like metadata
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)

    def size(self, dim=None):
        """The shape (``dim=None``) or the length of one dimension, as in torch."""
        return self._data.shape if dim is None else self._data.shape[dim]

    def numel(self) -> int:
        """Number of elements."""
        return self._data.size

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    # -- conversions
    def detach(self) -> Tensor:
        """A new leaf sharing the same data (and version counter), outside the graph."""
        if self._ver is None:
            self._ver = _Version()
        t = Tensor._make(self._data)
        t._ver = self._ver
        return t

    def numpy(self) -> np.ndarray:
        """The underlying ndarray (shared, not copied)."""
        return self._data

    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self._data.size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self._data.item()

    def __array__(self, dtype=None, copy=None):
        return self._data if dtype is None else self._data.astype(dtype, copy=False)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        return bool(self._data)

    __hash__ = object.__hash__  # operators make == elementwise; hash stays identity

    # -- differentiation
    def backward(self, grad=None, retain_graph=None, create_graph=False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        ``grad`` is the gradient with respect to self; it may be omitted for a
        one-element tensor (it is then 1).
        """
        _backward.backward(self, grad, retain_graph=retain_graph, create_graph=create_graph)


def _is_size(x) -> bool:
    """A Python int (not bool): ``Tensor(3)`` is a size, as in torch (a tuple is data)."""
    return type(x) is int


def _sizes(first, rest):
    shape = (first, *rest)
    if not all(_is_size(n) for n in shape):
        raise TypeError(
            f"Tensor(*sizes) takes Python ints, got {shape!r}; pass data as one list or "
            "array: Tensor([1, 2])"
        )
    if any(n < 0 for n in shape):
        raise ValueError(f"Tensor(*sizes): sizes must be non-negative, got {shape}")
    return tuple(int(n) for n in shape)


def tensor(data, requires_grad=False, dtype=None) -> Tensor:
    """Create a tensor, copying ``data``.

    Dtypes follow torch: Python floats (and lists of them) become float32, Python
    ints int64, bools bool; numpy arrays and scalars keep their dtype.  Only float
    tensors can require grad (integer tensors are for labels and indices).
    """
    return Tensor(_as_array(data, dtype, copy=True), requires_grad=requires_grad)


# Imported last: _backward's modules import Tensor from here.  At module level, not in
# Tensor.backward: a relative import inside a function costs 2.3 us a call (timeit, AMD
# EPYC family 25 model 1 VM), a tenth of a one-node backward's own Python.
from . import _backward  # noqa: E402
