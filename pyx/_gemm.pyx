# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Float32 GEMMs with the AVX-512 micro-kernel of sgemm_avx512.h and the AVX2 + FMA one of
# sgemm_avx2.h (see there for why and how).  A batch of products may run on several
# threads (``num_threads``): each product is one thread's, computed exactly as on one
# thread, so the result does not depend on the thread count.  Kernel contract as in
# pyx/fused.pxd, except that the operands may be strided views (transposes are free: the
# packing reads any strides); the output needs a unit column stride.  The wrapper
# sandbox/array/_gemm.py checks dtypes and shapes and falls back to numpy's BLAS where
# these kernels cannot run.

from cython.parallel cimport prange

from fused cimport real


cdef extern from "sgemm_avx512.h" nogil:
    int sb_sgemm_avx512_available()
    int sb_sgemm_avx512(int m, int n, int k, const float *a, Py_ssize_t sa0, Py_ssize_t sa1,
                        const float *b, Py_ssize_t sb0, Py_ssize_t sb1, float *c,
                        Py_ssize_t sc0, int accumulate)
    void sb_sgemm_dot_avx512(int m, int n, int k, const float *a, Py_ssize_t lda,
                             const float *bt, Py_ssize_t ldb, float *c, Py_ssize_t ldc,
                             int accumulate)


cdef extern from "sgemm_avx2.h" nogil:
    int sb_sgemm_avx2_available()
    int sb_sgemm_avx2(int m, int n, int k, const float *a, Py_ssize_t sa0, Py_ssize_t sa1,
                      const float *b, Py_ssize_t sb0, Py_ssize_t sb1, float *c,
                      Py_ssize_t sc0, int accumulate)
    void sb_sgemm_dot_avx2(int m, int n, int k, const float *a, Py_ssize_t lda,
                           const float *bt, Py_ssize_t ldb, float *c, Py_ssize_t ldc,
                           int accumulate)


def available():
    """True when this CPU can run the AVX-512 kernel."""
    return bool(sb_sgemm_avx512_available())


def avx2_available():
    """True when this CPU can run the AVX2 kernel (AVX2 and FMA)."""
    return bool(sb_sgemm_avx2_available())


cdef int _products(bint avx2, const float[:, :, :] a, const float[:, :, :] b,
                   float[:, :, :] out, bint accumulate, int num_threads) except -1:
    """``out[p] = a[p] @ b[p]`` (or ``+=``) on the AVX2 or the AVX-512 kernel, the
    products shared among ``num_threads`` threads; raises MemoryError when a thread's
    packing buffers could not be allocated.  Arguments: ``a``, ``b`` (IN), ``out``
    (OUT; IN/OUT with ``accumulate``)."""
    cdef Py_ssize_t p, count = a.shape[0]
    cdef int m = <int> a.shape[1], k = <int> a.shape[2], n = <int> b.shape[2]
    cdef Py_ssize_t sa0 = a.strides[1] // 4, sa1 = a.strides[2] // 4
    cdef Py_ssize_t sb0 = b.strides[1] // 4, sb1 = b.strides[2] // 4
    cdef Py_ssize_t sc0 = out.strides[1] // 4
    cdef int failures = 0
    if count == 0 or m == 0 or n == 0:
        return 0
    for p in prange(count, nogil=True, schedule="static", num_threads=num_threads):
        if avx2:
            failures += sb_sgemm_avx2(m, n, k, &a[p, 0, 0] if k > 0 else NULL, sa0, sa1,
                                      &b[p, 0, 0] if k > 0 else NULL, sb0, sb1,
                                      &out[p, 0, 0], sc0, accumulate) != 0
        else:
            failures += sb_sgemm_avx512(m, n, k, &a[p, 0, 0] if k > 0 else NULL, sa0, sa1,
                                        &b[p, 0, 0] if k > 0 else NULL, sb0, sb1,
                                        &out[p, 0, 0], sc0, accumulate) != 0
    if failures:
        raise MemoryError("matmul: a thread could not allocate its packing buffers")
    return 0


def matmul(const float[:, :, :] a,   # IN  (P, M, K), any strides
           const float[:, :, :] b,   # IN  (P, K, N), any strides
           float[:, :, :] out,       # OUT (P, M, N), out.strides[2] == 4 (IN/OUT: accumulate)
           bint accumulate=False, int num_threads=1):
    """``out[p] = a[p] @ b[p]`` (or ``+=`` with ``accumulate``) for every p on the AVX-512
    kernel, the products shared among ``num_threads`` threads (each product on one thread).

    Raises MemoryError when a thread's packing buffers could not be allocated (then
    some products may be missing: the caller recomputes ``out`` another way).
    """
    _products(False, a, b, out, accumulate, num_threads)


def matmul_avx2(const float[:, :, :] a,   # IN  (P, M, K), any strides
                const float[:, :, :] b,   # IN  (P, K, N), any strides
                float[:, :, :] out,       # OUT (P, M, N), out.strides[2] == 4 (IN/OUT: accumulate)
                bint accumulate=False, int num_threads=1):
    """:func:`matmul` on the AVX2 + FMA kernel (for CPUs without AVX-512): same contract,
    same MemoryError."""
    _products(True, a, b, out, accumulate, num_threads)


