"""The matrix products of the convolutions: the project's float32 GEMMs, or BLAS.

numpy's OpenBLAS chooses its kernels when it loads, and a machine may pin it to an
older core (``OPENBLAS_CORETYPE=Haswell`` on this project's Zen 5 machines: AVX2
kernels, half of what the FMA units can do).  ``pyx/sgemm_avx512.h`` is a float32
GEMM that uses 512-bit FMAs whenever the CPU has them (measured, 1 thread:
170-240 against OpenBLAS-Haswell's 110-130 GFLOP/s on the convolutions' shapes;
docs/convolution.md has the table, from ``benchmarks/bench_gemm.py``).  CPUs without
AVX-512 (the ``avx2`` path) run its AVX2 + FMA counterpart, ``pyx/sgemm_avx2.h``, same
interface and guarantees (measured here, 1 thread, against OpenBLAS-Haswell on the same
shapes: 0.7-1.0x of its speed; faster AVX2 BLAS builds exist, slower ones too: it makes
the products the project's own on any x86 CPU with AVX2).  Float64, the ``portable``
path and ``SANDBOX_GEMM=blas`` use numpy: the choice is
:func:`sandbox.runtime.simd.current`, read at every call (``simd.using(...)`` changes it
for a block).

Both paths compute each product in an order fixed by the shapes, so the
convolutions stay bitwise reproducible for any thread count.
"""

from __future__ import annotations

import numpy as np

from .._C import _gemm
from ..runtime import simd

__all__ = ["backend", "grouped_matmul", "lhs", "matmul", "product_form"]


#: the project's kernels by ``Selection.gemm``: the packed form and the dot form
_KERNELS = {"avx512": (_gemm.matmul, _gemm.matmul_dot),
            "avx2": (_gemm.matmul_avx2, _gemm.matmul_dot_avx2)}


#: ``blas_below`` for a caller whose left operand is not in :func:`lhs`'s layout: the
#: packed kernel would copy all of the (m x k) operand for n columns of work.  Measured
#: (AMD EPYC family 25 model 17, Zen 4; 1 thread: a product is one thread's at any count;
#: us, :func:`matmul` of a C-contiguous A against ``np.matmul`` on OpenBLAS-SkylakeX, a
#: throwaway script): 256x2304x16 1084 vs 240, 256x2304x64 1449 vs 834, 128x1152x64 356 vs
#: 213, 256x2304x128 2341 vs 1767 (and 237 vs 412 at 16x144x4096).
NARROW_COLUMNS = 128


def backend() -> str:
    """``"avx512"`` or ``"avx2"`` when float32 products use one of the project's kernels,
    else ``"blas"`` (the SIMD selection in force: :func:`sandbox.runtime.simd.current`)."""
    return simd.current().gemm


def lhs(a: np.ndarray) -> np.ndarray:
    """``a`` (…, M, K) as the left operand of several products: with the AVX-512
    kernel, a view of a transposed copy, whose rows are adjacent in memory, so the
    kernel reads it in place instead of packing it for every product (measured, 1
    thread: 162-203 -> 225-251 GFLOP/s on the convolutions' shapes, ``benchmarks/
    bench_gemm.py``).  Else ``a`` (the AVX2 kernel's 4-row panels gained nothing
    measurable from it: within 3 % either way on the same shapes)."""
    if (simd.current().gemm != "avx512" or a.dtype != np.float32 or a.ndim < 2
            or a.strides[-2] == a.itemsize):
        return a
    a3 = np.ascontiguousarray(a.reshape(-1, *a.shape[-2:]))
    out = np.empty((a3.shape[0], a3.shape[2], a3.shape[1]), dtype=a.dtype)
    _gemm.transpose(a3, out)
    return out.reshape(*a.shape[:-2], a.shape[-1], a.shape[-2]).swapaxes(-1, -2)


_FLOAT32 = np.dtype(np.float32)


def _fits(*arrays) -> bool:
    """The kernel takes float32 operands whose strides are whole elements, an output
    with unit column stride, and sizes that fit a C int.  (Called for every product:
    the strides' low bits are OR-ed rather than tested one by one, 2.6 against 5.9 µs
    for three 3-D operands.)"""
    for arr in arrays:
        if arr.dtype != _FLOAT32:
            return False
        bits = 0
        for stride in arr.strides:
            bits |= stride  # a stride not a multiple of 4 bytes leaves a low bit set
        if bits & 3 or (arr.shape and max(arr.shape) >= 2**31):
            return False
    last = arrays[-1]
    return last.strides[-1] == 4 or last.shape[-1] <= 1


