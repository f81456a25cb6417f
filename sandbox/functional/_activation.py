"""Activations and (log-)softmax (Functions in :mod:`sandbox.ops`), with torch's signatures.

``inplace=True`` (``relu``, ``leaky_relu``, ``hardtanh``-style flags in PyTorch)
gives the same values as PyTorch.  When the input is not part of the autograd
graph (it does not require grad) the result is written into the input and the
input is returned, as PyTorch does; when it is, a new tensor is returned and the
input is left unchanged (the sandbox does not rewrite graph nodes in place).
"""

from __future__ import annotations

import numpy as np

from ..ops import gelu as _gelu
from ..ops import leaky_relu as _leaky_relu
from ..ops import log_softmax as _log_softmax
from ..ops import logsumexp, pad, sigmoid, softplus, tanh
from ..ops import relu as _relu
from ..ops import silu as _silu
from ..ops import softmax as _softmax

__all__ = [
    "gelu",
    "leaky_relu",
    "log_softmax",
    "logsumexp",
    "pad",
    "relu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]


def _inplace(x, y):
    """Write ``y`` into ``x`` when ``x`` is outside the graph, else return ``y``."""
    if x.requires_grad or y.requires_grad or y.dtype != x.dtype:
        return y
    np.copyto(x._data, y._data)
    return x


def relu(input, inplace=False):  # noqa: A002 - torch's argument name
    """``max(x, 0)``, as ``torch.nn.functional.relu`` (``inplace``: see the module notes)."""
    y = _relu(input)
    return _inplace(input, y) if inplace else y


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """``x`` for ``x > 0``, else ``negative_slope * x`` (``inplace``: see the module notes)."""
    y = _leaky_relu(input, negative_slope)
    return _inplace(input, y) if inplace else y


def gelu(input, approximate="none"):  # noqa: A002 - torch's argument name
    """GELU ``x * Phi(x)``, as ``torch.nn.functional.gelu``; ``approximate="tanh"`` uses
    the tanh form (see :func:`sandbox.ops.gelu`)."""
    return _gelu(input, approximate)


def silu(input, inplace=False):  # noqa: A002 - torch's argument name
    """SiLU ``x * sigmoid(x)``, as ``torch.nn.functional.silu`` (``inplace``: module notes)."""
    y = _silu(input)
    return _inplace(input, y) if inplace else y


def _softmax_dim(input, dim, dtype, op):
    if dim is None:
        raise TypeError(f"{op}: give dim= (the class axis; PyTorch's implicit dim is deprecated)")
    return input if dtype is None else input.astype(dtype)


def softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """``exp(x) / sum(exp(x))`` along ``dim``, as ``torch.nn.functional.softmax``."""
    return _softmax(_softmax_dim(input, dim, dtype, "softmax"), dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):  # noqa: A002
    """``x - logsumexp(x)`` along ``dim``, as ``torch.nn.functional.log_softmax``."""
    return _log_softmax(_softmax_dim(input, dim, dtype, "log_softmax"), dim)
