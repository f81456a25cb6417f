"""Functions and their contexts: how an operation enters the graph.

A :class:`Function` subclass pairs ``forward(ctx, *arrays)`` with
``backward(ctx, *grads)``.  :meth:`Function.apply` unwraps Tensor arguments to
ndarrays, runs ``forward`` with a fresh :class:`Context` (the op's scratch space:
what it saves, and any attribute it sets), and, when grad mode is on and some
input requires grad, records a graph :class:`~sandbox.autograd._node.Node` that
holds the Function, the context and one edge per input (see ``_node``).

Gradients
    ``backward`` receives Tensors, so a backward written with Tensor ops is
    differentiable again; a :func:`once_differentiable` backward (a kernel call)
    receives and returns plain ndarrays, and outside ``create_graph=True`` the
    engine hands it its arrays as they are.

Saved tensors
    ``ctx.save_for_backward(*items)`` takes arrays, Tensors or None;
    ``ctx.saved_tensors`` gives them back as Tensors.  An array that *is* (by
    identity) one of the forward's input arrays comes back as that input Tensor;
    an array that is one of the forward's outputs comes back as the output,
    attached to this op's node while the backward is itself being recorded
    (``create_graph=True``); any other array is a constant.  So a backward written
    with Tensor ops in terms of its inputs/outputs is differentiable again.

In-place writes
    Each saved Tensor's version (its count of in-place writes: ``t[i] = v``,
    ``t.zero_()``, ``t.data = ...``, also through ``detach()`` and views) is noted
    when it is saved and checked when ``saved_tensors``/``saved_arrays`` read it: a
    write in between raises a RuntimeError naming the op, the shape and the
    versions, as in PyTorch.  Writes made with numpy on ``t.numpy()`` are not seen.

Release
    After its backward (unless ``retain_graph=True``) the node releases its
    context, which drops everything it kept: saved items and any attribute the op
    set on ``ctx``.

once_differentiable
    A backward decorated with :func:`once_differentiable` gets C-contiguous
    ndarrays, returns ndarrays, and its results raise a clear error if someone
    differentiates through them.
"""

from __future__ import annotations

import functools

import numpy as np

from . import _anomaly
from ._grad_mode import _state, no_grad
from ._node import Edge, Node
from ._tensor import Tensor, _Version, as_ndarray

__all__ = ["Context", "Function", "once_differentiable", "unbroadcast"]


class _SavedOutput:
    """A saved array that is an output of the same node (see Context.saved_tensors).

    ``ver`` is the output Tensor's version counter, so an in-place write into the
    output (``y = x.exp(); y.add_(1)``) is caught as for saved inputs."""

    __slots__ = ("index", "data", "ver")

    def __init__(self, index, data):
        self.index = index
        self.data = data
        self.ver = _Version()

    @property
    def _version(self):
        return self.ver.value

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)


