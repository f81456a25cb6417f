"""The runtime: process-wide settings every layer above may read.

One module per knob, each read once from the environment and changed through a
function or a context manager: threads (:mod:`.threads`), the SIMD path of the
kernels (:mod:`.simd`), the memory limit
(:mod:`.memory`), allocator tuning (:mod:`.allocator`), the global random state
(:mod:`.rng`), dtypes (:mod:`.dtypes`), the CPU device (:mod:`.device`), optional
imports (:mod:`.optional`) and the disabled mixed-precision entry points
(:mod:`.amp`).  Nothing here imports the rest of the package.
"""
