"""In-place ops (``add_``, ``mul_``, ``clamp_``, ``fill_``, ``normal_`` ... and ``+=``)
with PyTorch's rules; also ``Tensor.to``.

Every in-place op writes into the tensor's own array (so ``d = c; c += 1`` changes
``d``, and ``p.data.zero_()`` changes ``p``), bumps its version counter and
returns the tensor.  As in PyTorch:

* **Outside the graph** (under ``no_grad()``, or when nothing involved requires
  grad) it is a plain write: ``with no_grad(): p -= lr * p.grad`` updates ``p``.
* **A leaf that requires grad** cannot be changed in place while grad mode is on:
  ``RuntimeError: a leaf Variable that requires grad is being used in an in-place
  operation.``
* **A non-leaf graph tensor** (or any tensor, when the other operand requires
  grad) is changed and *recorded*: the op's node takes the old value (its old
  place in the graph) as input and the tensor becomes that node's output, so
  gradients flow through the write.  The node keeps its own copy of the old value,
  except where its gradient does not need it (``add_``, ``sub_``, ``neg_``, ``abs_``, and
  ops whose node keeps the result: ``exp_``, ``sqrt_``, ``sigmoid_``, ``tanh_``,
  ``leaky_relu_``): they read the tensor's array itself, and ``relu_`` writes straight
  into it.
  A node recorded earlier that saved the tensor (``y = x.exp()`` saves ``y``)
  sees the version change and its backward raises PyTorch's "modified by an
  inplace operation" error.  A write into an indexing view ``h[i]`` of a graph
  tensor is recorded on ``h`` too (as ``h[i] = new``), so ``h[0:2].mul_(w)`` and
  ``h[i] += v`` work as in PyTorch; a write into a reshaped or permuted view of a
  graph tensor, or into a graph tensor while an indexing view of it is alive, is
  refused (PyTorch rewrites the other tensor's history; this engine only does so
  for the base of an indexing view).
* The result dtype must fit the tensor: ``int_tensor += 0.5`` raises
  "result type Float can't be cast to the desired output type Long" (``copy_``
  casts freely, as in PyTorch).
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor, is_grad_enabled, no_grad
from ..runtime.device import parse_to
from ..runtime.rng import numpy_rng
from . import _arith, _nonlinear, _shape
from ._promote import float_result, result_type

_LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
_TORCH_NAMES = {"b": "Bool", "u": "Byte", "i": "Long", "f": "Float"}


def _check_cast(src, dst, op):
    """PyTorch's rule for writing a ``src`` result into a ``dst`` tensor: never a float
    into an integer tensor, nor a number into a bool tensor."""
    order = {"b": 0, "u": 1, "i": 1, "f": 2}
    if order[np.dtype(src).kind] > order[np.dtype(dst).kind]:
        raise RuntimeError(
            f"{op}: result type {_TORCH_NAMES[np.dtype(src).kind]} can't be cast to the "
            f"desired output type {_TORCH_NAMES[np.dtype(dst).kind]} ({src} into a {dst} tensor)"
        )


def _tracked(x, args) -> bool:
    if not is_grad_enabled():
        return False
    return x._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)


def _apply(x, op, fn, *args, cast_check=True, keeps_old=True):
    """Write ``fn(x, *args)`` (an out-of-place Tensor op) into ``x``; see the module doc.

    ``keeps_old=False``: ``fn``'s node keeps nothing of ``x``'s old value (``add_``,
    ``sub_``: their gradients are the incoming one), so it reads ``x``'s array itself
    instead of a copy made for it.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if _tracked(x, args):
        if x._requires_grad and x.grad_fn is None:
            raise RuntimeError(_LEAF)
        viewed = x._ver is not None and x._ver.view
        entry = _shape.view_base(x) if viewed else None
        if entry is None and viewed and (x._data.base is not None or _shape.has_views(x)):
            raise RuntimeError(
                f"{op}: in-place write into a reshaped or permuted view of a tensor in the "
                "autograd graph, or into a tensor whose indexing views x[i] are still in use, "
                "is not supported (writes into x[i] itself are); use the out-of-place form "
                "(x = x.op(...)) or clone() first"
            )
        old = Tensor._make(x._data.copy() if keeps_old else x._data, x.grad_fn, x._output_nr)
        old._requires_grad = x._requires_grad
        out = fn(old, *args)
        if cast_check:
            _check_cast(out.dtype, x.dtype, op)
        _check_shape(out, x, op)
        if out.dtype != x.dtype:
            out = _arith.astype(out, x.dtype)
        if entry is not None:  # x is base[i]: the write is recorded on base too
            _shape.write_through_view(x, out, entry)
            return x
        np.copyto(x._data, out._data)
        return _take_place(x, out)
    else:
        with no_grad():
            out = fn(x, *args)
        if cast_check:
            _check_cast(out.dtype, x.dtype, op)
        _check_shape(out, x, op)
        np.copyto(x._data, out._data, casting="unsafe")
    x._bump_version()
    return x


