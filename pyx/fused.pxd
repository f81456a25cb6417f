# Shared declarations for the sandbox kernels.
#
# Kernel contract (every pyx/*.pyx follows it):
#   * inputs are C-contiguous typed memoryviews (``const`` when read-only);
#     the Python wrapper calls np.ascontiguousarray and allocates outputs;
#   * no validation here: the wrappers in sandbox/ check shapes and options;
#   * hot loops run ``nogil`` under ``prange(schedule="static", num_threads=n)``
#     with n >= 1 computed in Python (sandbox.runtime.threads.get_num_threads);
#   * every parallel loop writes only memory its iteration owns: results are
#     bitwise identical for any thread count.

ctypedef fused real:
    float
    double
