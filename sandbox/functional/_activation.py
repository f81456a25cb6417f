"""Activations and (log-)softmax (Functions in :mod:`sandbox.ops`), with torch's signatures.

``inplace=True`` (``relu``, ``leaky_relu``, ``silu``) behaves as in PyTorch: the
result is written into the input, which is returned (the in-place rules of
:mod:`sandbox.ops._inplace`: recorded in the graph for a non-leaf, an error for a
leaf that requires grad while recording).
"""

from __future__ import annotations

from ..ops import _inplace as _ops_inplace
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


def relu(input, inplace=False):  # noqa: A002 - torch's argument name
    """``max(x, 0)``, as ``torch.nn.functional.relu`` (``inplace``: see the module notes)."""
    return _ops_inplace.relu_(input) if inplace else _relu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    """``x`` for ``x > 0``, else ``negative_slope * x`` (``inplace``: see the module notes)."""
    if inplace:
        return _ops_inplace.leaky_relu_(input, negative_slope)
    return _leaky_relu(input, negative_slope)


def gelu(input, approximate="none"):  # noqa: A002 - torch's argument name
    """GELU ``x * Phi(x)``, as ``torch.nn.functional.gelu``; ``approximate="tanh"`` uses
    the tanh form (see :func:`sandbox.ops.gelu`)."""
    return _gelu(input, approximate)


def silu(input, inplace=False):  # noqa: A002 - torch's argument name
    """SiLU ``x * sigmoid(x)``, as ``torch.nn.functional.silu`` (``inplace``: module notes)."""
    return _ops_inplace.silu_(input) if inplace else _silu(input)


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
