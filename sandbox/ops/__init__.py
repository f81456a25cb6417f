"""Differentiable tensor operations, and the operators/methods of :class:`Tensor`.

The engine (:mod:`sandbox.autograd`) knows no op; this package defines them as
:class:`~sandbox.autograd.Function` subclasses and attaches the Python operators
(``+ - * / ** @ [] < ...``) and methods (``x.sum()``, ``x.reshape()`` ...) to
``Tensor`` in :func:`_install` below, so the whole method table is in one place.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ._arith import (
    abs,
    add,
    astype,
    clamp,
    clone,
    div,
    eq,
    exp,
    ge,
    gt,
    isfinite,
    isinf,
    isnan,
    le,
    log,
    log1p,
    logical_and,
    logical_or,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    sqrt,
    sub,
    where,
)
from ._create import (
    arange,
    as_tensor,
    from_numpy,
    full,
    ones,
    ones_like,
    rand,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from ._linalg import matmul
from ._nonlinear import (
    leaky_relu,
    log_softmax,
    logsumexp,
    relu,
    sigmoid,
    softmax,
    softplus,
    tanh,
)
from ._pad import pad
from ._reduce import amax, amin, argmax, argmin, max, mean, min, sum, var
from ._shape import (
    cat,
    expand,
    flatten,
    getitem,
    permute,
    reshape,
    setitem,
    squeeze,
    stack,
    transpose,
    unsqueeze,
)

__all__ = [
    "abs", "add", "amax", "amin", "arange", "argmax", "argmin", "astype", "cat", "clamp",
    "as_tensor", "clone", "div", "from_numpy", "isfinite", "isinf", "isnan", "tensor",
    "eq", "exp", "expand", "flatten", "full", "ge", "getitem", "gt", "le", "leaky_relu",
    "log", "log1p", "log_softmax", "logical_and", "logical_or", "logsumexp", "lt",
    "matmul", "max", "maximum", "mean", "min", "minimum", "mul", "ne", "neg", "ones",
    "ones_like", "pad",
    "permute", "pow", "rand", "randn", "relu", "reshape", "setitem", "sigmoid", "softmax",
    "softplus", "sqrt", "squeeze", "stack", "sub", "sum", "tanh", "transpose", "unsqueeze",
    "var", "where", "zeros", "zeros_like",
]  # fmt: skip


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _zero_(self):
    """Fill with zeros in place (for tensors outside the graph, e.g. ``.grad``)."""
    if self.grad_fn is not None:
        raise RuntimeError("zero_() on a tensor inside the graph is not supported")
    self._data[...] = 0
    return self


def _install():
    methods = {
        # operators
        "__add__": add, "__radd__": _reflected(add),
        "__sub__": sub, "__rsub__": _reflected(sub),
        "__mul__": mul, "__rmul__": _reflected(mul),
        "__truediv__": div, "__rtruediv__": _reflected(div),
        "__pow__": pow, "__rpow__": _reflected(pow),
        "__matmul__": matmul, "__rmatmul__": _reflected(matmul),
        "__neg__": neg, "__pos__": lambda self: self, "__abs__": abs,
        "__getitem__": getitem, "__setitem__": setitem,
        "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge, "__eq__": eq, "__ne__": ne,
        "__and__": logical_and, "__or__": logical_or,
        "__invert__": lambda self: Tensor._make(np.logical_not(self._data)),
        # math
        "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "matmul": matmul,
        "exp": exp, "log": log, "log1p": log1p, "sqrt": sqrt, "abs": abs, "clamp": clamp,
        "relu": relu, "leaky_relu": leaky_relu, "sigmoid": sigmoid, "tanh": tanh,
        "softplus": softplus, "softmax": softmax, "log_softmax": log_softmax,
        "logsumexp": logsumexp,
        # reductions
        "sum": sum, "mean": mean, "max": max, "min": min, "var": var,
        "amax": amax, "amin": amin, "maximum": maximum, "minimum": minimum,
        "argmax": argmax, "argmin": argmin,
        # shapes
        "reshape": reshape, "view": reshape, "flatten": flatten, "permute": permute,
        "transpose": transpose, "squeeze": squeeze, "unsqueeze": unsqueeze,
        "expand": expand, "broadcast_to": expand,
        # dtypes and copies
        "astype": astype, "float": lambda self: astype(self, np.float32),
        "double": lambda self: astype(self, np.float64),
        "long": lambda self: astype(self, np.int64),
        "clone": clone, "zero_": _zero_,
        "contiguous": lambda self: self if self._data.flags.c_contiguous else clone(self),
    }  # fmt: skip
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    Tensor.T = property(lambda self: permute(self, *reversed(range(self.ndim))))
    Tensor.mT = property(lambda self: transpose(self, -2, -1))


_install()
