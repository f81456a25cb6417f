"""A Cython-accelerated CPU training sandbox.

Resampling kernels with forward and backward for every mode, a small reverse-mode
autodiff engine, a layer library with a UNet, optimisers, a trainer and benchmarks.
"""

import os as _os

# OpenMP threads that spin after a parallel loop steal the cores that BLAS (and, on a
# shared machine, other processes) need next: measured here, a 1 ms resize took 36 ms
# on a loaded 2-core machine with the default spin-wait and 1 ms with passive waiting.
# libgomp reads this when our first kernel module loads, so it is set before that.
# An explicit user setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import _dtypes, ops
from ._config import get_num_threads, num_threads, set_num_threads
from ._device import channels_last, contiguous_format, cuda, device, preserve_format
from ._dtypes import (  # torch's dtype names (numpy types): sandbox.float32, sandbox.long ...
    double,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from ._info import info
from ._random import Generator, get_rng_state, manual_seed, set_rng_state
from ._serialize import load, save
from ._version import __version__
from .amp import autocast
from .autograd import (
    Tensor,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops import (
    abs_,
    amax,
    amin,
    arange,
    argmax,
    argmin,
    as_tensor,
    cat,
    chunk,
    clamp,
    clone,
    einsum,
    empty,
    empty_like,
    erf,
    exp,
    eye,
    flatten,
    flip,
    floor_divide,
    from_numpy,
    full,
    full_like,
    isfinite,
    isinf,
    isnan,
    linspace,
    log,
    log_softmax,
    logsumexp,
    matmul,
    maximum,
    mean,
    minimum,
    norm,
    ones,
    ones_like,
    permute,
    promote_types,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    relu,
    remainder,
    repeat,
    reshape,
    result_type,
    round,
    sigmoid,
    softmax,
    sort,
    split,
    sqrt,
    squeeze,
    stack,
    std,
    t,
    tanh,
    tensor,
    topk,
    unique,
    unsqueeze,
    where,
    zeros,
    zeros_like,
)

clip = clamp

__all__ = ["__version__", "get_num_threads", "get_rng_state", "info", "manual_seed",
           "memory_limit", "num_threads", "set_memory_limit", "set_num_threads",
           "set_rng_state"]
__all__ += [
    "Generator", "Tensor", "amax", "amin", "autocast", "channels_last", "contiguous_format",
    "get_default_dtype", "preserve_format", "set_default_dtype", "arange", "argmax", "argmin",
    "as_tensor",
    "cat", "clamp", "clip", "clone", "cuda", "device", "empty", "empty_like", "enable_grad",
    "exp", "eye", "flatten", "full_like", "linspace", "rand_like", "randint", "randn_like",
    "randperm",
    "from_numpy", "full", "inference_mode", "is_grad_enabled", "isfinite", "isinf", "isnan",
    "load", "log", "log_softmax", "logsumexp", "matmul", "maximum", "mean",
    "minimum", "no_grad", "ones", "ones_like", "permute", "rand", "randn", "relu", "reshape",
    "save", "set_grad_enabled", "sigmoid", "softmax", "sqrt", "squeeze", "stack",
    "tanh", "tensor", "unsqueeze", "where", "zeros", "zeros_like",
    "abs_", "chunk", "einsum", "erf", "flip", "floor_divide", "norm", "promote_types",
    "remainder", "repeat", "result_type", "round", "sort", "split", "std", "t", "topk",
    "unique",
]  # fmt: skip
__all__ += [
    "double", "float16", "float32", "float64", "half", "int8", "int16", "int32", "int64", "long",
    "short", "uint8",
]  # fmt: skip


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a sandbox :class:`Tensor`."""
    return isinstance(obj, Tensor)


def numel(x) -> int:
    """Number of elements of ``x``."""
    return x.numel()


# Names that shadow Python builtins: attributes (sandbox.max, sandbox.float ...) but left
# out of __all__, so ``from sandbox import *`` does not replace max/min/sum/abs/float/int/bool.
abs, max, min, sum = ops.abs, ops.max, ops.min, ops.sum  # noqa: A001
bool, float, int = _dtypes.bool, _dtypes.float, _dtypes.int  # noqa: A001


_SUBMODULES = ("amp", "checkpoint", "data", "functional", "gradcheck", "metrics", "nn", "optim",
               "resample", "train", "utils")


_LAZY_FUNCTIONS = {"memory_limit": "array.resample._limits",
                   "set_memory_limit": "array.resample._limits"}


def __getattr__(name):
    # ``sandbox.nn`` etc. without importing every submodule at ``import sandbox``.
    if name in _SUBMODULES or name in _LAZY_FUNCTIONS:
        import importlib

        if name in _LAZY_FUNCTIONS:
            return getattr(importlib.import_module(f"{__name__}.{_LAZY_FUNCTIONS[name]}"), name)
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
