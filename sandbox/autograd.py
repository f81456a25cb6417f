"""Reverse-mode automatic differentiation over numpy arrays.

The engine knows no particular operation.  It has four pieces:

* :class:`Tensor` wraps an ``np.ndarray`` (``.data``) and, when it was produced by a
  recorded operation, points to the graph node that made it (``.grad_fn``).
* :class:`Function` pairs a ``forward(ctx, *arrays)`` on plain arrays with a
  ``backward(ctx, *grads)``.  ``Fn.apply(*args)`` runs the forward and records a node
  (the ``ctx`` itself) only when grad mode is on and some input requires grad.
* :func:`backward` / :func:`grad` walk the graph **iteratively** (Kahn's algorithm), so
  graphs of any depth work, sum the gradients of fanned-out tensors and free each node
  after use unless ``retain_graph=True``.
* :class:`no_grad` / :class:`enable_grad` switch the (thread-local) grad mode.

Rules worth knowing
-------------------
* **Saved tensors.**  ``ctx.save_for_backward(*items)`` takes arrays, Tensors or None.
  ``ctx.saved_tensors`` gives them back as Tensors: an array that *is* (by identity)
  one of the forward's input arrays comes back as that input Tensor; an array that is
  one of the forward's outputs comes back as the output, attached to this node while
  the backward is itself being recorded (``create_graph=True``); any other array is a
  constant.  So a backward written with Tensor ops in terms of its inputs/outputs is
  differentiable again.  Do not modify saved arrays in place.
* **create_graph.**  Backward runs under ``no_grad`` by default.  With
  ``create_graph=True`` it runs with grad mode on, so the Tensor ops inside each
  ``backward`` are recorded and the gradients carry their own graph.
* **once_differentiable.**  A backward that calls a kernel decorated with
  :func:`once_differentiable` gets C-contiguous ndarrays, returns ndarrays, and its
  results raise a clear error if someone differentiates through them.
* **Leaf gradients** accumulate in ``.grad`` (a fresh array the first time, then added
  in place).  Non-leaf tensors keep ``.grad = None`` unless ``retain_grad()`` was called.
"""

from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

__all__ = [
    "Context",
    "Function",
    "Tensor",
    "backward",
    "cat",
    "enable_grad",
    "grad",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_grad_enabled",
    "stack",
    "tensor",
    "unbroadcast",
    "where",
]


# ----------------------------------------------------------------------------- grad mode
class _GradState(threading.local):
    enabled = True  # class attribute = the default in every thread


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations are currently recorded for differentiation."""
    return _state.enabled


class _GradMode:
    """Context manager that sets grad mode and restores it; also usable as a decorator."""

    _mode = True

    def __new__(cls, func=None):
        self = super().__new__(cls)
        self._prev = []
        if callable(func):  # used bare: @no_grad
            return self(func)
        return self

    def __init__(self, func=None):
        pass

    def __enter__(self):
        self._prev.append(_state.enabled)
        _state.enabled = self._mode

    def __exit__(self, *exc):
        _state.enabled = self._prev.pop()

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)():  # a fresh instance per call: reentrant and thread safe
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Disable recording: ``with no_grad(): ...`` or ``@no_grad()`` / ``@no_grad``."""

    _mode = False


class enable_grad(_GradMode):
    """Enable recording inside a ``no_grad`` region (context manager or decorator)."""

    _mode = True


class set_grad_enabled:
    """Set grad mode to ``mode`` now; as a context manager, restore it on exit."""

    def __init__(self, mode):
        self._prev = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _state.enabled = self._prev


