# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Resampling kernels: apply one per-axis banded weight table along one axis.
# See pyx/fused.pxd for the kernel contract (no validation, const C-contiguous
# inputs, nogil prange with a Python-computed thread count, every iteration
# writes only its own output -> bitwise identical for any thread count).
#
# A table maps an axis of length L to Lo:
#     out[.., o, ..] = sum_{k < ntap[o]} w[o, k] * x[.., start[o] + k, ..]
# The forward uses the mode's table, the adjoint (backward) the transposed
# table built in sandbox/array/resample/_weights.py, so both run the same gather
# kernels and neither needs atomics.

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from fused cimport real
from work_share cimport sb_share, sb_share_first, sb_share_init, sb_share_take


cdef extern from "resample_simd.h":
    Py_ssize_t SB_RS16_MAX_LEN
    void sb_rs16_gather_f32(float* dst, Py_ssize_t dstride, const float* src,
                            Py_ssize_t sstride, Py_ssize_t length, Py_ssize_t lo_len,
                            const Py_ssize_t* start, const Py_ssize_t* ntap, const float* w,
                            Py_ssize_t kmax, float* scratch) noexcept nogil
    void sb_rs16_combine_rows_f32(float* dst, const float* src, Py_ssize_t stride,
                                const float* wk, Py_ssize_t n, Py_ssize_t q_len) noexcept nogil
    void sb_rs8_gather_f32(float* dst, Py_ssize_t dstride, const float* src,
                           Py_ssize_t sstride, Py_ssize_t length, Py_ssize_t lo_len,
                           const Py_ssize_t* start, const Py_ssize_t* ntap, const float* w,
                           Py_ssize_t kmax, float* scratch) noexcept nogil
    int sb_rs_isa_available() noexcept nogil
    void sb_rs_combine_rows_f(float* dst, const float* src, Py_ssize_t stride,
                              const float* wk, Py_ssize_t n, Py_ssize_t q_len) noexcept nogil
    void sb_rs_combine_rows_d(double* dst, const double* src, Py_ssize_t stride,
                              const double* wk, Py_ssize_t n, Py_ssize_t q_len) noexcept nogil


def isa_available():
    """2 when this CPU runs the AVX-512 passes of :func:`apply_last` and :func:`apply_mid`
    (resample_simd.h), 1 when it runs :func:`apply_last`'s AVX2 one, else 0."""
    return sb_rs_isa_available()


cdef inline void _combine_rows(real* dst, const real* src, Py_ssize_t stride,
                               const real* wk, Py_ssize_t n, Py_ssize_t q_len,
                               int isa) noexcept nogil:
    """dst[q] = sum_k wk[k] * src[k*stride + q]  (whole rows; resample_simd.h's C loop,
    compiled for AVX2 and the baseline, or float32 with ``isa`` = 2 its AVX-512 form:
    the first two taps initialise, then pairs of taps accumulate, which halves the
    traffic to dst)."""
    if real is float:
        if isa == 2:
            sb_rs16_combine_rows_f32(dst, src, stride, wk, n, q_len)
        else:
            sb_rs_combine_rows_f(dst, src, stride, wk, n, q_len)
    else:
        sb_rs_combine_rows_d(dst, src, stride, wk, n, q_len)


cdef inline void _scale_row(real* dst, Py_ssize_t n, real factor) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = dst[i] * factor


cdef inline void _gather_row1(real* dst, const real* src, Py_ssize_t lo_len,
                              const Py_ssize_t* start, const Py_ssize_t* ntap,
                              const real* w, real factor) noexcept nogil:
    """_gather_row for a single-tap table (K == 1), times a row factor."""
    cdef Py_ssize_t o
    for o in range(lo_len):
        if ntap[o]:
            dst[o] = (factor * w[o]) * src[start[o]]
        else:
            dst[o] = 0


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


