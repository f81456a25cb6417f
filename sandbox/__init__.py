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

from ._config import get_num_threads, num_threads, set_num_threads
from ._info import info
from ._random import get_rng_state, manual_seed, set_rng_state
from ._version import __version__
from .autograd import Tensor, enable_grad, is_grad_enabled, no_grad, set_grad_enabled, tensor
from .ops import (
    arange,
    argmax,
    cat,
    full,
    ones,
    ones_like,
    rand,
    randn,
    stack,
    where,
    zeros,
    zeros_like,
)

__all__ = ["__version__", "get_num_threads", "get_rng_state", "info", "manual_seed",
           "memory_limit", "num_threads", "set_memory_limit", "set_num_threads",
           "set_rng_state"]
__all__ += [
    "Tensor", "arange", "argmax", "cat", "enable_grad", "full", "is_grad_enabled", "no_grad",
    "ones", "ones_like", "rand", "randn", "set_grad_enabled", "stack", "tensor", "where",
    "zeros", "zeros_like",
]  # fmt: skip


_SUBMODULES = ("checkpoint", "data", "functional", "gradcheck", "metrics", "nn", "optim",
               "resample", "train")


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