def _take_place(x, out):
    """``x``, written in place with ``out``'s values, takes ``out``'s place in the graph:
    its node and output number, a new version (nodes that saved the old value refuse
    their backward), and the node's saved result, if it saved one (sigmoid_, relu_ ...),
    is ``x`` now."""
    x.grad_fn, x._output_nr, x._requires_grad = out.grad_fn, out._output_nr, out._requires_grad
    x._bump_version()
    if x.grad_fn is not None:
        x.grad_fn._rebase_output(x._output_nr, x)
    return x


def _check_shape(out, x, op):
    if out.shape != x.shape:
        raise RuntimeError(
            f"{op}: the result has shape {tuple(out.shape)}, which does not fit in place "
            f"into a tensor of shape {tuple(x.shape)} (the other operand must broadcast to it)"
        )


def _value(x):
    return x._data if isinstance(x, Tensor) else x


def _ufunc_inplace(x, ufunc, other, op, to_float=False):
    """The fast path of ``x (op)= other`` outside the graph: one ufunc with ``out=``."""
    other = _value(other)
    shape = np.shape(other)
    if shape != x.shape and np.broadcast_shapes(x.shape, shape) != x.shape:
        _check_shape(Tensor._make(np.empty(np.broadcast_shapes(x.shape, shape))), x, op)
    if getattr(other, "dtype", None) != x.dtype or to_float and x.dtype.kind != "f":
        dtype = result_type(x, other)  # (same dtype: nothing to check)
        _check_cast(float_result(dtype) if to_float else dtype, x.dtype, op)
    ufunc(x._data, other, out=x._data, casting="unsafe")
    x._bump_version()
    return x


def _binary_(name, fn, ufunc, to_float=False, keeps_old=True):
    def op_(x, other):
        if not _tracked(x, (other,)) and isinstance(x, Tensor):
            return _ufunc_inplace(x, ufunc, other, name, to_float)
        return _apply(x, name, fn, other, keeps_old=keeps_old)

    op_.__name__ = name
    op_.__doc__ = f"``x = x.{name[:-1]}(other)`` written into ``x`` (see the module doc)."
    return op_


mul_ = _binary_("mul_", _arith.mul, np.multiply)
div_ = _binary_("div_", _arith.div, np.true_divide, to_float=True)
_add_ = _binary_("add_", _arith.add, np.add, keeps_old=False)  # Add saves no operand
_sub_ = _binary_("sub_", _arith.sub, np.subtract, keeps_old=False)


def add_(x, other, *, alpha=1):
    """``x += alpha * other`` in place (see the module doc)."""
    return _add_(x, other if alpha == 1 else other * alpha)


def sub_(x, other, *, alpha=1):
    """``x -= alpha * other`` in place."""
    return _sub_(x, other if alpha == 1 else other * alpha)


def pow_(x, exponent):
    """``x **= exponent`` in place."""
    return _apply(x, "pow_", _arith.pow, exponent)


def floor_divide_(x, other):
    """``x //= other`` in place (rounds toward minus infinity, as torch)."""
    from ._intdiv import floor_divide

    return _apply(x, "floor_divide_", floor_divide, other)


def remainder_(x, other):
    """``x %= other`` in place (the sign of ``other``, as torch and Python)."""
    from ._intdiv import remainder

    return _apply(x, "remainder_", remainder, other)


def clamp_(x, min=None, max=None):  # noqa: A002 - torch's argument names
    """Limit ``x`` to ``[min, max]`` in place."""
    if min is None and max is None:
        raise ValueError("clamp_: give at least one of min and max")
    return _apply(x, "clamp_", lambda t: _arith.clamp(t, _value(min), _value(max)))