# ----------------------------------------------------------------------------- Tensor
def _as_array(data, dtype=None, copy=False):
    """Convert ``data`` to an ndarray following :func:`tensor`'s dtype rules."""
    if isinstance(data, Tensor):
        data = data._data
    if isinstance(data, np.ndarray):
        arr = data if dtype is None else data.astype(dtype, copy=False)
        if copy and arr is data:
            arr = data.copy()
    else:
        arr = np.array(data, dtype=dtype)
        # Python floats default to float32 (as in torch); numpy scalars keep their type.
        if dtype is None and arr.dtype == np.float64 and not isinstance(data, np.generic):
            arr = arr.astype(np.float32)
    if arr.dtype.kind not in "fiub":
        raise TypeError(f"tensor data must be float, integer or bool, got dtype {arr.dtype}")
    return arr


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    ``Tensor(data)`` wraps an ndarray without copying (``sandbox.tensor`` copies).
    Operators and methods (``+``, ``@``, ``sum``, ``reshape`` ...) are attached by
    :mod:`sandbox.ops`.
    """

    __slots__ = ("_data", "_requires_grad", "grad", "grad_fn", "_output_nr", "__weakref__")
    __array_ufunc__ = None  # ndarray (op) Tensor defers to Tensor's reflected operators

    def __init__(self, data, requires_grad=False, dtype=None):
        self._data = _as_array(data, dtype)
        self._requires_grad = False
        self.grad = None
        self.grad_fn = None
        self._output_nr = 0
        if requires_grad:
            self.requires_grad = True

    @classmethod
    def _make(cls, data, grad_fn=None, output_nr=0):
        """Fast internal constructor: no validation."""
        t = object.__new__(cls)
        t._data = data
        t._requires_grad = grad_fn is not None
        t.grad = None
        t.grad_fn = grad_fn
        t._output_nr = output_nr
        return t

    # -- data and flags
    @property
    def data(self) -> np.ndarray:
        """The underlying ndarray (assigning replaces it, outside the graph)."""
        return self._data

    @data.setter
    def data(self, value):
        arr = _as_array(value)
        if self._requires_grad and arr.dtype.kind != "f":
            raise TypeError(f"a tensor that requires grad needs float data, got {arr.dtype}")
        self._data = arr

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
        """A new leaf sharing the same data, outside the graph."""
        return Tensor._make(self._data)

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

    def __repr__(self):
        body = np.array2string(self._data, separator=", ", prefix="tensor(")
        extra = f", dtype={self.dtype}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name()}>"
        elif self._requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    # -- differentiation
    def backward(self, grad=None, retain_graph=None, create_graph=False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        ``grad`` is the gradient with respect to self; it may be omitted for a
        one-element tensor (it is then 1).
        """
        backward(self, grad, retain_graph=retain_graph, create_graph=create_graph)


def tensor(data, requires_grad=False, dtype=None) -> Tensor:
    """Create a tensor, copying ``data``.

    Dtypes follow torch: Python floats (and lists of them) become float32, Python
    ints int64, bools bool; numpy arrays and scalars keep their dtype.  Only float
    tensors can require grad (integer tensors are for labels and indices).
    """
    return Tensor(_as_array(data, dtype, copy=True), requires_grad=requires_grad)


# ----------------------------------------------------------------------------- Function
class _SavedOutput:
    """A saved array that is an output of the same node (see Context.saved_tensors)."""

    __slots__ = ("index", "data")

    def __init__(self, index, data):
        self.index = index
        self.data = data


class Context:
    """Per-call state shared by ``forward`` and ``backward``; also the graph node.

    Functions may store any extra attribute on it (``ctx.shape = x.shape``).
    """

    def __init__(self, fn, inputs, needs_input_grad):
        self._fn = fn
        self._inputs = inputs  # the apply() args, during forward only
        self._saved = ()
        self._next = None  # per forward arg: the input Tensor if it needs grad, else None
        self._out_meta = None  # per output: (shape, dtype)
        self._retained = None  # output_nr -> weakref of a tensor that called retain_grad
        self._freed = False
        self.needs_input_grad = needs_input_grad

    def name(self) -> str:
        return f"{self._fn.__name__}Backward"

    def __repr__(self):
        return f"<{self.name()}>"

    def save_for_backward(self, *items) -> None:
        """Save arrays, Tensors or None for backward (call at most once, in forward)."""
        inputs = self._inputs
        saved = []
        for item in items:
            if isinstance(item, np.ndarray):  # an input's array comes back as that input
                for arg in inputs:
                    if isinstance(arg, Tensor) and arg._data is item:
                        item = arg
                        break
            saved.append(item)
        self._saved = saved

    @property
    def saved_tensors(self) -> tuple:
        """The saved items as Tensors (None stays None); see the module docstring."""
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE.format(self.name()))
        out = []
        for item in self._saved:
            if isinstance(item, _SavedOutput):
                node = self if _state.enabled else None
                item = Tensor._make(item.data, node, item.index)
            elif isinstance(item, np.ndarray):
                item = Tensor._make(item)
            out.append(item)
        return tuple(out)

    @property
    def saved_arrays(self) -> tuple:
        """The saved items as plain ndarrays (for kernel-backed backward functions)."""
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE.format(self.name()))
        return tuple(
            item._data if isinstance(item, Tensor) else getattr(item, "data", item)
            for item in self._saved
        )

    def _record(self, args, needs, outputs) -> None:
        """Turn this context into a graph node once forward has returned."""
        self._next = tuple(a if need else None for a, need in zip(args, needs, strict=True))
        self._out_meta = [(o.shape, o.dtype) for o in outputs]
        for i, item in enumerate(self._saved):
            if isinstance(item, np.ndarray):
                for j, o in enumerate(outputs):
                    if item is o:
                        self._saved[i] = _SavedOutput(j, o)
                        break
        self._inputs = None

    def _release(self) -> None:
        self._saved = None
        self._next = None
        self._freed = True