cdef void _dots(bint avx2, const float[:, :, :] a, const float[:, :, :] bt,
                float[:, :, :] out, bint accumulate, int num_threads) noexcept:
    """``out[p] = a[p] @ bt[p].T`` (or ``+=``) on the AVX2 or the AVX-512 dot form.
    Arguments: ``a``, ``bt`` (IN), ``out`` (OUT; IN/OUT with ``accumulate``)."""
    cdef Py_ssize_t p, count = a.shape[0]
    cdef int m = <int> a.shape[1], k = <int> a.shape[2], n = <int> bt.shape[1]
    cdef Py_ssize_t lda = a.strides[1] // 4, ldb = bt.strides[1] // 4
    cdef Py_ssize_t ldc = out.strides[1] // 4
    if count == 0 or m == 0 or n == 0:
        return
    for p in prange(count, nogil=True, schedule="static", num_threads=num_threads):
        if avx2:
            sb_sgemm_dot_avx2(m, n, k, &a[p, 0, 0] if k > 0 else NULL, lda,
                              &bt[p, 0, 0] if k > 0 else NULL, ldb, &out[p, 0, 0], ldc,
                              accumulate)
        else:
            sb_sgemm_dot_avx512(m, n, k, &a[p, 0, 0] if k > 0 else NULL, lda,
                                &bt[p, 0, 0] if k > 0 else NULL, ldb, &out[p, 0, 0], ldc,
                                accumulate)


def matmul_dot(const float[:, :, :] a,    # IN  (P, M, K), unit stride along K
               const float[:, :, :] bt,   # IN  (P, N, K), unit stride along K
               float[:, :, :] out,        # OUT (P, M, N), out.strides[2] == 4
               bint accumulate=False, int num_threads=1):
    """``out[p] = a[p] @ bt[p].T`` (or ``+=``) as dot products along the last axis on the
    AVX-512 kernel, the products shared among ``num_threads`` threads.  For long K and
    small M, N (weight gradients)."""
    _dots(False, a, bt, out, accumulate, num_threads)


def matmul_dot_avx2(const float[:, :, :] a,    # IN  (P, M, K), unit stride along K
                    const float[:, :, :] bt,   # IN  (P, N, K), unit stride along K
                    float[:, :, :] out,        # OUT (P, M, N), out.strides[2] == 4
                    bint accumulate=False, int num_threads=1):
    """:func:`matmul_dot` on the AVX2 + FMA kernel: same contract."""
    _dots(True, a, bt, out, accumulate, num_threads)


def transpose(const float[:, :, ::1] src, float[:, :, ::1] dst):
    """``dst[p] = src[p].T`` in 32 x 32 blocks (both stay in L1 while a block moves);
    about 8x numpy's strided copy of a convolution weight.

    Arguments: ``src`` (IN), ``dst`` (OUT).
    """
    cdef Py_ssize_t p, i0, j0, i, j, i1, j1
    cdef Py_ssize_t rows = src.shape[1], cols = src.shape[2]
    with nogil:
        for p in range(src.shape[0]):
            for i0 in range(0, rows, 32):
                i1 = min(i0 + 32, rows)
                for j0 in range(0, cols, 32):
                    j1 = min(j0 + 32, cols)
                    for j in range(j0, j1):
                        for i in range(i0, i1):
                            dst[p, j, i] = src[p, i, j]


# -- products with a small side (narrow_products.h) ---------------------------------------

cdef extern from "narrow_products.h" nogil:
    int SB_NARROW_BLOCK
    void sb_narrow_f(const float* a, int m, int k, const float* x, Py_ssize_t xs, float* y,
                     Py_ssize_t ys, Py_ssize_t p0, Py_ssize_t p1)
    void sb_narrow_d(const double* a, int m, int k, const double* x, Py_ssize_t xs,
                     double* y, Py_ssize_t ys, Py_ssize_t p0, Py_ssize_t p1)

def narrow_products(const real[:, ::1] a,     # IN  (M, K)
                    const real[:, :, ::1] x,  # IN  (N, K, P)
                    real[:, :, ::1] y,        # OUT (N, M, P), fully overwritten
                    int num_threads):
    """``y[n] = a @ x[n]`` for every sample ``n``, where ``a`` is small (a few rows or a
    few columns: narrow_products.h), the samples' columns cut into pieces of
    ``4 * SB_NARROW_BLOCK`` shared among ``num_threads`` threads.  Each element is the
    same k-ordered chain of multiplies and adds whatever piece or thread computes it, so
    the result does not depend on the thread count."""
    cdef Py_ssize_t n_samples = x.shape[0], k = x.shape[1], p = x.shape[2]
    cdef Py_ssize_t m = a.shape[0], piece = 4 * SB_NARROW_BLOCK
    cdef Py_ssize_t per_sample = (p + piece - 1) // piece
    cdef Py_ssize_t t, n, p0, p1
    if n_samples == 0 or m == 0 or p == 0:
        return
    if k == 0:
        y[:, :, :] = 0
        return
    with nogil:
        for t in prange(n_samples * per_sample, schedule="static", num_threads=num_threads):
            n = t // per_sample
            p0 = (t - n * per_sample) * piece
            p1 = min(p0 + piece, p)
            if real is float:
                sb_narrow_f(&a[0, 0], <int> m, <int> k, &x[n, 0, 0], p, &y[n, 0, 0], p, p0, p1)
            else:
                sb_narrow_d(&a[0, 0], <int> m, <int> k, &x[n, 0, 0], p, &y[n, 0, 0], p, p0, p1)
