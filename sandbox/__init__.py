"""A Cython-accelerated CPU training sandbox.

Resampling kernels with forward and backward for every mode, a small reverse-mode
autodiff engine, a layer library with a UNet, optimisers, a trainer and benchmarks.
"""

import importlib
import importlib.abc
import importlib.util
import os as _os
import sys

# How OpenMP threads wait between parallel loops (libgomp reads these when our first
# kernel module loads, so they are set before that; an explicit user setting of either
# wins).  Spinning long steals the cores other work needs: with libgomp's default
# (300,000 spins) a 1 ms resize took 36 ms on a loaded 2-core machine.  Not spinning
# at all makes every loop wake its threads through the kernel, tens of microseconds
# each, and a training step runs hundreds of loops: a user-written classic UNet step
# (batch 8, 64^2, 2 threads, AMD EPYC family 26) took 84.6 ms with no spinning and
# 41.3 ms with 10,000 spins, 65-68 ms on 1 thread (`GOMP_SPINCOUNT=0 sandbox bench
# --filter unet-user/bilinear/64 --threads 1,2 --no-torch`, and without the variable).
# So: passive waiting after a short spin.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    _os.environ["GOMP_SPINCOUNT"] = "10000"

# The package's Python modules run compiled where the build compiled them and their
# source is unchanged: importing runtime.compiled installs its import hook, before any of
# them (runtime/__init__ imports nothing).
from .runtime import compiled as _compiled  # noqa: F401

# isort: split
from . import ops
from ._version import __version__
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
from .runtime import dtypes as _dtypes
from .runtime.allocator import keep_freed_memory as _keep_freed_memory
from .runtime.amp import autocast
from .runtime.device import channels_last, contiguous_format, cuda, device, preserve_format
from .runtime.dtypes import (  # torch's dtype names (numpy types): sandbox.float32, sandbox.long
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
from .runtime.rng import Generator, get_rng_state, manual_seed, set_rng_state
from .runtime.threads import get_num_threads, num_threads, set_num_threads
from .train.serialize import load, save

# Freed arrays stay mapped for the next one (glibc; SANDBOX_TUNE_MALLOC=0 opts out): a
# training step otherwise pays its page faults again on every temporary (runtime/allocator).
_keep_freed_memory()

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


_SUBMODULES = ("autograd", "array", "bench", "cli", "data", "functional", "interop", "nn", "ops",
               "optim", "runtime", "train", "utils")

# Public short names of modules whose home is a layer's package: ``import sandbox.checkpoint``
# and ``sandbox.resample.resize`` keep working without a file of their own (see _AliasFinder).
_ALIASES = {"amp": "runtime.amp", "checkpoint": "train.checkpoint",
            "explain": "cli.explain", "gradcheck": "autograd.gradcheck",
            "metrics": "train.metrics", "resample": "array.resample", "viz": "cli.viz"}

_LAZY_FUNCTIONS = {"info": "cli.info", "memory_limit": "runtime.memory",
                   "set_memory_limit": "runtime.memory"}


class _AliasLoader(importlib.abc.Loader):
    """Loads ``sandbox.<alias>`` as the module it names (the same object, not a copy)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # Executed by its own import already; the import system has just given it the
        # alias's spec, so give it back its own (``__name__`` is left as it was).
        module.__spec__ = self.own_spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        prefix, _, short = fullname.partition(".")
        if prefix != __name__ or short not in _ALIASES:
            return None
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(f"{__name__}.{_ALIASES[short]}"))


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.append(_AliasFinder())


def __getattr__(name):
    # ``sandbox.nn`` etc. without importing every submodule at ``import sandbox``.
    if name in _SUBMODULES or name in _ALIASES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_FUNCTIONS:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_FUNCTIONS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