_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or to use saved tensors after "
    "they were freed) in {}. Pass retain_graph=True to the first backward() if you need "
    "to backward through the graph again."
)


class Function:
    """Base class of differentiable operations.

    Subclasses define ``@staticmethod forward(ctx, *args)``, where Tensor arguments
    arrive as ndarrays, returning an ndarray (or a tuple of them), and
    ``@staticmethod backward(ctx, *grads)`` returning one gradient (Tensor, ndarray or
    None) per positional forward argument.  Call them with ``Fn.apply(*args)``.
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        grad_on = _state.enabled
        arrays = []
        needs = []
        record = False
        for a in args:
            if isinstance(a, Tensor):
                arrays.append(a._data)
                need = grad_on and a._requires_grad
                record = record or need
            else:
                arrays.append(a)
                need = False
            needs.append(need)
        ctx = Context(cls, args, tuple(needs))
        out = cls.forward(ctx, *arrays, **kwargs)
        single = not isinstance(out, tuple)
        outs = [out] if single else out
        outs = [o if isinstance(o, np.ndarray) else np.asarray(o) for o in outs]
        if record:
            ctx._record(args, needs, outs)
            results = [
                Tensor._make(o, ctx, i) if o.dtype.kind == "f" else Tensor._make(o)
                for i, o in enumerate(outs)
            ]
        else:
            results = [Tensor._make(o) for o in outs]
        return results[0] if single else tuple(results)


class _DelayedError(Function):
    """Identity whose backward raises: marks results of a once-differentiable backward."""

    @staticmethod
    def forward(ctx, value, name, *inputs):
        ctx.op = name
        return value

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            f"{ctx.op} is decorated with @once_differentiable: its backward cannot be "
            "differentiated again (a second derivative through it is not available)"
        )


def once_differentiable(backward_fn):
    """Decorate a ``backward`` that works on ndarrays (e.g. calls a Cython kernel).

    The wrapped backward receives C-contiguous ndarray grads (``ctx.saved_tensors``
    still works; ``ctx.saved_arrays`` gives arrays) and returns ndarrays or None.
    Under ``create_graph=True`` its results are marked so that differentiating them
    raises a RuntimeError instead of silently giving a wrong second derivative.
    """

    @functools.wraps(backward_fn)
    def wrapper(ctx, *grads):
        arrays = [np.ascontiguousarray(g._data if isinstance(g, Tensor) else g) for g in grads]
        with no_grad():
            result = backward_fn(ctx, *arrays)
        if not _state.enabled:
            return result
        single = not isinstance(result, tuple)
        result = (result,) if single else result
        # Results depend on the incoming grads and on the node's inputs.
        deps = [g for g in grads if isinstance(g, Tensor) and g._requires_grad]
        deps += [t for t in (ctx._next or ()) if t is not None]
        if deps:
            name = ctx.name()
            result = tuple(
                None if r is None else _DelayedError.apply(_raw(r), name, *deps) for r in result
            )
        return result[0] if single else result

    return wrapper


def _raw(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape`` (the adjoint of broadcasting ``shape`` up).

    Works on ndarrays and on Tensors (then it is differentiable).
    """
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1
    )
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