def product_form(m: int, n: int, k: int, unit_k: bool) -> str:
    """Which of the project's kernels computes an (m x k) @ (k x n) product: ``"dot"``
    (the dot-product form), ``"packed"`` or ``"blas"`` (numpy); ``unit_k``: both
    operands contiguous along k.  A rule of the shapes, so a product's bits do not
    depend on how its caller cut the work."""
    small, large = min(m, n), max(m, n)
    if k >= 2 * small and unit_k and not (small >= 64 and large >= 3 * small):
        # long K, contiguous on both sides (weight gradients): dot products, no
        # packing.  Measured (1 thread, GFLOP/s dot vs packed): 147 vs 36 at
        # 16x16, K=256; 133 vs 77 at 32x32, K=128; 136 vs 115 at 64x64, K=128;
        # but 117 vs 150 at 64x192, K=128, and slower wherever K is short.  The
        # AVX2 kernel's (same rule): 58 vs 29, 69 vs 45, 91 vs 78, and 97 vs 99.
        return "dot"
    # fewer than 8 rows or a depth under 8 fill too little of a 12x32 or 8x32
    # register tile: BLAS is faster there (measured: 2x16x4096 40 vs 24 GFLOP/s,
    # 32x4x1024 53 vs 39).  The same rule for the AVX2 kernel's 4x24 tile (26 vs
    # 12 at 2x16x4096, 50 vs 37 at 32x4x1024; against OpenBLAS-Haswell, which also
    # wins just above: 63 vs 41 at 8x16x4096, 71 vs 38 at 32x8x1024).
    return "packed" if m >= 8 and k >= 8 else "blas"


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool = False,
           num_threads: int = 1, blas_below: int = 0) -> bool:
    """``out = a @ b`` (or ``out += a @ b``) for 2-D or equally batched 3-D operands.

    ``a`` and ``b`` may be transposed views; ``out`` is written in place.  Float32
    runs the project's kernel that the selection names (AVX-512 or AVX2), everything
    else ``np.matmul``.
    ``num_threads`` shares a batch's products among threads inside the kernel (each
    product on one thread, so the result is the same for any count); it returns
    False where the products are not this kernel's (the caller parallelises them
    its own way), True otherwise.  Products of fewer than ``blas_below`` columns that
    would take the packed form take BLAS (see :data:`NARROW_COLUMNS`).
    """
    kernels = _KERNELS.get(simd.current().gemm)
    if kernels is not None and _fits(a, b, out):
        packed, dot = kernels
        if a.ndim == 2:
            a, b, out = a[None], b[None], out[None]
        m, k = a.shape[1:]
        n = b.shape[2]
        form = product_form(m, n, k, a.strides[2] == 4 and b.strides[1] == 4)
        if form == "packed" and n < blas_below:
            form = "blas"
        if form == "dot":
            dot(a, b.transpose(0, 2, 1), out, accumulate, num_threads)
            return True
        if form == "packed":
            try:
                packed(a, b, out, accumulate, num_threads)
                return True
            except MemoryError:  # a thread had no packing buffers: recompute another way
                if accumulate:
                    raise  # some products are already added into out: no second pass
    if num_threads > 1:
        return False
    if accumulate:
        out += np.matmul(a, b)
    else:
        np.matmul(a, b, out=out)
    return True


def grouped_matmul(a, b, out, groups: int, trans_a: bool = False, trans_b: bool = False,
                   blas_below: int = 0) -> None:
    """``out[g] = op(a[g]) @ op(b[g])`` for the ``groups`` row blocks of ``a``, ``b``, ``out``
    (``op`` transposes when ``trans_a`` / ``trans_b``; ``blas_below`` as for
    :func:`matmul`)."""
    ra, rb, ro = a.shape[0] // groups, b.shape[0] // groups, out.shape[0] // groups
    if groups > 1 and a.flags.c_contiguous and b.flags.c_contiguous and out.flags.c_contiguous:
        # one batched call (each group's product as the loop below makes it): a depthwise
        # convolution's 32 groups had cost 32 calls of 20 us of Python a chunk and pass
        # (its forward and input gradient at 2 threads 15.4 -> 5.6 ms, (8, 32, 32, 32), AMD
        # EPYC family 25 model 1 VM, bench_ops_vs_torch.py --ops depthwise_conv --shape 8
        # 32 32 32 at cc55f29; the stencil kernel takes depthwise convolutions since)
        a3, b3 = a.reshape(groups, ra, -1), b.reshape(groups, rb, -1)
        matmul(a3.transpose(0, 2, 1) if trans_a else a3, b3.transpose(0, 2, 1) if trans_b else b3,
               out.reshape(groups, ro, -1), blas_below=blas_below)
        return
    for g in range(groups):
        ag = a[g * ra:(g + 1) * ra]
        bg = b[g * rb:(g + 1) * rb]
        matmul(ag.T if trans_a else ag, bg.T if trans_b else bg, out[g * ro:(g + 1) * ro],
               blas_below=blas_below)
