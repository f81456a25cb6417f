"""A Cython-accelerated CPU training sandbox.

Resampling kernels with forward and backward for every mode, a small reverse-mode
autodiff engine, a layer library with a UNet, optimisers, a trainer and benchmarks.
"""

from ._config import get_num_threads, num_threads, set_num_threads
from ._info import info
from ._version import __version__

__all__ = ["__version__", "get_num_threads", "info", "num_threads", "set_num_threads"]