# ----------------------------------------------------------------------------- the walk
def _toposort(roots):
    """Nodes reachable from ``roots``, each listed after all of its consumers.

    Kahn's algorithm with explicit stacks: no recursion, so any depth works.
    """
    consumers = {}
    seen = set(roots)
    stack = list(roots)
    while stack:
        for t in stack.pop()._next or ():
            child = t.grad_fn if t is not None else None
            if child is not None:
                consumers[child] = consumers.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    ready = [n for n in dict.fromkeys(roots) if n not in consumers]
    order = []
    while ready:
        node = ready.pop()
        order.append(node)
        for t in node._next or ():
            child = t.grad_fn if t is not None else None
            if child is not None:
                consumers[child] -= 1
                if consumers[child] == 0:
                    ready.append(child)
    return order


class _Accumulator:
    """Sums of incoming gradients, keyed by (node, output_nr) or id(leaf).

    Without create_graph, the first gradient is kept as is (it may alias another
    array), the second sum allocates, later ones add in place into that array.
    """

    def __init__(self, create_graph):
        self.create = create_graph
        self.grads = {}
        self.owned = set()

    def add(self, key, g):
        prev = self.grads.get(key)
        if prev is None:
            self.grads[key] = g
        elif self.create:
            self.grads[key] = prev + g
        elif key in self.owned:
            np.add(prev, g, out=prev)
        else:
            self.grads[key] = prev + g
            self.owned.add(key)

    def pop(self, key):
        self.owned.discard(key)
        return self.grads.pop(key, None)


def _accumulate_into(t, g, create):
    """Add ``g`` into ``t.grad`` (a leaf, or a non-leaf that retains its grad)."""
    if create:
        g = g if isinstance(g, Tensor) else Tensor._make(g)
        t.grad = g if t.grad is None else t.grad + g
    elif t.grad is None:
        t.grad = Tensor._make(np.array(g, dtype=t.dtype, order="C"))  # own a fresh copy
    elif not t.grad._requires_grad and t.grad._data.flags.writeable and t.grad.shape == g.shape:
        np.add(t.grad._data, g, out=t.grad._data)
    else:
        t.grad = Tensor._make(t.grad._data + g)


def _check_grad(node, i, t, g, create):
    """Validate one gradient returned by ``node``'s backward for its input ``t``."""
    if create:
        g = g if isinstance(g, Tensor) else Tensor._make(np.asarray(g))
    else:
        g = g._data if isinstance(g, Tensor) else np.asarray(g)
    if g.shape != t.shape:
        raise RuntimeError(
            f"{node.name()} returned a gradient of shape {tuple(g.shape)} for input {i}, "
            f"but that input has shape {tuple(t.shape)}"
        )
    if g.dtype != t.dtype:
        g = g.astype(t.dtype)
    return g