class Context:
    """Per-call state shared by ``forward`` and ``backward``: the op's scratch space.

    Functions may store any extra attribute on it (``ctx.shape = x.shape``).  The
    graph node (``y.grad_fn``) is a separate object that holds this context.
    """

    _versions = None  # per saved item: the Tensor's version when saved (None: not a Tensor)
    _freed = False
    _node = None  # this op's node, only while its backward runs under create_graph
    #: set by the engine before a plain backward of a Function with ``deferrable``
    #: gradients: True when it may return those as pending results (runtime.overlap)
    defer = False

    def __init__(self, fn, inputs, needs_input_grad):
        self._fn = fn  # to name the op in errors
        self._inputs = inputs  # the apply() args, during forward only
        self._saved = ()
        self.needs_input_grad = needs_input_grad

    def name(self) -> str:
        return f"{self._fn.__name__}Backward"

    def __repr__(self):
        return f"<Context of {self._fn.__name__}>"

    def save_for_backward(self, *items) -> None:
        """Save arrays, Tensors or None for backward (call at most once, in forward)."""
        saved = list(items)
        versions = None  # noted for the in-place check (see _check_versions)
        for k, item in enumerate(items):
            if isinstance(item, np.ndarray):  # an input's array comes back as that input
                for arg in self._inputs:
                    if isinstance(arg, Tensor) and arg._data is item:
                        saved[k] = item = arg
                        break
                else:
                    continue
            elif not isinstance(item, Tensor):
                continue
            if versions is None:
                versions = [None] * len(items)
            versions[k] = 0 if item._ver is None else item._ver.value  # item._version
        self._saved = saved
        self._versions = versions

    @property
    def saved_tensors(self) -> tuple:
        """The saved items as Tensors (None stays None); see the module docstring."""
        self._check_saved()
        out = []
        for item in self._saved:
            if isinstance(item, _SavedOutput):
                node = self._node if _state.enabled else None
                item = Tensor._make(item.data, node, item.index)
            elif isinstance(item, np.ndarray):
                item = Tensor._make(item)
            out.append(item)
        return tuple(out)

    @property
    def saved_arrays(self) -> tuple:
        """The saved items as plain ndarrays (for kernel-backed backward functions)."""
        self._check_saved()
        return tuple(
            [
                item._data if isinstance(item, Tensor)
                else item.data if isinstance(item, _SavedOutput)
                else item  # an array (not an output), a constant or None
                for item in self._saved
            ]
        )

    def _mark_outputs(self, outputs) -> bool:
        """Once forward has returned: a saved array that is an output is noted as one.
        Returns whether any was."""
        marked = False
        for i, item in enumerate(self._saved):
            if isinstance(item, np.ndarray):
                for j, o in enumerate(outputs):
                    if item is o:
                        self._saved[i] = _SavedOutput(j, o)
                        if self._versions is None:
                            self._versions = [None] * len(self._saved)
                        self._versions[i] = 0
                        marked = True
                        break
            elif isinstance(item, np.generic):  # a saved 0-d constant: keep it an array
                self._saved[i] = as_ndarray(item)
        return marked

    def _rebase_output(self, index, tensor) -> None:
        """An in-place op wrote this node's output ``index`` into ``tensor`` (which now
        stands for it): a saved copy of that output becomes ``tensor``'s array and
        version counter, so a later write into ``tensor`` is caught (as in PyTorch)."""
        for k, item in enumerate(self._saved or ()):
            if isinstance(item, _SavedOutput) and item.index == index:
                if tensor._ver is None:
                    tensor._ver = _Version()
                item.data, item.ver = tensor._data, tensor._ver
                self._versions[k] = tensor._ver.value

    def _check_saved(self) -> None:
        """Raise if the saved items were released, or one was written in place since."""
        if self._freed:
            raise RuntimeError(_FREED_MESSAGE.format(self.name()))
        if self._versions is not None:
            self._check_versions()

    def _check_versions(self) -> None:
        """Raise if a saved Tensor was written in place after it was saved."""
        for k, (item, seen) in enumerate(zip(self._saved, self._versions, strict=True)):
            if seen is not None and item._version != seen:
                raise RuntimeError(
                    f"one of the tensors needed by {self.name()} for its gradient (saved tensor "
                    f"{k}, shape {tuple(item.shape)}, {item.dtype}) has been modified by an "
                    f"inplace operation: it is at version {item._version}; expected version "
                    f"{seen} instead. Write into a copy (t.clone()) or after the backward."
                )

    def _release(self) -> None:
        """Drop everything kept for backward: saved items and the attributes the op
        set on ctx (masks, shapes ...).  Called by the node after its backward."""
        fn = self._fn
        self.__dict__.clear()
        self._fn = fn
        self._freed = True