cdef inline void _gather_rows4(real* dst, Py_ssize_t dstride, const real* src, Py_ssize_t sstride,
                               Py_ssize_t lo_len, const Py_ssize_t* start, const Py_ssize_t* ntap,
                               const real* w, Py_ssize_t kmax) noexcept nogil:
    """_gather_row on 4 rows at once: the table entries are loaded once per 4 outputs."""
    cdef Py_ssize_t o, k, n
    cdef const real* s
    cdef const real* wo
    cdef real a0, a1, a2, a3, wk
    for o in range(lo_len):
        n = ntap[o]
        s = src + start[o]
        wo = w + o * kmax
        a0 = 0
        a1 = 0
        a2 = 0
        a3 = 0
        for k in range(n):
            wk = wo[k]
            a0 = a0 + wk * s[k]
            a1 = a1 + wk * s[k + sstride]
            a2 = a2 + wk * s[k + 2 * sstride]
            a3 = a3 + wk * s[k + 3 * sstride]
        dst[o] = a0
        dst[o + dstride] = a1
        dst[o + 2 * dstride] = a2
        dst[o + 3 * dstride] = a3


def apply_last(const real[:, ::1] x, real[:, ::1] out,
               const Py_ssize_t[::1] start, const Py_ssize_t[::1] ntap,
               const real[:, ::1] w, int num_threads, int isa=0):
    """Resample the last axis: ``x`` (P, L) -> ``out`` (P, Lo), parallel over blocks of rows.

    With ``isa`` = 2 (at most :func:`isa_available`), float32 rows of at most
    ``SB_RS16_MAX_LEN`` run in blocks of 16 on resample_simd.h's AVX-512 pass, with
    ``isa`` = 1 in blocks of 8 on its AVX2 one; the values are the same (each row's
    outputs are formed alike in every block size).

    Arguments: ``x`` (IN), ``out`` (OUT), ``start`` (IN), ``ntap`` (IN), ``w`` (IN),
    ``num_threads`` (IN), ``isa`` (IN).
    """
    cdef Py_ssize_t n_rows = x.shape[0]
    cdef Py_ssize_t length = x.shape[1]
    cdef Py_ssize_t lo_len = out.shape[1]
    cdef Py_ssize_t kmax = w.shape[1]
    cdef Py_ssize_t first = 0  # the first row after the vector pass's blocks
    cdef Py_ssize_t n_blocks, b, p, rows, end = 0
    cdef char* raw
    cdef float* scratch
    cdef sb_share share
    cdef sb_share* blocks = &share  # the counter all threads take from: shared on purpose
    if n_rows == 0 or lo_len == 0:
        return
    if real is float:
        rows = 16 if isa == 2 else 8 if isa == 1 else 0  # a block of the vector pass
        if rows and length <= SB_RS16_MAX_LEN and n_rows >= rows:
            first = rows * (n_rows // rows)
            sb_share_init(blocks, n_rows // rows)  # static shares, then pieces (work_share.h)
            with nogil, parallel(num_threads=num_threads):
                raw = <char*> malloc(rows * length * sizeof(float) + 64)
                scratch = <float*> ((<size_t> raw + 63) & ~(<size_t> 63))
                b = 0  # private to each thread, as end
                end = 0
                sb_share_first(blocks, &b, &end)
                while b < end or sb_share_take(blocks, &b, &end):
                    if raw == NULL:  # no scratch: the same values by the scalar loop
                        for p in range(rows // 4):
                            _gather_rows4(&out[rows * b + 4 * p, 0], lo_len,
                                          &x[rows * b + 4 * p, 0], length, lo_len, &start[0],
                                          &ntap[0], &w[0, 0], kmax)
                    elif rows == 16:
                        sb_rs16_gather_f32(&out[16 * b, 0], lo_len, &x[16 * b, 0], length,
                                           length, lo_len, &start[0], &ntap[0], &w[0, 0],
                                           kmax, scratch)
                    else:
                        sb_rs8_gather_f32(&out[8 * b, 0], lo_len, &x[8 * b, 0], length,
                                          length, lo_len, &start[0], &ntap[0], &w[0, 0],
                                          kmax, scratch)
                    b = b + 1
                free(raw)
    n_blocks = (n_rows - first) // 4
    with nogil:
        for b in prange(n_blocks, schedule="static", num_threads=num_threads):
            _gather_rows4(&out[first + 4 * b, 0], lo_len, &x[first + 4 * b, 0], length,
                          lo_len, &start[0], &ntap[0], &w[0, 0], kmax)
        for p in range(first + 4 * n_blocks, n_rows):
            _gather_row(&out[p, 0], &x[p, 0], lo_len, &start[0], &ntap[0], &w[0, 0], kmax)


def apply_mid(const real[:, :, ::1] x, real[:, :, ::1] out,
              const Py_ssize_t[::1] start, const Py_ssize_t[::1] ntap,
              const real[:, ::1] w, int num_threads, int isa=0):
    """Resample the middle axis: ``x`` (P, L, Q) -> ``out`` (P, Lo, Q).

    Each (p, o) output row is a weighted sum of whole input rows; the loop is
    parallel over the P*Lo output rows so small batches still use every thread.
    With ``isa`` = 2 (at most :func:`isa_available`), float32 rows are summed 16
    floats a vector (resample_simd.h), with the same values.

    Arguments: ``x`` (IN), ``out`` (OUT), ``start`` (IN), ``ntap`` (IN), ``w`` (IN),
    ``num_threads`` (IN), ``isa`` (IN).
    """
    cdef Py_ssize_t n_outer = x.shape[0]
    cdef Py_ssize_t q_len = x.shape[2]
    cdef Py_ssize_t lo_len = out.shape[1]
    cdef Py_ssize_t kmax = w.shape[1]
    cdef Py_ssize_t idx, p, o, end = 0
    cdef sb_share share
    cdef sb_share* out_rows = &share  # the counter all threads take from: shared on purpose
    if n_outer == 0 or lo_len == 0 or q_len == 0:
        return
    sb_share_init(out_rows, n_outer * lo_len)  # static shares, then pieces (work_share.h)
    with nogil, parallel(num_threads=num_threads):  # (isa 1: _combine_rows's AVX2 clone)
        idx = 0  # private to each thread, as end
        end = 0
        sb_share_first(out_rows, &idx, &end)
        while idx < end or sb_share_take(out_rows, &idx, &end):
            p = idx // lo_len
            o = idx - p * lo_len
            _combine_rows(&out[p, o, 0], &x[p, start[o], 0], q_len,
                          &w[o, 0], ntap[o], q_len, isa)
            idx = idx + 1


def apply_hw(const real[:, :, ::1] x, real[:, :, ::1] out,
             const Py_ssize_t[::1] start_h, const Py_ssize_t[::1] ntap_h,
             const real[:, ::1] w_h,
             const Py_ssize_t[::1] start_w, const Py_ssize_t[::1] ntap_w,
             const real[:, ::1] w_w, int num_threads):
    """Resample the last two axes in one fused pass: ``x`` (P, H, W) -> ``out`` (P, Ho, Wo).

    Per output row (p, oh): combine the input rows the H table selects into a
    thread-local row of length W (vectorised over W), then gather along W into
    the output row.  No intermediate array; a single-tap unit-weight H row
    (nearest, identity) reads the input row in place.  Raises MemoryError
    when the scratch allocation failed.

    Arguments: ``x`` (IN), ``out`` (OUT), ``start_h`` (IN), ``ntap_h`` (IN), ``w_h`` (IN),
    ``start_w`` (IN), ``ntap_w`` (IN), ``w_w`` (IN), ``num_threads`` (IN).
    """
    cdef Py_ssize_t n_planes = x.shape[0]
    cdef Py_ssize_t width = x.shape[2]
    cdef Py_ssize_t ho_len = out.shape[1]
    cdef Py_ssize_t wo_len = out.shape[2]
    cdef Py_ssize_t kh = w_h.shape[1]
    cdef Py_ssize_t kw = w_w.shape[1]
    cdef Py_ssize_t idx, p, oh, n
    cdef real* row
    cdef const real* src
    cdef int failed[1]
    cdef int* failed_flag = &failed[0]
    failed[0] = 0
    if n_planes == 0 or ho_len == 0 or wo_len == 0:
        return
    with nogil, parallel(num_threads=num_threads):
        row = <real*> malloc(width * sizeof(real))
        if row == NULL:
            failed_flag[0] = 1  # shared write through a pointer
        for idx in prange(n_planes * ho_len, schedule="static"):
            if row == NULL:
                continue
            p = idx // ho_len
            oh = idx - p * ho_len
            n = ntap_h[oh]
            if n == 1:
                # one input row: gather it in place (no scratch row)
                if kw == 1:
                    _gather_row1(&out[p, oh, 0], &x[p, start_h[oh], 0], wo_len,
                                 &start_w[0], &ntap_w[0], &w_w[0, 0], w_h[oh, 0])
                else:
                    _gather_row(&out[p, oh, 0], &x[p, start_h[oh], 0], wo_len,
                                &start_w[0], &ntap_w[0], &w_w[0, 0], kw)
                    if w_h[oh, 0] != 1:
                        _scale_row(&out[p, oh, 0], wo_len, w_h[oh, 0])
                continue
            _combine_rows(row, &x[p, start_h[oh], 0], width, &w_h[oh, 0], n, width, 0)
            _gather_row(&out[p, oh, 0], row, wo_len, &start_w[0], &ntap_w[0], &w_w[0, 0], kw)
        free(row)
    if failed[0]:
        raise MemoryError("apply_hw: could not allocate the resampling scratch rows")


# ---------------------------------------------------------------- nearest modes
# Nearest and nearest-exact are pure index maps: output row i of a plane copies
# input row rows[i] gathered by cols (all spatial axes but the last are folded
# into "rows").  Dedicated kernels avoid the weighted passes' multiplies and the
# intermediate array; upsampled rows that repeat their predecessor are memcpy'd.



def nearest_forward(const real[:, :, ::1] x, real[:, :, ::1] out,
                    const Py_ssize_t[::1] rows, const Py_ssize_t[::1] cols,
                    int num_threads):
    """``out[p, i, j] = x[p, rows[i], cols[j]]``; parallel over planes p.

    Arguments: ``x`` (IN), ``out`` (OUT), ``rows`` (IN), ``cols`` (IN), ``num_threads``
    (IN).
    """
    cdef Py_ssize_t n_planes = x.shape[0]
    cdef Py_ssize_t ro_len = out.shape[1]
    cdef Py_ssize_t wo_len = out.shape[2]
    cdef Py_ssize_t p, i, j
    cdef const real* src
    cdef real* dst
    if n_planes == 0 or ro_len == 0 or wo_len == 0:
        return
    with nogil:
        for p in prange(n_planes, schedule="static", num_threads=num_threads):
            for i in range(ro_len):
                dst = &out[p, i, 0]
                if i > 0 and rows[i] == rows[i - 1]:
                    memcpy(dst, dst - wo_len, wo_len * sizeof(real))
                    continue
                src = &x[p, rows[i], 0]
                for j in range(wo_len):
                    dst[j] = src[cols[j]]


cdef inline void _add_row(real* dst, const real* src, Py_ssize_t n, bint add) noexcept nogil:
    """dst = src, or dst += src."""
    cdef Py_ssize_t c
    if add:
        for c in range(n):
            dst[c] = dst[c] + src[c]
    else:
        memcpy(dst, src, n * sizeof(real))


cdef inline void _col_sums(real* dst, const real* src, Py_ssize_t w_len,
                           const Py_ssize_t* col_start, const Py_ssize_t* col_count,
                           Py_ssize_t uniform, bint add) noexcept nogil:
    """dst[c] (+)= sum of src over column range c; ``uniform == k`` means every range is
    ``[k*c, k*c + k)`` (integer upsampling), which gets branch-free loops."""
    cdef Py_ssize_t c, k
    cdef real s
    if uniform == 2:
        if add:
            for c in range(w_len):
                dst[c] = dst[c] + (src[2 * c] + src[2 * c + 1])
        else:
            for c in range(w_len):
                dst[c] = src[2 * c] + src[2 * c + 1]
        return
    if uniform == 1:
        _add_row(dst, src, w_len, add)
        return
    for c in range(w_len):
        s = 0
        for k in range(col_count[c]):
            s = s + src[col_start[c] + k]
        if add:
            dst[c] = dst[c] + s
        else:
            dst[c] = s


def nearest_adjoint(const real[:, :, ::1] g, real[:, :, ::1] out,
                    const Py_ssize_t[::1] rows, const Py_ssize_t[::1] col_start,
                    const Py_ssize_t[::1] col_count, Py_ssize_t uniform,
                    const real[:, ::1] col_w, int num_threads, int isa=0):
    """Adjoint of :func:`nearest_forward`: ``out[p, r, c]`` sums ``g[p, i, j]`` over
    ``rows[i] == r`` and ``j`` in ``[col_start[c], col_start[c] + col_count[c])``.

    Parallel over planes, each owned by one thread; within a plane output rows are
    visited in order (a row-level scatter), so the sums are deterministic.  Input
    rows that no output row reads are zero.  ``uniform`` (k > 0) declares that every
    column range is ``[k*c, k*c + k)``.  ``col_w`` (the column table's weights, 1 on
    every tap) lets float32 ranges of other lengths be summed 16 input rows at a time
    by resample_simd.h's AVX-512 pass (``isa`` = 2; other codes take the scalar
    loop): it forms 0 + 1 * x0 + 1 * x1 ..., the same values as the scalar
    0 + x0 + x1 ...  Raises MemoryError if the per-thread buffers could not be allocated.

    Arguments: ``g`` (IN), ``out`` (OUT), ``rows`` (IN), ``col_start`` (IN), ``col_count``
    (IN), ``uniform`` (IN), ``col_w`` (IN), ``num_threads`` (IN), ``isa`` (IN).
    """
    cdef Py_ssize_t n_planes = g.shape[0]
    cdef Py_ssize_t ro_len = g.shape[1]
    cdef Py_ssize_t ro_w = g.shape[2]
    cdef Py_ssize_t r_len = out.shape[1]
    cdef Py_ssize_t w_len = out.shape[2]
    cdef Py_ssize_t kmax = col_w.shape[1]
    cdef Py_ssize_t p, i, c, r, k, block = 0
    cdef real* dst
    cdef char* seen
    cdef char* raw
    cdef float* scratch
    cdef float* sums
    cdef int failed[1]
    cdef int* failed_flag = &failed[0]
    failed[0] = 0
    if n_planes == 0 or r_len == 0 or w_len == 0:
        return
    if real is float:
        if uniform == 0 and ro_w <= SB_RS16_MAX_LEN:
            # 16 input rows a pass; not the AVX2 pass's 8, which was slower than the scalar
            # loop here (forward + adjoint 1.24-1.38x the scalar time, AMD EPYC family 25,
            # 1 and 2 threads: python benchmarks/ab_resample_simd.py --shapes d)
            block = 16 if isa == 2 else 0
    with nogil, parallel(num_threads=num_threads):
        seen = <char*> malloc(r_len * sizeof(char))
        raw = NULL
        if block:  # the pass's scratch, then its block of row sums
            raw = <char*> malloc((block * ro_w + block * w_len) * sizeof(float) + 64)
        if seen == NULL or (block and raw == NULL):
            failed_flag[0] = 1
        scratch = <float*> ((<size_t> raw + 63) & ~(<size_t> 63))
        sums = scratch + block * ro_w
        for p in prange(n_planes, schedule="static"):
            if seen == NULL or (block and raw == NULL):
                continue
            for r in range(r_len):
                seen[r] = 0
            i = 0
            if real is float:
                while block and i + block <= ro_len:
                    sb_rs16_gather_f32(sums, w_len, &g[p, i, 0], ro_w, ro_w, w_len,
                                       &col_start[0], &col_count[0], &col_w[0, 0], kmax,
                                       scratch)
                    for k in range(block):  # the rows' sums in row order, as below
                        r = rows[i + k]
                        _add_row(&out[p, r, 0], sums + k * w_len, w_len, seen[r])
                        seen[r] = 1
                    i = i + block
            while i < ro_len:
                r = rows[i]
                _col_sums(&out[p, r, 0], &g[p, i, 0], w_len, &col_start[0], &col_count[0],
                          uniform, seen[r])
                seen[r] = 1
                i = i + 1
            for r in range(r_len):
                if not seen[r]:
                    dst = &out[p, r, 0]
                    for c in range(w_len):
                        dst[c] = 0
        free(seen)
        free(raw)
    if failed[0]:
        raise MemoryError("nearest_adjoint: could not allocate the nearest adjoint's buffers")


# ------------------------------------------------------------ single-tap tables
# When every table of a resize has at most one tap per output (e.g. the adjoint of
# 2x bilinear downsampling, area upsampling by an integer factor), the whole map is
# a weighted index gather: one pass, no intermediate, no scratch row.

def weighted_gather(const real[:, :, ::1] x, real[:, :, ::1] out,
                    const Py_ssize_t[::1] rows, const real[::1] row_w,
                    const char[::1] row_empty,
                    const Py_ssize_t[::1] cols, const real[::1] col_w,
                    const Py_ssize_t[::1] empty_cols, int num_threads):
    """``out[p, i, j] = row_w[i] * (col_w[j] * x[p, rows[i], cols[j]])``; rows flagged in
    ``row_empty`` and columns listed in ``empty_cols`` (outputs that read nothing) are
    exact zeros.  The product order matches the separable passes (last axis first).

    Parallel over planes.  Consecutive output rows that read the same input row share
    one gathered row (a thread-local scratch), then only scale it.  Raises MemoryError if the
    scratch could not be allocated.

    Arguments: ``x`` (IN), ``out`` (OUT), ``rows`` (IN), ``row_w`` (IN), ``row_empty`` (IN),
    ``cols`` (IN), ``col_w`` (IN), ``empty_cols`` (IN), ``num_threads`` (IN).
    """
    cdef Py_ssize_t n_planes = x.shape[0]
    cdef Py_ssize_t ro_len = out.shape[1]
    cdef Py_ssize_t wo_len = out.shape[2]
    cdef Py_ssize_t n_empty = empty_cols.shape[0]
    cdef Py_ssize_t p, i, j, cached
    cdef const real* src
    cdef real* dst
    cdef real* row
    cdef real f
    cdef int failed[1]
    cdef int* failed_flag = &failed[0]
    failed[0] = 0
    if n_planes == 0 or ro_len == 0 or wo_len == 0:
        return
    with nogil, parallel(num_threads=num_threads):
        row = <real*> malloc(wo_len * sizeof(real))
        if row == NULL:
            failed_flag[0] = 1
        for p in prange(n_planes, schedule="static"):
            if row == NULL:
                continue
            cached = -1  # input row whose weighted gather ``row`` holds
            for i in range(ro_len):
                dst = &out[p, i, 0]
                if row_empty[i]:
                    for j in range(wo_len):
                        dst[j] = 0
                    continue
                if rows[i] != cached:
                    src = &x[p, rows[i], 0]
                    for j in range(wo_len):
                        row[j] = col_w[j] * src[cols[j]]
                    for j in range(n_empty):
                        row[empty_cols[j]] = 0
                    cached = rows[i]
                f = row_w[i]
                for j in range(wo_len):
                    dst[j] = f * row[j]
        free(row)
    if failed[0]:
        raise MemoryError("weighted_gather: could not allocate the resampling scratch row")