def _run(roots, seeds, retain_graph, create_graph, inputs=None):
    """The backward pass.  Returns the captured gradients when ``inputs`` is given."""
    acc = _Accumulator(create_graph)
    capture = None if inputs is None else {}
    if inputs is not None:
        for t in inputs:
            capture[id(t) if t.grad_fn is None else (t.grad_fn, t._output_nr)] = t

    for t, g in zip(roots, seeds, strict=True):
        if t.grad_fn is not None:
            acc.add((t.grad_fn, t._output_nr), g)
        elif capture is None:
            _accumulate_into(t, g, create_graph)
        else:
            acc.add(id(t), g)

    order = _toposort([t.grad_fn for t in roots if t.grad_fn is not None])
    runs = None  # with inputs: only nodes that lead to a captured tensor
    if capture is not None:
        runs, reach = set(), set()
        for node in reversed(order):  # consumers come first in order: walk it backwards
            if any(
                t is not None and (t.grad_fn in reach if t.grad_fn else id(t) in capture)
                for t in node._next or ()
            ):
                runs.add(node)
            if node in runs or any(key[0] is node for key in capture if type(key) is tuple):
                reach.add(node)

    prev_mode = _state.enabled
    _state.enabled = create_graph
    try:
        for node in order:
            if node._freed:
                raise RuntimeError(_FREED_MESSAGE.format(node.name()))
            grads = [acc.pop((node, i)) for i in range(len(node._out_meta))]
            if all(g is None for g in grads):
                continue
            for i, g in enumerate(grads):
                if g is None:  # outputs that received no gradient get zeros
                    shape, dtype = node._out_meta[i]
                    g = np.zeros(shape, dtype)
                    grads[i] = Tensor._make(g) if create_graph else g
                elif capture is not None and (node, i) in capture:
                    acc.grads[(node, i)] = g
            if node._retained and capture is None:
                for i, ref in node._retained.items():
                    if ref() is not None:
                        _accumulate_into(ref(), grads[i], create_graph)
            if runs is not None and node not in runs:
                continue
            wrapped = [g if isinstance(g, Tensor) else Tensor._make(g) for g in grads]
            result = node._fn.backward(node, *wrapped)
            if not isinstance(result, tuple | list):
                result = (result,)
            edges = node._next
            if len(result) < len(edges) or any(r is not None for r in result[len(edges) :]):
                raise RuntimeError(
                    f"{node.name()} returned {len(result)} gradients, expected {len(edges)} "
                    "(one per positional forward argument)"
                )
            if not retain_graph:
                node._release()
            for i, (t, g) in enumerate(zip(edges, result, strict=False)):  # extra Nones allowed
                if t is None or g is None:
                    continue
                g = _check_grad(node, i, t, g, create_graph)
                if t.grad_fn is not None:
                    acc.add((t.grad_fn, t._output_nr), g)
                elif capture is None:
                    _accumulate_into(t, g, create_graph)
                elif id(t) in capture:
                    acc.add(id(t), g)
    finally:
        _state.enabled = prev_mode

    if capture is None:
        return None
    return [acc.grads.get(id(t) if t.is_leaf else (t.grad_fn, t._output_nr)) for t in inputs]


def _roots_and_seeds(outputs, grad_outputs):
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor | np.ndarray):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs; give one each"
        )
    seeds = []
    for k, (t, g) in enumerate(zip(outputs, grad_outputs, strict=True)):
        if not isinstance(t, Tensor):
            raise TypeError(f"outputs must be Tensors, got {type(t).__name__} at position {k}")
        if not t._requires_grad:
            raise RuntimeError(
                f"element {k} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            if t._data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for one-element outputs; output {k} "
                    f"has shape {t.shape}: pass a gradient"
                )
            g = np.ones(t.shape, t.dtype)
        elif isinstance(g, Tensor):
            g = g if is_grad_enabled() and g._requires_grad else g._data
        else:
            g = np.asarray(g, dtype=t.dtype)
        if g.shape != t.shape:
            raise ValueError(
                f"gradient for output {k} has shape {tuple(g.shape)}, expected {tuple(t.shape)}"
            )
        seeds.append(g)
    return outputs, seeds


def _seeds_for(seeds, create_graph):
    if create_graph:
        return [g if isinstance(g, Tensor) else Tensor._make(g) for g in seeds]
    return [g._data if isinstance(g, Tensor) else g for g in seeds]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    roots, seeds = _roots_and_seeds(tensors, grad_tensors)
    retain = create_graph if retain_graph is None else retain_graph
    _run(roots, _seeds_for(seeds, create_graph), retain, create_graph)


def grad(
    outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False
):
    """Gradients of ``outputs`` with respect to ``inputs``, returned as a tuple.

    As ``torch.autograd.grad``: ``.grad`` attributes are not touched; an input the
    outputs do not depend on is an error unless ``allow_unused=True`` (then None).
    """
    roots, seeds = _roots_and_seeds(outputs, grad_outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise RuntimeError(f"input {k} of grad() is not a Tensor that requires grad")
    retain = create_graph if retain_graph is None else retain_graph
    found = _run(roots, _seeds_for(seeds, create_graph), retain, create_graph, inputs)
    out = []
    for k, g in enumerate(found):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"input {k} of grad() was not used to compute the outputs; pass "
                    "allow_unused=True to get None for it"
                )
            out.append(None)
        else:
            out.append(g if isinstance(g, Tensor) else Tensor._make(g))
    return tuple(out)


# Importing the ops attaches the operators and methods to Tensor; a few tensor-level
# functions are re-exported here for convenience.
from .ops import cat, stack, where  # noqa: E402
