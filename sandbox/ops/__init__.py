"""Differentiable tensor operations, and the operators/methods of :class:`Tensor`.

The engine (:mod:`sandbox.autograd`) knows no op; this package defines them as
:class:`~sandbox.autograd.Function` subclasses (one module per family: ``_arith``,
``_nonlinear``, ``_reduce``, ``_shape``, ``_linalg``, ``_create``).  The Python
operators (``+ - * / ** @ [] < ...``) and methods (``x.sum()``, ``x.reshape()`` ...)
are written out in :class:`~sandbox.ops._methods.TensorMethods` and given to
``Tensor`` by :func:`~sandbox.ops._methods.install` when this package is imported.
"""

from __future__ import annotations

from ..array.arith import add as _threaded_add
from ..array.copy import copy as _threaded_copy
from ..autograd._engine import set_gradient_copy as _set_gradient_copy
from ..autograd._engine import set_gradient_sum as _set_gradient_sum
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
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from ._inplace import abs_
from ._intdiv import floor_divide, remainder, round
from ._linalg import einsum, matmul
from ._methods import install
from ._nonlinear import (
    erf,
    gelu,
    leaky_relu,
    log_softmax,
    logsumexp,
    relu,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from ._pad import pad
from ._promote import promote_types, result_type
from ._reduce import amax, amin, argmax, argmin, max, mean, min, norm, std, sum, var
from ._select import sort, topk, unique
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
from ._tile import chunk, flip, repeat, split, t

__all__ = [
    "abs", "add", "amax", "amin", "arange", "argmax", "argmin", "astype", "cat", "clamp",
    "as_tensor", "clone", "div", "empty", "empty_like", "eye", "from_numpy", "full_like",
    "linspace", "rand_like", "randint", "randn_like", "randperm", "isfinite", "isinf", "isnan",
    "tensor",
    "eq", "exp", "expand", "flatten", "full", "ge", "getitem", "gt", "le", "leaky_relu",
    "log", "log1p", "log_softmax", "logical_and", "logical_or", "logsumexp", "lt",
    "matmul", "max", "maximum", "mean", "min", "minimum", "mul", "ne", "neg", "ones",
    "ones_like", "pad",
    "permute", "pow", "rand", "randn", "relu", "reshape", "setitem", "sigmoid", "softmax",
    "softplus", "sqrt", "squeeze", "stack", "sub", "sum", "tanh", "transpose", "unsqueeze",
    "var", "where", "zeros", "zeros_like",
    "abs_", "chunk", "einsum", "erf", "flip", "floor_divide", "gelu", "norm", "promote_types",
    "remainder", "repeat", "result_type", "round", "silu", "sort", "split", "std", "t", "topk",
    "unique",
]  # fmt: skip


install()  # Tensor's operators and methods: see _methods.py
_set_gradient_sum(_threaded_add)  # the engine sums gradients on every thread
_set_gradient_copy(_threaded_copy)  # and copies a leaf's first one there