def _record(fn, ctx, args, needs, outputs):
    """The graph node of one op call, once forward has returned ``outputs``, and the
    output Tensors (floating outputs attached to it)."""
    edges = []
    consts = None
    for k, a in enumerate(args):
        if needs[k]:  # a leaf is its own edge; a non-leaf input is (its node, its output nr)
            edges.append(a if a.grad_fn is None else Edge(a.grad_fn, a._output_nr))
        else:
            edges.append(None)
            if isinstance(a, Tensor):
                if consts is None:
                    consts = [None] * len(args)
                consts[k] = (a._data.shape, a._data.dtype)
    node = Node(fn, ctx, edges, [(o.shape, o.dtype) for o in outputs])
    if consts is not None:
        node._consts = consts
    if _anomaly._flag.enabled:
        node._trace = _anomaly.capture_stack()
    results = [Tensor._make(o, node, i) if o.dtype.kind == "f" else Tensor._make(o)
               for i, o in enumerate(outputs)]
    if ctx._saved and ctx._mark_outputs(outputs):
        for item in ctx._saved:  # a saved output shares the output's version counter
            if isinstance(item, _SavedOutput):
                results[item.index]._ver = item.ver
    return results


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

    A Function whose plain backward (``create_graph=False``) returns only arrays it
    allocated itself, none of them an input, a saved array or another returned
    gradient, sets ``fresh_grads = True``: a leaf without a gradient then keeps the
    array as its ``.grad`` instead of a copy.
    """

    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    #: Set True on a Function whose plain backward (``create_graph=False``) returns only
    #: arrays it allocated itself, none of them an input, a saved array or another
    #: returned gradient: a leaf without a gradient then keeps the array as its
    #: ``.grad`` instead of a copy.
    fresh_grads = False

    #: Set True on a Function whose ``backward`` works on ndarrays outside
    #: ``create_graph=True`` (a kernel-backed op): the engine then hands it the
    #: gradients as the arrays it sums, without wrapping them into Tensors.  Under
    #: create_graph every backward receives Tensors.  once_differentiable sets it.
    plain_backward_arrays = False

    #: Positions of the gradients a plain backward may hand back pending
    #: (:class:`sandbox.runtime.overlap.Pending`, computed beside the calling thread)
    #: when the engine sets ``ctx.defer``: it does so when every input at these positions
    #: is a leaf (or None), so nothing in the backward pass reads those gradients before
    #: the leaves accumulate them.  A convolution's weight and bias.
    deferrable = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if getattr(cls.backward, "_array_grads", False):
            cls.plain_backward_arrays = True

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
        outs = [out] if single else list(out)
        for i, o in enumerate(outs):
            if not isinstance(o, np.ndarray):
                outs[i] = _as_output(ctx, o)
        ctx._inputs = None
        if record:
            results = _record(cls, ctx, args, needs, outs)
        else:
            results = [Tensor._make(o) for o in outs]
        for r in results:
            if r._data.base is not None:  # a view (reshape, transpose ...) of an input?
                _share_version(r, args)
        return results[0] if single else tuple(results)


def _share_version(view, args):
    """Give ``view`` the version counter of the input whose memory it views, so an
    in-place write through either is seen by nodes that saved the other."""
    base = view._data.base
    for a in args:
        if isinstance(a, Tensor) and (a._data is base or a._data.base is base):
            if a._ver is None:
                a._ver = _Version()
            a._ver.view = True
            view._ver = a._ver
            return


def _as_output(ctx, value):
    """A numpy scalar output (ufuncs on 0-d arrays return them) as a 0-d array.

    The engine's rule for 0-d values (:func:`~sandbox.autograd._tensor.as_ndarray`).
    A saved copy of the same scalar is replaced too, so it is still recognised
    as this node's output (see Context.saved_tensors).
    """
    arr = as_ndarray(value)
    if ctx._saved:
        ctx._saved = [arr if item is value else item for item in ctx._saved]
    return arr


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
        deps = [_edge(g) for g in grads if isinstance(g, Tensor) and g._requires_grad]
        if ctx._node is not None:
            deps += [e for e in ctx._node._next if e is not None]
        if deps:
            result = tuple(None if r is None else _delayed(_raw(r), ctx, deps) for r in result)
        return result[0] if single else result

    wrapper._array_grads = True
    return wrapper


def _edge(t):
    """The edge to tensor ``t`` (a leaf is its own edge)."""
    return t if t.grad_fn is None else Edge(t.grad_fn, t._output_nr)


def _delayed(value, ctx, deps):
    """``value`` as the output of a _DelayedError node whose inputs are ``deps``.

    As ``_DelayedError.apply(value, name, *deps)`` would record it, with the edges
    given directly (an Edge is not a Tensor to pass to apply).
    """
    err = Context(_DelayedError, (), (False, False) + (True,) * len(deps))
    err.op = ctx.name()
    if value.dtype.kind != "f":
        return Tensor._make(value)
    node = Node(_DelayedError, err, [None, None, *deps], [(value.shape, value.dtype)])
    return Tensor._make(value, node, 0)


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
