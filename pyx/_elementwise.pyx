# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Elementwise arithmetic of same-shape operands (numpy's a + b and its kin run on one
# thread; these, with the same IEEE operations, give numpy's bits on every thread),
# sums of rows, copies and fills of rows and blocks, and the up-convolution's
# depth-to-space.  The activations' kernels are pyx/_activation.pyx's.
# Kernel contract: pyx/fused.pxd (no validation, C-contiguous operands of one
# dtype and size, nogil prange with a Python-computed thread count; every
# iteration writes only its own block of the output -> bitwise identical for any
# thread count).

from cython.parallel cimport prange
from libc.string cimport memcpy
from fused cimport real

cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from "lane_sums.h":
    pass  # SB_BLOCK_SUM: sums in lanes by blocks

cdef extern from *:
    """
    /* a op b, numpy's one IEEE operation an element; out may be a or b (an in-place
     * sum): no restrict, the compiler checks the overlap */
    #define SB_ARITH(T, S)                                                             \
    SB_CLONES static void sb_add_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] + b[i]; }                     \
    SB_CLONES static void sb_sub_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] - b[i]; }                     \
    SB_CLONES static void sb_mul_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] * b[i]; }                     \
    SB_CLONES static void sb_div_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] / b[i]; }
    SB_ARITH(float, f)
    SB_ARITH(double, d)
    SB_BLOCK_SUM(float, f)
    SB_BLOCK_SUM(double, d)
    typedef void (*sb_arith_f)(const float*, const float*, float*, Py_ssize_t);
    typedef void (*sb_arith_d)(const double*, const double*, double*, Py_ssize_t);
    static sb_arith_f sb_arith_fs[] = {sb_add_f, sb_sub_f, sb_mul_f, sb_div_f};
    static sb_arith_d sb_arith_ds[] = {sb_add_d, sb_sub_d, sb_mul_d, sb_div_d};

    /* One output row of depth-to-space (to_space) or one input row of space-to-depth:
     * `wide` (W * kw) interleaves the kw rows `narrow + b * stride` (W each):
     * wide[w * kw + b] = narrow_b[w].  kw == 2 is the up-convolution's (one pass,
     * gcc's interleaving shuffles). */
    #define SB_SHUFFLE(T, S)                                                           \
    SB_CLONES static void sb_shuffle_row_##S(T* restrict wide, T* restrict narrow,     \
            Py_ssize_t stride, Py_ssize_t W, Py_ssize_t kw, int to_space) {            \
        if (kw == 2) {                                                                 \
            T* n0 = narrow; T* n1 = narrow + stride;                                   \
            if (to_space) for (Py_ssize_t w = 0; w < W; w++) {                         \
                wide[2 * w] = n0[w]; wide[2 * w + 1] = n1[w]; }                        \
            else for (Py_ssize_t w = 0; w < W; w++) {                                  \
                n0[w] = wide[2 * w]; n1[w] = wide[2 * w + 1]; }                        \
            return; }                                                                  \
        for (Py_ssize_t b = 0; b < kw; b++) {                                          \
            T* nb = narrow + b * stride;                                               \
            if (to_space) for (Py_ssize_t w = 0; w < W; w++) wide[w * kw + b] = nb[w];  \
            else for (Py_ssize_t w = 0; w < W; w++) nb[w] = wide[w * kw + b]; } }
    SB_SHUFFLE(float, f)
    SB_SHUFFLE(double, d)
    """
    ctypedef void (*sb_arith_f)(const float*, const float*, float*, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_arith_d)(const double*, const double*, double*,
                                Py_ssize_t) noexcept nogil
    sb_arith_f sb_arith_fs[4]
    sb_arith_d sb_arith_ds[4]
    double sb_sum_f(const float*, Py_ssize_t) noexcept nogil
    double sb_sum_d(const double*, Py_ssize_t) noexcept nogil
    void sb_shuffle_row_f(float* wide, float* narrow, Py_ssize_t stride, Py_ssize_t W,
                          Py_ssize_t kw, int to_space) noexcept nogil
    void sb_shuffle_row_d(double* wide, double* narrow, Py_ssize_t stride, Py_ssize_t W,
                          Py_ssize_t kw, int to_space) noexcept nogil

