"""Elementwise arithmetic and math as Functions.

Binary ops broadcast as numpy does; their backward sums the gradient back to each
operand's shape with :func:`~sandbox.autograd.unbroadcast`.  Every backward is
written with Tensor ops, so it is differentiable again (``create_graph=True``).
"""

from __future__ import annotations

import numpy as np

from ..array import activation, arith
from ..autograd import Function, Tensor, unbroadcast
from ._promote import float_result, promote
from ._util import operand, shape_of


def _binary(ufunc, name, a, b):
    try:
        return arith.binary(ufunc, a, b)  # numpy's ufunc, on every thread for large operands
    except ValueError as exc:
        raise ValueError(
            f"{name}: shapes {shape_of(a)} and {shape_of(b)} cannot be broadcast together"
        ) from exc


def _binary_forward(ctx, ufunc, name, a, b):
    """``ufunc(a, b)`` of a broadcasting Function, noting the operand shapes for
    :func:`_operand_grads`."""
    ctx.shapes = (shape_of(a), shape_of(b))
    return _binary(ufunc, name, a, b)


def _operand_grads(ctx, grad_a, grad_b, needs=None):
    """The gradients of a broadcasting binary op, each summed back to its operand's
    shape; ``grad_a()`` and ``grad_b()`` (full-shape gradients) are called only for an
    operand that needs one (``needs``, default the first two of ``needs_input_grad``),
    the other gets None."""
    sa, sb = ctx.shapes
    na, nb = ctx.needs_input_grad[:2] if needs is None else needs
    return (unbroadcast(grad_a(), sa) if na else None, unbroadcast(grad_b(), sb) if nb else None)


class Add(Function):
    """``a + b``; :class:`Sub` is the same op with ``b``'s gradient negated."""

    _ufunc, _negate_b = np.add, False

    @classmethod
    def forward(cls, ctx, a, b):
        return _binary_forward(ctx, cls._ufunc, cls.__name__.lower(), a, b)

    @classmethod
    def backward(cls, ctx, grad):
        return _operand_grads(ctx, lambda: grad, lambda: -grad if cls._negate_b else grad)


class Sub(Add):
    """``a - b``."""

    _ufunc, _negate_b = np.subtract, True


