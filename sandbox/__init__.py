"""A Cython-accelerated CPU training sandbox.

Resampling kernels with forward and backward for every mode, a small reverse-mode
autodiff engine, a layer library with a UNet, optimisers, a trainer and benchmarks.
"""

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
           "num_threads", "set_num_threads", "set_rng_state"]
__all__ += [
    "Tensor", "arange", "argmax", "cat", "enable_grad", "full", "is_grad_enabled", "no_grad",
    "ones", "ones_like", "rand", "randn", "set_grad_enabled", "stack", "tensor", "where",
    "zeros", "zeros_like",
]  # fmt: skip