def _unary_(name, fn, keeps_old=True):
    def op_(x):
        return _apply(x, name, fn, keeps_old=keeps_old)

    op_.__name__ = name
    op_.__doc__ = f"``x = x.{name[:-1]}()`` written into ``x``."
    return op_


# keeps_old=False: the node keeps its result (exp, sqrt, sigmoid, tanh), a sign it
# computed (abs) or nothing (neg), never the old value, which then needs no copy
abs_ = _unary_("abs_", _arith.abs, keeps_old=False)
neg_ = _unary_("neg_", _arith.neg, keeps_old=False)
exp_ = _unary_("exp_", _arith.exp, keeps_old=False)
log_ = _unary_("log_", _arith.log)
sqrt_ = _unary_("sqrt_", _arith.sqrt, keeps_old=False)


sigmoid_ = _unary_("sigmoid_", _nonlinear.sigmoid, keeps_old=False)
tanh_ = _unary_("tanh_", _nonlinear.tanh, keeps_old=False)


def relu_(x):
    """``x = x.relu()`` written into ``x``.

    In the graph, unlike the other in-place ops, without a copy of the old value: ReLU's
    gradient needs only its output, so the op writes straight into ``x``'s array and its
    node saves that (a ResNet block's ``ReLU(inplace=True)`` after a batch norm had
    copied the activation twice).  A view of another tensor takes the general path.
    """
    if (isinstance(x, Tensor) and _tracked(x, ()) and x.grad_fn is not None
            and not (x._ver is not None and x._ver.view)):
        old = Tensor._make(x._data, x.grad_fn, x._output_nr)  # x's place in the graph
        return _take_place(x, _nonlinear.Relu.apply(old, True))
    return _apply(x, "relu_", _nonlinear.relu)


def leaky_relu_(x, negative_slope=0.01):
    """``leaky_relu`` written into ``x`` (without a copy of the old value for a slope of at
    least 0, whose node keeps the result)."""
    slope = float(negative_slope)
    return _apply(x, "leaky_relu_", lambda t: _nonlinear.LeakyRelu.apply(t, slope, True),
                  keeps_old=slope < 0)


silu_ = _unary_("silu_", _nonlinear.silu)


def _replace(t, value):
    """``value`` everywhere in ``t``'s shape; the old values get no gradient."""
    return _arith.where(np.ones(t.shape, bool), value, t)


def fill_(x, value):
    """Set every element to ``value`` (a number or a one-element tensor)."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor, got shape {tuple(value.shape)}"
        )
    return _apply(x, "fill_", _replace, value, cast_check=False)


def zero_(x):
    """Set every element to zero."""
    return _apply(x, "zero_", _replace, 0)


def copy_(x, src):
    """Copy ``src`` (broadcast to ``x``'s shape, cast to ``x``'s dtype) into ``x``."""
    if not isinstance(src, Tensor):
        src = np.asarray(src)
    if np.broadcast_shapes(src.shape, x.shape) != x.shape:
        raise RuntimeError(f"copy_: source of shape {tuple(src.shape)} does not broadcast "
                           f"to the destination shape {tuple(x.shape)}")
    return _apply(x, "copy_", _replace, src, cast_check=False)


def _random_(op, x, sample, generator):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: expects a float tensor, got {x.dtype}")
    values = sample(numpy_rng(generator), x.shape).astype(x.dtype, copy=False)
    return _apply(x, op, _replace, values)


def normal_(x, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples of N(mean, std²) from ``generator`` (default: the global one)."""
    if std < 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    return _random_("normal_", x, lambda g, s: g.normal(mean, std, size=s), generator)


def uniform_(x, a=0.0, b=1.0, *, generator=None):  # noqa: D417
    """Fill with samples of U(a, b) from ``generator`` (default: the global one)."""
    if a > b:
        raise ValueError(f"uniform_: expects a <= b, got a={a}, b={b}")
    return _random_("uniform_", x, lambda g, s: g.uniform(a, b, size=s), generator)


def to(x, *args, **kwargs):
    """``x`` with the requested dtype (device: the CPU only); self when nothing changes."""
    _, dtype = parse_to(args, kwargs)
    if dtype is None or dtype == x.dtype:
        return x.clone() if kwargs.get("copy") else x
    return _arith.astype(x, dtype)