class Mul(Function):
    fresh_grads = True  # grad * b and grad * a are new products (summed back: new too)

    @staticmethod
    def forward(ctx, a, b):
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        return _binary_forward(ctx, np.multiply, "mul", a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _operand_grads(ctx, lambda: grad * b, lambda: grad * a)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        out = _binary_forward(ctx, np.true_divide, "div", a, b)
        ctx.save_for_backward(b, out if ctx.needs_input_grad[1] else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        b, out = ctx.saved_tensors
        # d(a/b)/db = -(a/b)/b
        return _operand_grads(ctx, lambda: grad / b, lambda: -(grad * out) / b)


class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        return np.negative(x)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Pow(Function):
    """``x ** p`` for a constant exponent ``p``."""

    @staticmethod
    def forward(ctx, x, p):
        ctx.p = p
        ctx.save_for_backward(x)
        return np.power(x, p)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        p = ctx.p
        if p == 0:
            return grad * 0.0, None
        if p == 1:
            return grad, None
        if p == 2:
            return grad * (x * 2.0), None
        return grad * (x ** (p - 1) * p), None


class PowT(Function):
    """``a ** b`` with a Tensor exponent (``a`` may be a scalar or a Tensor)."""

    @staticmethod
    def forward(ctx, a, b):
        out = _binary_forward(ctx, np.power, "pow", a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        log_a = a.log() if isinstance(a, Tensor) else float(np.log(a))
        return _operand_grads(ctx, lambda: grad * b * a ** (b - 1.0), lambda: grad * out * log_a)


def _elementwise(name, fn, derivative, saves="input", module=__name__):
    """The Function class ``name`` of ``y = fn(x)`` (ndarray to ndarray) whose backward
    is ``derivative(grad, saved)``: ``saved`` is the input ``x`` (``saves="input"``)
    or the output ``y`` (``"output"``) as a Tensor, and ``derivative`` uses Tensor ops,
    so the backward is differentiable again."""
    keep_output = saves == "output"

    def forward(ctx, x):
        y = fn(x)
        ctx.save_for_backward(y if keep_output else x)
        return y

    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        return derivative(grad, saved)

    return type(name, (Function,), {
        "__module__": module, "__qualname__": name,
        "forward": staticmethod(forward), "backward": staticmethod(backward),
    })


# the kernels' vectorised exp on every thread (within 2 ulps; numpy's is 1 thread and 3x
# slower an element on float32)
Exp = _elementwise("Exp", activation.exp, lambda grad, y: grad * y, saves="output")
Log = _elementwise("Log", np.log, lambda grad, x: grad / x)
Log1p = _elementwise("Log1p", np.log1p, lambda grad, x: grad / (x + 1.0))
Sqrt = _elementwise("Sqrt", np.sqrt, lambda grad, y: grad / (y * 2.0), saves="output")


class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.sign = np.sign(x)  # d|x|/dx = sign(x), taken as 0 at 0 (as torch)
        return np.abs(x)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.sign


class Clamp(Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        # Gradient passes where lo <= x <= hi (boundaries included, as torch).
        mask = np.ones(x.shape, bool)
        if lo is not None:
            mask &= x >= lo
        if hi is not None:
            mask &= x <= hi
        ctx.mask = mask
        return np.clip(x, lo, hi)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.mask, None, None


class Where(Function):
    """``cond ? a : b``; ``cond`` is a constant boolean array."""

    @staticmethod
    def forward(ctx, cond, a, b):
        ctx.cond = cond
        ctx.shapes = (shape_of(a), shape_of(b))
        try:
            return np.where(cond, a, b)
        except ValueError as exc:
            raise ValueError(
                f"where: shapes {np.shape(cond)}, {shape_of(a)} and {shape_of(b)} cannot "
                "be broadcast together"
            ) from exc

    @staticmethod
    def backward(ctx, grad):
        return None, *_operand_grads(ctx, lambda: Where.apply(ctx.cond, grad, 0.0),
                                     lambda: Where.apply(ctx.cond, 0.0, grad),
                                     ctx.needs_input_grad[1:])


class Extremum(Function):
    """Elementwise maximum (``which=np.maximum``) or minimum; ties split the gradient."""

    @staticmethod
    def forward(ctx, a, b, which):
        out = _binary_forward(ctx, which, which.__name__, a, b)
        # 1 where a wins, 0 where b wins, 1/2 on ties (PyTorch's rule).
        pick_a = np.where(a == b, 0.5, (out == a).astype(np.float64))
        ctx.coef = np.asarray(pick_a, dtype=out.dtype)
        return out

    @staticmethod
    def backward(ctx, grad):
        return *_operand_grads(ctx, lambda: grad * ctx.coef, lambda: grad * (1.0 - ctx.coef)), None


class AsType(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.in_dtype = x.dtype
        return x.astype(dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        return grad.astype(ctx.in_dtype), None


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


# ----------------------------------------------------------------------------- public
# Binary ops cast their operands to PyTorch's result dtype first (see _promote).
def _binary_operands(a, b, op, to_float=False):
    a, b = operand(a, op), operand(b, op)
    # Fast paths (no cast needed): two tensors of one dtype, a float tensor and a number.
    if isinstance(a, Tensor):
        kind = a._data.dtype.kind
        if (isinstance(b, Tensor) and b._data.dtype == a._data.dtype
                or kind == "f" and type(b) in (float, int)):
            if kind == "f" or not to_float:
                return a, b
    elif isinstance(b, Tensor) and b._data.dtype.kind == "f" and type(a) in (float, int):
        return a, b
    return promote(a, b, to_float=to_float)[1]


def add(a, b):
    """``a + b`` with broadcasting (dtype: :func:`~sandbox.ops._promote.result_type`)."""
    return Add.apply(*_binary_operands(a, b, "add"))


def sub(a, b):
    """``a - b`` with broadcasting."""
    return Sub.apply(*_binary_operands(a, b, "sub"))


def mul(a, b):
    """``a * b`` with broadcasting."""
    return Mul.apply(*_binary_operands(a, b, "mul"))


def div(a, b):
    """``a / b`` with broadcasting: true division, so integers give the default float."""
    return Div.apply(*_binary_operands(a, b, "div", to_float=True))


def neg(x):
    """``-x``."""
    return Neg.apply(x)


def pow(x, p):  # noqa: A001 - mirrors torch.pow
    """``x ** p``; ``p`` a number (constant exponent) or a Tensor."""
    x, p = _binary_operands(x, p, "pow")
    if isinstance(p, Tensor | np.ndarray) or not isinstance(x, Tensor):
        return PowT.apply(x, p)
    return Pow.apply(x, p)


def to_float(x):
    """``x`` as a Tensor of a float dtype: integer and bool tensors become the default
    float dtype (as torch's ``exp``, ``sqrt`` ... do with them)."""
    if not isinstance(x, Tensor):
        x = Tensor._make(np.asarray(x))
    return x if x.dtype.kind == "f" else astype(x, float_result(x.dtype))


def exp(x):
    """Elementwise ``e**x``."""
    return Exp.apply(to_float(x))


def log(x):
    """Elementwise natural logarithm."""
    return Log.apply(to_float(x))


def log1p(x):
    """Elementwise ``log(1 + x)``, accurate for small ``x``."""
    return Log1p.apply(to_float(x))


def sqrt(x):
    """Elementwise square root."""
    return Sqrt.apply(to_float(x))


def abs(x):  # noqa: A001 - mirrors torch.abs
    """Elementwise absolute value (gradient 0 at 0)."""
    return Abs.apply(x)


def clamp(x, min=None, max=None):  # noqa: A002 - torch's argument names
    """Limit ``x`` to ``[min, max]`` (either may be None)."""
    if min is None and max is None:
        raise ValueError("clamp: give at least one of min and max")
    return Clamp.apply(x, min, max)


def maximum(a, b):
    """Elementwise maximum (NaN propagates; ties split the gradient, as torch)."""
    return Extremum.apply(*_binary_operands(a, b, "maximum"), np.maximum)


def minimum(a, b):
    """Elementwise minimum (NaN propagates; ties split the gradient, as torch)."""
    return Extremum.apply(*_binary_operands(a, b, "minimum"), np.minimum)


def where(cond, a=None, b=None):
    """Elementwise ``a`` where ``cond`` else ``b``; ``cond`` is not differentiated.

    With ``cond`` alone, as ``torch.where(cond)``: the indices of its non-zero
    elements, one int64 tensor per dim (``nonzero(as_tuple=True)``).
    """
    cond = np.asarray(cond._data if isinstance(cond, Tensor) else cond)
    if a is None and b is None:
        return tuple(Tensor._make(i.astype(np.int64)) for i in np.nonzero(cond))
    if a is None or b is None:
        raise TypeError("where: give both a and b, or neither (where(cond) gives indices)")
    return Where.apply(cond.astype(bool, copy=False), *_binary_operands(a, b, "where"))


def astype(x, dtype):
    """Convert to ``dtype`` (differentiable between float dtypes)."""
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if x.requires_grad and dtype.kind == "f":
        return AsType.apply(x, dtype)
    return Tensor._make(x._data.astype(dtype))


def clone(x):
    """A copy of ``x`` that stays in the graph."""
    return Clone.apply(x)


def _comparison(ufunc):
    def compare(a, b):
        a, b = _binary_operands(a, b, ufunc.__name__)  # compared in the promoted dtype
        a = a._data if isinstance(a, Tensor) else a
        b = b._data if isinstance(b, Tensor) else b
        return Tensor._make(np.asarray(_binary(ufunc, ufunc.__name__, a, b)))

    compare.__name__ = ufunc.__name__
    compare.__doc__ = f"Elementwise ``{ufunc.__name__}`` as a bool tensor (not differentiable)."
    return compare


lt = _comparison(np.less)
le = _comparison(np.less_equal)
gt = _comparison(np.greater)
ge = _comparison(np.greater_equal)
eq = _comparison(np.equal)
ne = _comparison(np.not_equal)
logical_and = _comparison(np.logical_and)
logical_or = _comparison(np.logical_or)


def _predicate(ufunc, name):
    def test(x):
        return Tensor._make(np.asarray(ufunc(x._data if isinstance(x, Tensor) else np.asarray(x))))

    test.__name__ = name
    test.__doc__ = f"Elementwise ``{ufunc.__name__}`` as a bool tensor (not differentiable)."
    return test


isnan = _predicate(np.isnan, "isnan")
isinf = _predicate(np.isinf, "isinf")
isfinite = _predicate(np.isfinite, "isfinite")