# Elements per parallel block: large enough that a block's start-up is noise, small
# enough that two threads share a 64x64x16 feature map of a batch of 8.
cdef enum:
    BLOCK = 32768


# The operations of arith_rows, by code.
ADD, SUB, MUL, DIV = range(4)


def arith_rows(int op, const real[:, :] a, const real[:, :] b, real[:, :] out,
               int num_threads):
    """``out = a op b`` elementwise (``op``: ADD, SUB, MUL or DIV; as numpy computes
    them), row by row in blocks shared among the threads.  a (IN), b (IN), out (OUT,
    may be ``a`` or ``b``): one shape and dtype; each row contiguous (element stride 1
    along it), the rows anywhere."""
    cdef Py_ssize_t rows = a.shape[0], n = a.shape[1], i, q, start
    cdef Py_ssize_t per_row = (n + BLOCK - 1) // BLOCK
    cdef sb_arith_f kf = sb_arith_fs[op]
    cdef sb_arith_d kd = sb_arith_ds[op]
    if rows == 0 or n == 0:
        return
    for q in prange(rows * per_row, nogil=True, schedule="static", num_threads=num_threads):
        i = q // per_row
        start = (q % per_row) * BLOCK
        if real is float:
            kf(&a[i, start], &b[i, start], &out[i, start], min(BLOCK, n - start))
        else:
            kd(&a[i, start], &b[i, start], &out[i, start], min(BLOCK, n - start))


cdef enum:
    # a row longer than this many bytes is copied in pieces of it, shared among the
    # threads like the rows (one input of a batch-1 concatenation is one row)
    COPY_PIECE = 65536


def copy_rows(const unsigned char[:, :] src,  # IN  (rows, width) bytes, rows strided
              unsigned char[:, ::1] dst,       # OUT (rows, >= offset + width) bytes
              Py_ssize_t offset, int num_threads):
    """``dst[:, offset:offset + width] = src``, the rows shared among the threads, and a
    row longer than 64 KiB in pieces of 64 KiB: one input of a concatenation, or a
    strided array made contiguous (a byte copy, so any dtype).  Each row of ``src`` must
    be contiguous (byte stride 1 along it); the rows themselves may lie anywhere."""
    cdef Py_ssize_t q, o, start, rows = src.shape[0], width = src.shape[1]
    cdef Py_ssize_t pieces = (width + COPY_PIECE - 1) // COPY_PIECE
    if rows == 0 or width == 0:
        return
    for q in prange(rows * pieces, nogil=True, schedule="static", num_threads=num_threads):
        o = q // pieces
        start = (q - o * pieces) * COPY_PIECE
        memcpy(&dst[o, offset + start], &src[o, start], min(COPY_PIECE, width - start))


def row_sums(const real[:, ::1] x,  # IN  (rows, width)
             Py_ssize_t chunk,         # IN  elements of a part (the last may be short)
             double[:, ::1] parts,     # OUT (rows, ceil(width / chunk))
             int num_threads):
    """``parts[r, k]`` = the sum of ``x[r, k * chunk:(k + 1) * chunk]`` (lane_sums.h's
    lanes by blocks, the blocks in double), the parts shared among the threads; the
    caller adds each row's parts in their order, so the sums never depend on the
    threads."""
    cdef Py_ssize_t rows = x.shape[0], n = x.shape[1], per_row = parts.shape[1], q, i, start
    if rows == 0 or n == 0:
        return
    for q in prange(rows * per_row, nogil=True, schedule="static", num_threads=num_threads):
        i = q // per_row
        start = (q % per_row) * chunk
        if real is float:
            parts[i, q % per_row] = sb_sum_f(&x[i, start], min(chunk, n - start))
        else:
            parts[i, q % per_row] = sb_sum_d(&x[i, start], min(chunk, n - start))


