# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Elementwise kernels for the activations users call one by one (nn.ReLU after
# nn.BatchNorm2d, F.relu): numpy's ufuncs run on one thread, these on every
# thread, with the same operations, so results are bitwise numpy's.
# Kernel contract: pyx/fused.pxd (no validation, C-contiguous operands of one
# dtype and size, nogil prange with a Python-computed thread count; every
# iteration writes only its own block of the output -> bitwise identical for any
# thread count).

from cython.parallel cimport prange
from libc.math cimport erf as c_erf
from libc.string cimport memcpy
from fused cimport real

cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from *:
    """
    /* max(x, 0) as np.maximum(x, 0) computes it: NaN passes through, -0.0 becomes 0. */
    #define SB_ELEMENTWISE(T, S)                                                       \
    SB_CLONES static void sb_relu_##S(const T* restrict x, T* restrict out,           \
            Py_ssize_t n) {                                                           \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            T v = x[i]; out[i] = (v > 0 || v != v) ? v : 0; } }                       \
    SB_CLONES static void sb_relu_grad_##S(const T* restrict g, const T* restrict y,  \
            T* restrict out, Py_ssize_t n) {                                          \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = g[i] * (T)(y[i] > 0); }          \
    /* np.where(x > 0, x, x * s), s the slope in T (numpy's weak Python float) */     \
    SB_CLONES static void sb_leaky_relu_##S(const T* restrict x, T* restrict out,     \
            T s, Py_ssize_t n) {                                                      \
        for (Py_ssize_t i = 0; i < n; i++) {                                           \
            T v = x[i]; out[i] = v > 0 ? v : v * s; } }                               \
    /* g * np.where(m > 0, 1, s): m the input, or the output for a slope >= 0 */       \
    SB_CLONES static void sb_leaky_relu_grad_##S(const T* restrict g,                 \
            const T* restrict m, T* restrict out, T s, Py_ssize_t n) {                \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = g[i] * (m[i] > 0 ? (T)1 : s); }  \
    /* a op b, numpy's one IEEE operation an element; out may be a or b (an in-place \
     * sum): no restrict, the compiler checks the overlap */                          \
    SB_CLONES static void sb_add_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] + b[i]; }                     \
    SB_CLONES static void sb_sub_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] - b[i]; }                     \
    SB_CLONES static void sb_mul_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] * b[i]; }                     \
    SB_CLONES static void sb_div_##S(const T* a, const T* b, T* out, Py_ssize_t n) {   \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a[i] / b[i]; }
    SB_ELEMENTWISE(float, f)
    SB_ELEMENTWISE(double, d)
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
    void sb_relu_f(const float* x, float* out, Py_ssize_t n) noexcept nogil
    void sb_relu_d(const double* x, double* out, Py_ssize_t n) noexcept nogil
    void sb_relu_grad_f(const float* g, const float* y, float* out, Py_ssize_t n) noexcept nogil
    void sb_relu_grad_d(const double* g, const double* y, double* out,
                        Py_ssize_t n) noexcept nogil
    void sb_leaky_relu_f(const float* x, float* out, float s, Py_ssize_t n) noexcept nogil
    void sb_leaky_relu_d(const double* x, double* out, double s, Py_ssize_t n) noexcept nogil
    void sb_leaky_relu_grad_f(const float* g, const float* m, float* out, float s,
                              Py_ssize_t n) noexcept nogil
    void sb_leaky_relu_grad_d(const double* g, const double* m, double* out, double s,
                              Py_ssize_t n) noexcept nogil
    ctypedef void (*sb_arith_f)(const float*, const float*, float*, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_arith_d)(const double*, const double*, double*,
                                Py_ssize_t) noexcept nogil
    sb_arith_f sb_arith_fs[4]
    sb_arith_d sb_arith_ds[4]
    void sb_shuffle_row_f(float* wide, float* narrow, Py_ssize_t stride, Py_ssize_t W,
                          Py_ssize_t kw, int to_space) noexcept nogil
    void sb_shuffle_row_d(double* wide, double* narrow, Py_ssize_t stride, Py_ssize_t W,
                          Py_ssize_t kw, int to_space) noexcept nogil

# Elements per parallel block: large enough that a block's start-up is noise, small
# enough that two threads share a 64x64x16 feature map of a batch of 8.
cdef enum:
    BLOCK = 32768


def relu(const real[::1] x, real[::1] out, int num_threads):
    """``out = max(x, 0)`` elementwise (as ``np.maximum(x, 0)``).

    x (IN), out (OUT): flat, same size and dtype; ``out`` may be ``x`` itself.
    """
    cdef Py_ssize_t n = x.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            sb_relu_f(&x[start], &out[start], min(BLOCK, n - start))
        else:
            sb_relu_d(&x[start], &out[start], min(BLOCK, n - start))


def relu_grad(const real[::1] g, const real[::1] y, real[::1] out, int num_threads):
    """``out = g * (y > 0)`` elementwise: the gradient of ReLU through its output ``y``.

    g (IN), y (IN), out (OUT): flat, same size and dtype; ``out`` may be ``g``.
    """
    cdef Py_ssize_t n = g.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            sb_relu_grad_f(&g[start], &y[start], &out[start], min(BLOCK, n - start))
        else:
            sb_relu_grad_d(&g[start], &y[start], &out[start], min(BLOCK, n - start))


def leaky_relu(const real[::1] x, real[::1] out, double slope, int num_threads):
    """``out = np.where(x > 0, x, x * slope)`` elementwise, ``slope`` rounded to the
    dtype first (as numpy takes a Python float).

    x (IN), out (OUT): flat, same size and dtype; ``out`` may be ``x`` itself.
    """
    cdef Py_ssize_t n = x.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    cdef real s = <real> slope
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            sb_leaky_relu_f(&x[start], &out[start], s, min(BLOCK, n - start))
        else:
            sb_leaky_relu_d(&x[start], &out[start], s, min(BLOCK, n - start))


def leaky_relu_grad(const real[::1] g, const real[::1] m, real[::1] out, double slope,
                    int num_threads):
    """``out = g * np.where(m > 0, 1, slope)`` elementwise (``slope`` in the dtype): the
    gradient of the leaky ReLU through its input, or its output for a slope of at
    least 0 (positive exactly where the input is).

    g (IN), m (IN), out (OUT): flat, same size and dtype; ``out`` may be ``g``.
    """
    cdef Py_ssize_t n = g.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    cdef real s = <real> slope
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            sb_leaky_relu_grad_f(&g[start], &m[start], &out[start], s, min(BLOCK, n - start))
        else:
            sb_leaky_relu_grad_d(&g[start], &m[start], &out[start], s, min(BLOCK, n - start))


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


def copy_rows(const unsigned char[:, :] src,  # IN  (rows, width) bytes, rows strided
              unsigned char[:, ::1] dst,       # OUT (rows, >= offset + width) bytes
              Py_ssize_t offset, int num_threads):
    """``dst[:, offset:offset + width] = src``, the rows shared among the threads: one
    input of a concatenation, or a strided array made contiguous (a byte copy, so any
    dtype).  Each row of ``src`` must be contiguous (byte stride 1 along it); the rows
    themselves may lie anywhere."""
    cdef Py_ssize_t o, rows = src.shape[0], width = src.shape[1]
    if rows == 0 or width == 0:
        return
    for o in prange(rows, nogil=True, schedule="static", num_threads=num_threads):
        memcpy(&dst[o, offset], &src[o, 0], width)


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


def erf(const real[::1] x, real[::1] out, int num_threads):
    """``out = erf(x)`` elementwise, computed in double by the C library (float32 values
    are rounded once at the end), on every thread.

    x (IN), out (OUT): flat, same size and dtype.
    """
    cdef Py_ssize_t n = x.shape[0], i
    for i in prange(n, nogil=True, schedule="static", num_threads=num_threads):
        out[i] = <real> c_erf(<double> x[i])


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
