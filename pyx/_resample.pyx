# Resampling kernels: apply one per-axis banded weight table along one axis.
# See pyx/fused.pxd for the kernel contract (no validation, const C-contiguous
# inputs, nogil prange with a Python-computed thread count, every iteration
# writes only its own output -> bitwise identical for any thread count).
#
# A table maps an axis of length L to Lo:
#     out[.., o, ..] = sum_{k < ntap[o]} w[o, k] * x[.., start[o] + k, ..]
# The forward uses the mode's table, the adjoint (backward) the transposed
# table built in sandbox/resample/_weights.py, so both run the same gather
# kernels and neither needs atomics.

from cython.parallel cimport prange
from fused cimport real


cdef inline void _combine_rows(real* dst, const real* src, Py_ssize_t stride,
                               const real* wk, Py_ssize_t n, Py_ssize_t q_len) noexcept nogil:
    """dst[q] = sum_k wk[k] * src[k*stride + q]  (whole rows, vectorisable over q)."""
    cdef Py_ssize_t q, k
    cdef real w0, w1
    cdef const real* r0
    cdef const real* r1
    if n == 0:
        for q in range(q_len):
            dst[q] = 0
        return
    if n == 1:
        w0 = wk[0]
        for q in range(q_len):
            dst[q] = w0 * src[q]
        return
    # first two taps initialise, then pairs of taps accumulate (halves dst traffic)
    w0 = wk[0]
    w1 = wk[1]
    r0 = src
    r1 = src + stride
    for q in range(q_len):
        dst[q] = w0 * r0[q] + w1 * r1[q]
    k = 2
    while k + 1 < n:
        w0 = wk[k]
        w1 = wk[k + 1]
        r0 = src + k * stride
        r1 = r0 + stride
        for q in range(q_len):
            dst[q] = dst[q] + (w0 * r0[q] + w1 * r1[q])
        k = k + 2
    if k < n:
        w0 = wk[k]
        r0 = src + k * stride
        for q in range(q_len):
            dst[q] = dst[q] + w0 * r0[q]


cdef inline void _gather_row(real* dst, const real* src, Py_ssize_t lo_len,
                             const Py_ssize_t* start, const Py_ssize_t* ntap,
                             const real* w, Py_ssize_t kmax) noexcept nogil:
    """dst[o] = sum_k w[o, k] * src[start[o] + k]  for one contiguous row."""
    cdef Py_ssize_t o, k, n
    cdef const real* s
    cdef const real* wo
    cdef real acc
    for o in range(lo_len):
        n = ntap[o]
        s = src + start[o]
        wo = w + o * kmax
        if n == 2:
            acc = wo[0] * s[0] + wo[1] * s[1]
        elif n == 1:
            acc = wo[0] * s[0]
        else:
            acc = 0
            for k in range(n):
                acc = acc + wo[k] * s[k]
        dst[o] = acc


def apply_last(const real[:, ::1] x, real[:, ::1] out,
               const Py_ssize_t[::1] start, const Py_ssize_t[::1] ntap,
               const real[:, ::1] w, int num_threads):
    """Resample the last axis: ``x`` (P, L) -> ``out`` (P, Lo), parallel over rows."""
    cdef Py_ssize_t n_rows = x.shape[0]
    cdef Py_ssize_t length = x.shape[1]
    cdef Py_ssize_t lo_len = out.shape[1]
    cdef Py_ssize_t kmax = w.shape[1]
    cdef Py_ssize_t p
    if n_rows == 0 or lo_len == 0:
        return
    with nogil:
        for p in prange(n_rows, schedule="static", num_threads=num_threads):
            _gather_row(&out[p, 0], &x[p, 0], lo_len, &start[0], &ntap[0], &w[0, 0], kmax)


def apply_mid(const real[:, :, ::1] x, real[:, :, ::1] out,
              const Py_ssize_t[::1] start, const Py_ssize_t[::1] ntap,
              const real[:, ::1] w, int num_threads):
    """Resample the middle axis: ``x`` (P, L, Q) -> ``out`` (P, Lo, Q).

    Each (p, o) output row is a weighted sum of whole input rows; the loop is
    parallel over the P*Lo output rows so small batches still use every thread.
    """
    cdef Py_ssize_t n_outer = x.shape[0]
    cdef Py_ssize_t q_len = x.shape[2]
    cdef Py_ssize_t lo_len = out.shape[1]
    cdef Py_ssize_t kmax = w.shape[1]
    cdef Py_ssize_t idx, p, o
    if n_outer == 0 or lo_len == 0 or q_len == 0:
        return
    with nogil:
        for idx in prange(n_outer * lo_len, schedule="static", num_threads=num_threads):
            p = idx // lo_len
            o = idx - p * lo_len
            _combine_rows(&out[p, o, 0], &x[p, start[o], 0], q_len,
                          &w[o, 0], ntap[o], q_len)