def fill_rows(const real[::1] values,  # IN  (rows,)
              real[:, ::1] out,            # OUT (rows, width)
              int num_threads):
    """``out[r, :] = values[r]`` for every row, in blocks shared among the threads: a
    broadcast array whose trailing axes repeat one value (the gradient of a mean or a sum
    over them) made contiguous."""
    cdef Py_ssize_t rows = out.shape[0], n = out.shape[1], i, j, q, start, stop
    cdef Py_ssize_t per_row = (n + BLOCK - 1) // BLOCK
    cdef real v
    if rows == 0 or n == 0:
        return
    for q in prange(rows * per_row, nogil=True, schedule="static", num_threads=num_threads):
        i = q // per_row
        start = (q % per_row) * BLOCK
        stop = min(start + BLOCK, n)
        v = values[i]
        for j in range(start, stop):
            out[i, j] = v


def copy_blocks(const unsigned char[::1] src,  # IN  bytes
                unsigned char[::1] dst,        # OUT bytes
                Py_ssize_t src_start, Py_ssize_t dst_start, Py_ssize_t outer,
                Py_ssize_t inner, Py_ssize_t src_outer, Py_ssize_t src_inner,
                Py_ssize_t dst_outer, Py_ssize_t dst_inner, Py_ssize_t width,
                int num_threads):
    """For ``i < outer`` and ``j < inner``, the ``width`` bytes at ``src_start + i *
    src_outer + j * src_inner`` of ``src`` to ``dst_start + i * dst_outer + j *
    dst_inner`` of ``dst``, the blocks shared among the threads: a copy that swaps two
    axes of whole planes (a 3-D convolution's slab of depth planes as (planes, C, H, W)).
    The caller keeps every block inside both buffers and the blocks of ``dst`` apart."""
    cdef Py_ssize_t k, i, j
    for k in prange(outer * inner, nogil=True, schedule="static", num_threads=num_threads):
        i = k // inner
        j = k - i * inner
        memcpy(&dst[dst_start + i * dst_outer + j * dst_inner],
               &src[src_start + i * src_outer + j * src_inner], width)


cdef void _shuffle_2d(real* depth, real* space, Py_ssize_t M, Py_ssize_t kh, Py_ssize_t kw,
                     Py_ssize_t H, Py_ssize_t W, int to_space, int num_threads) noexcept nogil:
    """Depth-to-space or space-to-depth (see the two wrappers), the rows of the written
    array shared among the threads: each is written by one iteration."""
    cdef Py_ssize_t r, m, h, a, rows = M * H * kh
    cdef Py_ssize_t plane = H * W
    if rows == 0 or W == 0 or kw == 0:
        return
    for r in prange(rows, schedule="static", num_threads=num_threads):
        m = r // (H * kh)
        h = (r // kh) % H
        a = r % kh
        if real is float:
            sb_shuffle_row_f(space + r * W * kw, depth + ((m * kh + a) * kw) * plane + h * W,
                             plane, W, kw, to_space)
        else:
            sb_shuffle_row_d(space + r * W * kw, depth + ((m * kh + a) * kw) * plane + h * W,
                             plane, W, kw, to_space)


def depth_to_space_2d(const real[::1] depth,  # IN  (M, kh, kw, H, W) flat
                      real[::1] space,        # OUT (M, H * kh, W * kw) flat
                      Py_ssize_t M, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t H,
                      Py_ssize_t W, int num_threads):
    """``space[m, h kh + a, w kw + b] = depth[m, a, b, h, w]``: the up-convolution's
    permutation (kernel == stride), on every thread."""
    if space.shape[0] == 0:
        return
    with nogil:
        _shuffle_2d(<real*> &depth[0], &space[0], M, kh, kw, H, W, 1, num_threads)


def space_to_depth_2d(const real[::1] space,  # IN  (M, H * kh, W * kw) flat
                      real[::1] depth,        # OUT (M, kh, kw, H, W) flat
                      Py_ssize_t M, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t H,
                      Py_ssize_t W, int num_threads):
    """The inverse permutation, ``depth[m, a, b, h, w] = space[m, h kh + a, w kw + b]``:
    the up-convolution's gradient, on every thread."""
    if depth.shape[0] == 0:
        return
    with nogil:
        _shuffle_2d(&depth[0], <real*> &space[0], M, kh, kw, H, W, 0, num_threads)
