"""Array-level operations: plain numpy arrays in and out, no autograd.

This is the layer between the Cython kernels (``sandbox._C``, which never
validate) and the differentiable ops (:mod:`sandbox.functional`, which wrap these
functions in :class:`~sandbox.autograd.Function` s).  Each public function checks
its arguments once, in Python, and raises ``ValueError``/``TypeError`` naming the
argument and the valid choices; then it calls kernels that trust their input.
Nothing here imports :class:`~sandbox.autograd.Tensor`.

Modules, one job each:

``resample``
    :func:`resize` / :func:`resize_adjoint` for every interpolation mode, in
    1-D, 2-D and 3-D (public API also at :mod:`sandbox.resample`).
``grid_sample``
    Sampling at arbitrary locations (:func:`grid_sample`) and its gradients to the
    input and the grid (:func:`grid_sample_backward`), 2-D and 3-D, every mode.
``conv``
    2-D and 3-D convolution and transposed convolution, forward and backward,
    dispatching on ``ndim`` (validation, the im2col/vol2col + GEMM paths, the
    Winograd paths, tuning knobs).
``pool``
    2-D and 3-D max and average pooling, forward and backward.
``norm``
    Batch and group normalisation, forward and backward (and batch norm + ReLU fused).
``optim``
    Optimiser updates in one kernel pass (Adam / AdamW).
``copy``, ``arith``
    Concatenation, contiguous copies and sums on every thread (numpy's run on one).
``_parallel``
    The worker pool that runs fixed chunks of GEMM-heavy work; per-thread scratch.
``_validate``
    Argument checks shared by the modules above.

Every function is deterministic: bitwise identical results for any thread count
(``docs/design.md``, "Determinism").
"""

from .conv import (
    conv2d,
    conv2d_backward,
    conv2d_output_size,
    conv3d,
    conv3d_backward,
    conv3d_output_size,
    conv_transpose2d,
    conv_transpose2d_backward,
    conv_transpose2d_output_size,
    conv_transpose3d,
    conv_transpose3d_backward,
    conv_transpose3d_output_size,
)
from .norm import (
    batch_norm,
    batch_norm_backward,
    batch_norm_relu,
    batch_norm_relu_backward,
    group_norm,
    group_norm_backward,
)
from .pool import (
    avg_pool2d,
    avg_pool2d_backward,
    avg_pool3d,
    avg_pool3d_backward,
    max_pool2d,
    max_pool2d_backward,
    max_pool3d,
    max_pool3d_backward,
    pool_output_size,
)
from .resample import output_size, resize, resize_adjoint, weight_matrix, weight_table

__all__ = [
    "avg_pool2d", "avg_pool2d_backward", "avg_pool3d", "avg_pool3d_backward", "batch_norm",
    "batch_norm_backward", "batch_norm_relu", "batch_norm_relu_backward", "conv2d",
    "conv2d_backward", "conv2d_output_size", "conv3d", "conv3d_backward", "conv3d_output_size",
    "conv_transpose2d", "conv_transpose2d_backward", "conv_transpose2d_output_size",
    "conv_transpose3d", "conv_transpose3d_backward", "conv_transpose3d_output_size",
    "group_norm", "group_norm_backward", "max_pool2d", "max_pool2d_backward", "max_pool3d",
    "max_pool3d_backward", "output_size", "pool_output_size", "resize", "resize_adjoint",
    "weight_matrix", "weight_table",
]  # fmt: skip
