"""Shape and indexing ops: reshape, permute, expand, indexing, cat, stack, pad.

Each backward is itself a shape op on the gradient, hence differentiable.  The
backwards that only slice or reshape (reshape, cat, stack, pad) are written so that
they work on ndarrays as well: outside ``create_graph=True`` the engine hands them
the arrays (``plain_backward_arrays``), so a view of the gradient costs one numpy
call instead of a recorded indexing op.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..array.copy import concatenate
from ..autograd import Function, Tensor, is_grad_enabled, unbroadcast
from ._util import normalize_axes, operand


class Reshape(Function):
    plain_backward_arrays = True  # the backward slices or reshapes arrays too

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        try:
            return x.reshape(shape)
        except ValueError as exc:
            raise ValueError(f"reshape: cannot reshape shape {x.shape} into {shape}") from exc

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None


class Permute(Function):
    @staticmethod
    def forward(ctx, x, axes):
        ctx.axes = axes
        return np.transpose(x, axes)

    @staticmethod
    def backward(ctx, grad):
        return grad.permute(*np.argsort(ctx.axes).tolist()), None


class Expand(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        try:
            return np.broadcast_to(x, shape)
        except ValueError as exc:
            raise ValueError(f"expand: cannot broadcast shape {x.shape} to {shape}") from exc

    @staticmethod
    def backward(ctx, grad):
        return unbroadcast(grad, ctx.shape), None


def _has_int_array(index):
    items = index if isinstance(index, tuple) else (index,)
    return any(isinstance(i, np.ndarray) and i.dtype.kind in "iu" for i in items)


class GetItem(Function):
    @staticmethod
    def forward(ctx, x, index):
        ctx.shape = x.shape
        ctx.index = index
        try:
            return x[index]
        except IndexError as exc:
            raise IndexError(f"getitem: {exc} (tensor shape {x.shape})") from exc

    @staticmethod
    def backward(ctx, grad):
        return IndexAdd.apply(grad, ctx.index, ctx.shape), None


class IndexAdd(Function):
    """``zeros(shape)`` with ``g`` added at ``index`` (repeated indices accumulate)."""

    @staticmethod
    def forward(ctx, g, index, shape):
        ctx.index = index
        out = np.zeros(shape, g.dtype)
        if _has_int_array(index):
            np.add.at(out, index, g)
        else:  # basic or boolean indexing cannot repeat an element
            out[index] = g
        return out

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, ctx.index), None, None


class IndexPut(Function):
    """``x`` with ``value`` written at ``index``: the recorded form of ``x[index] = value``
    (written into ``x``'s own array, as torch)."""

    @staticmethod
    def forward(ctx, x, value, index):
        ctx.index = index
        ctx.value_shape = np.shape(value)
        x[index] = value
        return x

    @staticmethod
    def backward(ctx, grad):
        gx = gv = None
        if ctx.needs_input_grad[0]:  # the overwritten elements lose their gradient
            keep = np.ones(grad.shape, grad.dtype)
            keep[ctx.index] = 0
            gx = grad * keep
        if ctx.needs_input_grad[1]:  # value was broadcast to x[index]
            g = grad[ctx.index]
            extra = len(ctx.value_shape) - g.ndim  # numpy drops leading 1s of value
            if extra > 0:
                g = g.reshape((1,) * extra + g.shape)
            gv = unbroadcast(g, ctx.value_shape)
        return gx, gv, None


class Cat(Function):
    plain_backward_arrays = True  # the backward slices or reshapes arrays too

    @staticmethod
    def forward(ctx, axis, *arrays):
        ctx.sizes = [a.shape[axis] for a in arrays]
        ctx.axis = axis
        try:
            return concatenate(arrays, axis)  # np.concatenate on every thread
        except ValueError as exc:
            shapes = ", ".join(str(a.shape) for a in arrays)
            raise ValueError(f"cat: shapes {shapes} must match except along dim {axis}") from exc

    @staticmethod
    def backward(ctx, grad):
        out, start = [None], 0
        lead = (slice(None),) * ctx.axis
        for n, need in zip(ctx.sizes, ctx.needs_input_grad[1:], strict=True):
            out.append(grad[lead + (slice(start, start + n),)] if need else None)
            start += n
        return tuple(out)


class Stack(Function):
    plain_backward_arrays = True  # the backward slices or reshapes arrays too

    @staticmethod
    def forward(ctx, axis, *arrays):
        ctx.axis = axis
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1:
            raise ValueError(f"stack: all tensors must have the same shape, got {sorted(shapes)}")
        return np.stack(arrays, axis=axis)

    @staticmethod
    def backward(ctx, grad):
        lead = (slice(None),) * ctx.axis
        return (None,) + tuple(
            grad[lead + (i,)] if need else None for i, need in enumerate(ctx.needs_input_grad[1:])
        )


class Pad(Function):
    """Constant padding; ``widths`` is numpy's ``((before, after), ...)`` per axis."""

    plain_backward_arrays = True  # the backward slices or reshapes arrays too

    @staticmethod
    def forward(ctx, x, widths, value):
        shape = tuple(n + a + b for n, (a, b) in zip(x.shape, widths, strict=True))
        out = np.full(shape, value, dtype=x.dtype)
        ctx.inner = tuple(slice(a, a + n) for n, (a, _) in zip(x.shape, widths, strict=True))
        out[ctx.inner] = x
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.inner], None, None


# ----------------------------------------------------------------------------- public
def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = shape[0]
    return tuple(int(n) for n in shape)


def reshape(x, *shape):
    """View ``x`` with a new shape (one entry may be -1)."""
    shape = _shape_arg(shape)
    if shape == x.shape:
        return x
    return Reshape.apply(x, shape)


def flatten(x, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (as torch.flatten)."""
    if x.ndim == 0:
        return reshape(x, 1)
    (s,) = normalize_axes(start_dim, x.ndim, "flatten")
    (e,) = normalize_axes(end_dim, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    n = int(np.prod(x.shape[s : e + 1]))
    return reshape(x, x.shape[:s] + (n,) + x.shape[e + 1 :])


def permute(x, *axes):
    """Reorder the dims (``axes`` is a permutation of ``range(ndim)``)."""
    axes = _shape_arg(axes)
    if sorted(a % max(x.ndim, 1) for a in axes) != list(range(x.ndim)) or len(axes) != x.ndim:
        raise ValueError(f"permute: {axes} is not a permutation of the {x.ndim} dims of {x.shape}")
    axes = tuple(a % x.ndim for a in axes)
    if axes == tuple(range(x.ndim)):
        return x
    return Permute.apply(x, axes)


def transpose(x, dim0=-2, dim1=-1):
    """Swap two dims (torch semantics; default: the last two)."""
    d0, d1 = (normalize_axes(d, x.ndim, "transpose")[0] for d in (dim0, dim1))
    axes = list(range(x.ndim))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return permute(x, *axes)


def squeeze(x, dim=None):
    """Drop size-1 dims (all, or ``dim`` if it has size 1; as torch)."""
    if dim is None:
        return reshape(x, tuple(n for n in x.shape if n != 1))
    axes = normalize_axes(dim, x.ndim, "squeeze")
    return reshape(x, tuple(n for i, n in enumerate(x.shape) if not (i in axes and n == 1)))


def unsqueeze(x, dim):
    """Insert a size-1 dim at position ``dim`` (in the output)."""
    (d,) = normalize_axes(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def expand(x, *shape):
    """Broadcast ``x`` to ``shape`` without copying (-1 keeps a dim, as torch)."""
    shape = _shape_arg(shape)
    lead = len(shape) - x.ndim
    if lead < 0:
        raise ValueError(f"expand: cannot expand shape {x.shape} to fewer dims {shape}")
    shape = tuple(x.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
    if shape == x.shape:
        return x
    return Expand.apply(x, shape)


def _index_arg(index):
    if isinstance(index, Tensor):
        return index._data
    if isinstance(index, list):
        return np.asarray(index)
    if isinstance(index, tuple):
        return tuple(_index_arg(i) for i in index)
    return index


# id of a recorded x[index] that views x's memory -> (weakref to it, weakref to x,
# index): an in-place write into the view is then recorded on x too (as
# ``x[index] = new``), as in PyTorch.  Keyed by id: Tensor's == is elementwise.
_VIEWS = {}


def getitem(x, index):
    """``x[index]`` with numpy semantics (ints, slices, None, ..., int arrays, masks)."""
    idx = _index_arg(index)
    out = GetItem.apply(x, idx)
    if out.grad_fn is not None and out._ver is not None and out._ver is x._ver:
        key = id(out)
        _VIEWS[key] = (weakref.ref(out, lambda _, key=key: _VIEWS.pop(key, None)),
                       weakref.ref(x), idx)
    return out


def view_base(t):
    """``(base, index)`` if ``t`` is a recorded ``base[index]`` view still alive, else None."""
    entry = _VIEWS.get(id(t))
    if entry is None or entry[0]() is not t:
        return None
    base = entry[1]()
    return None if base is None else (base, entry[2])


def has_views(base) -> bool:
    """Whether a recorded ``base[index]`` view of ``base`` is still alive."""
    return any(e[1]() is base and e[0]() is not None for e in list(_VIEWS.values()))


def write_through_view(view, new, entry):
    """Record ``view <- new`` (a graph tensor of view's shape) as ``base[index] = new`` on
    the view's base (recursively, for a view of a view), then make ``view`` the
    ``base[index]`` of the updated base: both histories include the write."""
    base, idx = entry
    setitem(base, idx, new)  # writes the values into the shared memory, bumps the version
    fresh = GetItem.apply(base, idx)
    view.grad_fn, view._output_nr, view._requires_grad = (
        fresh.grad_fn, fresh._output_nr, fresh._requires_grad)


def setitem(x, index, value):
    """``x[index] = value``, in place, as torch.

    When ``value`` (or a non-leaf ``x``) requires grad, ``x`` becomes the output of
    the assignment, so gradients reach ``value`` (through ``x[index]``) and the
    elements of the old ``x`` that were not overwritten.  The write bumps ``x``'s
    version: a node that saved ``x`` before refuses to use it.  A leaf that
    requires grad cannot be assigned into while grad mode is on (under ``no_grad()``
    any tensor can, as in PyTorch).
    """
    if x.requires_grad and x.grad_fn is None and is_grad_enabled():
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            "(Assign under `with sandbox.no_grad():`, or into x.data.)"
        )
    idx = _index_arg(index)
    value = operand(value, "setitem")
    tracked = x.requires_grad or (isinstance(value, Tensor) and value.requires_grad)
    entry = view_base(x) if tracked and is_grad_enabled() else None
    if entry is not None:  # x is base[i] in the graph: record the write on base as well
        old = Tensor._make(x._data.copy(), x.grad_fn, x._output_nr)
        old._requires_grad = x._requires_grad
        write_through_view(x, IndexPut.apply(old, value, idx), entry)
        return
    if tracked and is_grad_enabled():
        # The node's input is x as it was (for a non-leaf, its old place in the graph).
        old = Tensor._make(x._data, x.grad_fn, x._output_nr) if x.requires_grad else x
        out = IndexPut.apply(old, value, idx)
        x.grad_fn, x._output_nr, x._requires_grad = out.grad_fn, out._output_nr, True
    else:
        x._data[idx] = value._data if isinstance(value, Tensor) else value
    x._bump_version()  # a node that saved x will refuse to use it (see Context)


def _tensors(seq, op):
    """The tensors of ``seq``, cast to their common dtype (torch's promotion)."""
    if isinstance(seq, Tensor) or not len(seq):
        raise TypeError(f"{op}: expected a non-empty sequence of tensors")
    ts = [t if isinstance(t, Tensor) else np.asarray(t) for t in seq]
    dtype = ts[0].dtype
    for t in ts:
        if t.dtype != dtype:  # mixed dtypes
            from ._promote import promote

            return list(promote(*ts)[1])
    return ts


def cat(tensors, dim=0, *, axis=None):
    """Concatenate along an existing dim (``axis=`` is accepted as numpy's name)."""
    dim = dim if axis is None else axis
    ts = _tensors(tensors, "cat")
    (d,) = normalize_axes(dim, ts[0].ndim, "cat")
    return Cat.apply(d, *ts)


def stack(tensors, dim=0, *, axis=None):
    """Stack along a new dim (``axis=`` is accepted as numpy's name)."""
    dim = dim if axis is None else axis
    ts = _tensors(tensors, "stack")
    (d,) = normalize_axes(dim, ts[0].ndim + 1, "stack")
    return Stack.apply(d, *ts)


def pad(x, pad, mode="constant", value=0.0):
    """Pad with a constant, torch-style: ``pad = (left, right, top, bottom, ...)``.

    The pairs start from the last dim.  Only ``mode="constant"`` is supported, and
    widths must be non-negative.
    """
    if mode != "constant":
        raise ValueError(f"pad: mode must be 'constant' (the only mode supported), got {mode!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(
            f"pad: expected an even number of widths, at most 2 * ndim = {2 * x.ndim}, got {pad}"
        )
    if any(p < 0 for p in pad):
        raise ValueError(f"pad: widths must be non-negative, got {pad}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return Pad.apply(x, tuple(widths), value)
