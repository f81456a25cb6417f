# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Normalisation kernels: per-channel moments and fused per-channel affine passes.
# See pyx/fused.pxd for the kernel contract (no validation, const C-contiguous
# inputs, nogil prange with a Python-computed thread count, every iteration
# writes only its own output -> bitwise identical for any thread count).
#
# Arrays are viewed as (N, C, L): batch norm reduces each channel c over N and L;
# group norm each group of C / G consecutive planes of a sample (its own kernels,
# below); layer norm rows (R, L).  Every sum runs lane_sums.h's 16 lanes of the element type
# over blocks of SB_LANE_BLOCK elements of a plane or row, and adds the blocks in
# double (the accumulation type; a lane holds at most 64 terms).

from cython.parallel cimport parallel, prange
from libc.math cimport sqrt
from libc.stdlib cimport free, malloc
from fused cimport real


# The inner loops in C, each with an AVX2 clone chosen at load time (gcc
# target_clones; the baseline x86-64 build vectorises at most 2 doubles or 4 floats
# wide).  Every clone runs the same operations in the same order, so gives the same
# bits; element i of a block always lands in lane i % 16.
cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from "lane_sums.h":
    pass  # SB_LANES, SB_LANE_SUM, SB_LANE_FOLD: the sums' lanes and their fold

cdef extern from *:
    """
    #include <string.h>
    /* Sums in 16 lanes of T by blocks of SB_LANE_BLOCK, each block folded and added in
     * double (lane_sums.h): sum(p) (SB_BLOCK_SUM); sum((p - m)^2) about the mean rounded
     * to T, m; and, in one pass, sum(gm) and sum(gm * x) with gm = g * (x * ms + mb > 0)
     * when masked (batch norm + ReLU's backward: ReLU's mask recomputed from the input
     * with the forward's scale ms and shift mb, so the forward's bits, as a product with 1
     * or +0, as ReLU's own backward computes it), else gm = g. */
    /* g's lanes at `at` times 1 or +0 where x * ms + mb (batch norm's output before the
     * ReLU; -ffp-contract=off keeps it unfused, as in the forward) is > 0 or not */
    #define SB_MASKED(S, g, x, at, ms, mb) ({                                               \
        const sb_lane_bits_##S one_ = (sb_lane_bits_##S) ((sb_lanes_##S) {0} + 1);        \
        SB_LANE_LOAD(S, (g) + (at)) * (sb_lanes_##S) (                                      \
            one_ & (sb_lane_bits_##S) (SB_LANE_LOAD(S, (x) + (at)) * (ms) + (mb) > 0)); })
    #define SB_NORM(T, S)                                                                   \
    SB_BLOCK_SUM(T, S)                                                                  \
    SB_CLONES static double sb_sq_dev_##S(const T* restrict p, Py_ssize_t n, T m) {       \
        double total = 0;                                                                   \
        SB_BLOCKS(n, SB_LANES(T, S, s);                                                     \
            SB_LANE_SUM(T, s, b, end,                                                       \
                        (SB_LANE_LOAD(S, p + at) - m) * (SB_LANE_LOAD(S, p + at) - m),      \
                        (p[i] - m) * (p[i] - m));                                           \
            total += SB_LANE_FOLD(T, s));                                                   \
        return total; }                                                                     \
    SB_CLONES static void sb_plane_sums_##S(const T* restrict g, const T* restrict x,      \
            Py_ssize_t n, T ms, T mb, int masked, double* sum_g, double* sum_gx) {          \
        double total_g = 0, total_gx = 0;                                                   \
        SB_BLOCKS(n, SB_LANES(T, S, a); SB_LANES(T, S, c);                                  \
            if (masked)                                                                     \
                SB_LANE_SUM2(T, a, c, b, end, SB_MASKED(S, g, x, at, ms, mb),              \
                             SB_MASKED(S, g, x, at, ms, mb) * SB_LANE_LOAD(S, x + at),     \
                             g[i] * (T) (x[i] * ms + mb > 0),                               \
                             g[i] * (T) (x[i] * ms + mb > 0) * x[i]);                       \
            else                                                                            \
                SB_LANE_SUM2(T, a, c, b, end, SB_LANE_LOAD(S, g + at),                      \
                             SB_LANE_LOAD(S, g + at) * SB_LANE_LOAD(S, x + at),             \
                             g[i], g[i] * x[i]);                                            \
            total_g += SB_LANE_FOLD(T, a);                                                  \
            total_gx += SB_LANE_FOLD(T, c));                                                \
        *sum_g = total_g;                                                                   \
        *sum_gx = total_gx; }                                                               \
    SB_CLONES static void sb_affine_##S(const T* restrict x, T* restrict out, T a, T b, \
            Py_ssize_t n) {                                                             \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = x[i] * a + b; }                     \
    SB_CLONES static void sb_affine_relu_##S(const T* restrict x, T* restrict out, T a, \
            T b, Py_ssize_t n) {                                                        \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            T v = x[i] * a + b; out[i] = v < 0 ? 0 : v; } }                             \
    SB_CLONES static void sb_affine2_##S(const T* restrict g, const T* restrict x,     \
            T* restrict out, T a, T b, T c, Py_ssize_t n) {                             \
        for (Py_ssize_t i = 0; i < n; i++) out[i] = a * g[i] + b * x[i] + c; }          \
    SB_CLONES static void sb_masked_affine2_##S(const T* restrict g, const T* restrict x, \
            T* restrict out, T ms, T mb, T a, T b, T c, Py_ssize_t n) {                   \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            T gm = g[i] * (T) (x[i] * ms + mb > 0); out[i] = a * gm + b * x[i] + c; } }
    SB_NORM(float, f)
    SB_NORM(double, d)

    /* Layer norm along a row of n: y = (x - m) s w + b (w, b optional: NULL), and its
     * input gradient gx = s (d - a - xhat c) with d = g w, xhat = (x - m) s, where a and
     * c are the row's means of d and of d xhat.  Each sum runs lane_sums.h's 16 lanes of
     * T over blocks of SB_LANE_BLOCK elements, each block's added in double. */
    #define SB_LAYER_NORM(T, S)                                                                 \
    SB_CLONES static void sb_ln_stats_##S(const T* restrict x, Py_ssize_t n, double* mean,      \
            double* sq_dev) {                                                                   \
        *mean = sb_sum_##S(x, n) / n;                                                           \
        *sq_dev = sb_sq_dev_##S(x, n, (T) *mean); }                                             \
    SB_CLONES static void sb_ln_row_##S(const T* restrict x, T* restrict y, T m, T s,           \
            const T* restrict w, const T* restrict b, Py_ssize_t n) {                           \
        if (w && b) { for (Py_ssize_t i = 0; i < n; i++) y[i] = (x[i] - m) * s * w[i] + b[i]; } \
        else if (w) { for (Py_ssize_t i = 0; i < n; i++) y[i] = (x[i] - m) * s * w[i]; }        \
        else if (b) { for (Py_ssize_t i = 0; i < n; i++) y[i] = (x[i] - m) * s + b[i]; }        \
        else { for (Py_ssize_t i = 0; i < n; i++) y[i] = (x[i] - m) * s; } }                    \
    SB_CLONES static void sb_ln_row_sums_##S(const T* restrict g, const T* restrict x,          \
            T m, T s, const T* restrict w, Py_ssize_t n, double* sum_d, double* sum_dx) {       \
        double total_d = 0, total_dx = 0;                                                       \
        SB_BLOCKS(n, SB_LANES(T, S, a); SB_LANES(T, S, c);                                      \
            if (w)                                                                              \
                SB_LANE_SUM2(T, a, c, b, end,                                                   \
                             SB_LANE_LOAD(S, g + at) * SB_LANE_LOAD(S, w + at),                 \
                             SB_LANE_LOAD(S, g + at) * SB_LANE_LOAD(S, w + at)                  \
                                 * ((SB_LANE_LOAD(S, x + at) - m) * s),                         \
                             g[i] * w[i], g[i] * w[i] * ((x[i] - m) * s));                      \
            else                                                                                \
                SB_LANE_SUM2(T, a, c, b, end, SB_LANE_LOAD(S, g + at),                          \
                             SB_LANE_LOAD(S, g + at) * ((SB_LANE_LOAD(S, x + at) - m) * s),     \
                             g[i], g[i] * ((x[i] - m) * s));                                    \
            total_d += SB_LANE_FOLD(T, a);                                                      \
            total_dx += SB_LANE_FOLD(T, c));                                                    \
        *sum_d = total_d;                                                                       \
        *sum_dx = total_dx; }                                                                   \
    SB_CLONES static void sb_ln_row_grad_##S(const T* restrict g, const T* restrict x,          \
            T m, T s, const T* restrict w, T a, T c, T* restrict gx, Py_ssize_t n) {            \
        for (Py_ssize_t i = 0; i < n; i++) {                                                    \
            T d = w ? g[i] * w[i] : g[i];                                                       \
            gx[i] = s * (d - a - ((x[i] - m) * s) * c); } }                                     \
    SB_CLONES static void sb_ln_cols_##S(const T* restrict g, const T* restrict x,              \
            T m, T s, T* restrict gw, T* restrict gb, Py_ssize_t n) {                           \
        for (Py_ssize_t i = 0; i < n; i++) {                                                    \
            gw[i] += g[i] * ((x[i] - m) * s); gb[i] += g[i]; } }                                \
    SB_CLONES static void sb_ln_flush_##S(T* restrict block, double* restrict parts,            \
            Py_ssize_t n) {                                                                     \
        for (Py_ssize_t i = 0; i < n; i++) { parts[i] += block[i]; block[i] = 0; } }
    SB_LAYER_NORM(float, f)
    SB_LAYER_NORM(double, d)
    """
    double sb_sum_f(const float*, Py_ssize_t) noexcept nogil
    double sb_sum_d(const double*, Py_ssize_t) noexcept nogil
    double sb_sq_dev_f(const float*, Py_ssize_t, float) noexcept nogil
    double sb_sq_dev_d(const double*, Py_ssize_t, double) noexcept nogil
    void sb_plane_sums_f(const float*, const float*, Py_ssize_t, float, float, int, double*,
                         double*) noexcept nogil
    void sb_plane_sums_d(const double*, const double*, Py_ssize_t, double, double, int,
                         double*, double*) noexcept nogil
    void sb_affine_f(const float*, float*, float, float, Py_ssize_t) noexcept nogil
    void sb_affine_d(const double*, double*, double, double, Py_ssize_t) noexcept nogil
    void sb_affine_relu_f(const float*, float*, float, float, Py_ssize_t) noexcept nogil
    void sb_affine_relu_d(const double*, double*, double, double, Py_ssize_t) noexcept nogil
    void sb_affine2_f(const float*, const float*, float*, float, float, float,
                      Py_ssize_t) noexcept nogil
    void sb_affine2_d(const double*, const double*, double*, double, double, double,
                      Py_ssize_t) noexcept nogil
    void sb_masked_affine2_f(const float*, const float*, float*, float, float, float, float,
                             float, Py_ssize_t) noexcept nogil
    void sb_masked_affine2_d(const double*, const double*, double*, double, double, double,
                             double, double, Py_ssize_t) noexcept nogil
    void sb_ln_stats_f(const float*, Py_ssize_t, double*, double*) noexcept nogil
    void sb_ln_stats_d(const double*, Py_ssize_t, double*, double*) noexcept nogil
    void sb_ln_row_f(const float*, float*, float, float, const float*, const float*,
                     Py_ssize_t) noexcept nogil
    void sb_ln_row_d(const double*, double*, double, double, const double*, const double*,
                     Py_ssize_t) noexcept nogil
    void sb_ln_row_sums_f(const float*, const float*, float, float, const float*, Py_ssize_t,
                          double*, double*) noexcept nogil
    void sb_ln_row_sums_d(const double*, const double*, double, double, const double*,
                          Py_ssize_t, double*, double*) noexcept nogil
    void sb_ln_row_grad_f(const float*, const float*, float, float, const float*, float, float,
                          float*, Py_ssize_t) noexcept nogil
    void sb_ln_row_grad_d(const double*, const double*, double, double, const double*, double,
                          double, double*, Py_ssize_t) noexcept nogil
    void sb_ln_cols_f(const float*, const float*, float, float, float*, float*,
                      Py_ssize_t) noexcept nogil
    void sb_ln_cols_d(const double*, const double*, double, double, double*, double*,
                      Py_ssize_t) noexcept nogil
    void sb_ln_flush_f(float*, double*, Py_ssize_t) noexcept nogil
    void sb_ln_flush_d(double*, double*, Py_ssize_t) noexcept nogil


cdef inline double _sum(const real* p, Py_ssize_t n) noexcept nogil:
    if real is float:
        return sb_sum_f(p, n)
    else:
        return sb_sum_d(p, n)


cdef inline double _sq_dev(const real* p, Py_ssize_t n, real m) noexcept nogil:
    """sum((p - m)**2)."""
    if real is float:
        return sb_sq_dev_f(p, n, m)
    else:
        return sb_sq_dev_d(p, n, m)


cdef inline double _moments(const real[:, :, ::1] x, Py_ssize_t c, double* var) noexcept nogil:
    """Mean (returned) and biased variance (``var``) of channel ``c`` of ``x``, two passes:
    the sum, then the squared deviations from the mean rounded to ``real``."""
    cdef Py_ssize_t n_batch = x.shape[0], length = x.shape[2]
    cdef Py_ssize_t n
    cdef double s = 0, mu, count = <double> (n_batch * length)
    cdef real m
    for n in range(n_batch):
        s = s + _sum(&x[n, c, 0], length)
    mu = s / count
    m = <real> mu
    s = 0
    for n in range(n_batch):
        s = s + _sq_dev(&x[n, c, 0], length, m)
    var[0] = s / count
    return mu


cdef inline double _in_order(const double* part, Py_ssize_t n_batch, Py_ssize_t n_chan,
                             Py_ssize_t c) noexcept nogil:
    """Channel ``c``'s plane values ``part[n * n_chan + c]`` added in sample order, as
    :func:`_moments` and :func:`_sums` add their planes' sums."""
    cdef Py_ssize_t n
    cdef double s = 0
    for n in range(n_batch):
        s = s + part[n * n_chan + c]
    return s


cdef double* _plane_scratch(Py_ssize_t count) except NULL:
    """``count`` doubles for the per-plane sums (MemoryError where they cannot be had)."""
    cdef double* p = <double*> malloc((count if count > 0 else 1) * sizeof(double))
    if p == NULL:
        raise MemoryError("batch norm: could not allocate its per-plane sums")
    return p


def channel_moments(const real[:, :, ::1] x, double[::1] mean, double[::1] var,
                    int num_threads):
    """Per-channel mean and biased variance of ``x`` (N, C, L), two passes, parallel over C.

    Arguments: ``x`` (IN), ``mean`` (OUT), ``var`` (OUT), ``num_threads`` (IN).
    """
    cdef Py_ssize_t c
    cdef double v
    with nogil:
        for c in prange(x.shape[1], schedule="static", num_threads=num_threads):
            v = 0  # assigned in the loop: private to each thread
            mean[c] = _moments(x, c, &v)
            var[c] = v


cdef inline void _plane_sums(const real* g, const real* x, Py_ssize_t n, real ms, real mb,
                             bint masked, double* sum_g, double* sum_gx) noexcept nogil:
    """``sum(gm)`` and ``sum(gm * x)`` of ``n`` values in one pass, ``gm = g * (x * ms + mb
    > 0)`` when ``masked``, else ``g``."""
    if real is float:
        sb_plane_sums_f(g, x, n, ms, mb, masked, sum_g, sum_gx)
    else:
        sb_plane_sums_d(g, x, n, ms, mb, masked, sum_g, sum_gx)


cdef inline double _sums(const real[:, :, ::1] g, const real[:, :, ::1] x, real ms, real mb,
                         bint masked, Py_ssize_t c, double* sum_gx) noexcept nogil:
    """``sum(gm)`` (returned) and ``sum(gm * x)`` (``sum_gx``) of channel ``c`` in one pass
    over each plane, with ``gm = g * (x * ms + mb > 0)`` when ``masked``, else ``g``."""
    cdef Py_ssize_t n, length = g.shape[2]
    cdef double sg = 0, sgx = 0, plane_g, plane_gx
    for n in range(g.shape[0]):
        _plane_sums(&g[n, c, 0], &x[n, c, 0], length, ms, mb, masked, &plane_g, &plane_gx)
        sg = sg + plane_g
        sgx = sgx + plane_gx
    sum_gx[0] = sgx
    return sg


def channel_sums(const real[:, :, ::1] g, const real[:, :, ::1] x, double[::1] sum_g,
                 double[::1] sum_gx, int num_threads):
    """Per-channel ``sum(g)`` and ``sum(g * x)`` of (N, C, L) arrays, parallel over C.

    Arguments: ``g`` (IN), ``x`` (IN), ``sum_g`` (OUT), ``sum_gx`` (OUT), ``num_threads``
    (IN).
    """
    cdef Py_ssize_t c
    cdef double sgx
    with nogil:
        for c in prange(g.shape[1], schedule="static", num_threads=num_threads):
            sgx = 0  # assigned in the loop: private to each thread
            sum_g[c] = _sums(g, x, 0, 0, False, c, &sgx)
            sum_gx[c] = sgx


cdef inline void _affine(const real* x, real* out, real a, real b, Py_ssize_t n,
                         bint relu) noexcept nogil:
    """``out = x * a + b``; with ``relu``, ``max(., 0)`` of it (NaN propagates)."""
    if real is float:
        if relu:
            sb_affine_relu_f(x, out, a, b, n)
        else:
            sb_affine_f(x, out, a, b, n)
    else:
        if relu:
            sb_affine_relu_d(x, out, a, b, n)
        else:
            sb_affine_d(x, out, a, b, n)


def affine(const real[:, :, ::1] x, const real[::1] scale, const real[::1] shift,
           real[:, :, ::1] out, int num_threads, bint relu=False):
    """``out[n, c, l] = x[n, c, l] * scale[c] + shift[c]``, parallel over (n, c) planes;
    with ``relu``, ``max(., 0)`` of it (batch norm + ReLU, below).

    Arguments: ``x`` (IN), ``scale`` (IN), ``shift`` (IN), ``out`` (OUT), ``num_threads``
    (IN), ``relu`` (IN).
    """
    cdef Py_ssize_t n_chan = x.shape[1], length = x.shape[2]
    cdef Py_ssize_t plane, n, c
    with nogil:
        for plane in prange(x.shape[0] * n_chan, schedule="static", num_threads=num_threads):
            n = plane // n_chan
            c = plane - n * n_chan
            _affine(&x[n, c, 0], &out[n, c, 0], scale[c], shift[c], length, relu)


cdef inline void _affine2(const real* g, const real* x, real* out, real ms, real mb, real a,
                          real b, real c, Py_ssize_t n, bint masked) noexcept nogil:
    """``out = a * g + b * x + c``; with ``masked``, ``g * (x * ms + mb > 0)`` in place of
    ``g``."""
    if real is float:
        if masked:
            sb_masked_affine2_f(g, x, out, ms, mb, a, b, c, n)
        else:
            sb_affine2_f(g, x, out, a, b, c, n)
    else:
        if masked:
            sb_masked_affine2_d(g, x, out, ms, mb, a, b, c, n)
        else:
            sb_affine2_d(g, x, out, a, b, c, n)


def affine2(const real[:, :, ::1] g, const real[:, :, ::1] x, const real[::1] mask_scale,
            const real[::1] mask_shift, const real[::1] a, const real[::1] b,
            const real[::1] shift, real[:, :, ::1] out, int num_threads):
    """``out = a[c] * g + b[c] * x + shift[c]`` (the batch-norm input gradient), per plane;
    with ``mask_scale`` and ``mask_shift`` (not None), ``g * (x * mask_scale[c] +
    mask_shift[c] > 0)`` in place of ``g`` (batch norm + ReLU, below).

    Arguments: ``g`` (IN), ``x`` (IN), ``mask_scale``, ``mask_shift`` (IN, or None),
    ``a``, ``b``, ``shift`` (IN), ``out`` (OUT), ``num_threads`` (IN).
    """
    cdef Py_ssize_t n_chan = g.shape[1], length = g.shape[2]
    cdef Py_ssize_t plane, n, c
    cdef bint masked = mask_scale is not None
    with nogil:
        for plane in prange(g.shape[0] * n_chan, schedule="static", num_threads=num_threads):
            n = plane // n_chan
            c = plane - n * n_chan
            _affine2(&g[n, c, 0], &x[n, c, 0], &out[n, c, 0],
                     mask_scale[c] if masked else 0, mask_shift[c] if masked else 0,
                     a[c], b[c], shift[c], length, masked)


# ---------------------------------------------------------------- batch norm + ReLU
#
# The fused kernels (affine with ``relu``; affine2 and the sums with ReLU's mask) compute
# exactly what the unfused sequence computes (affine, then max(., 0); ReLU backward as
# g * (y > 0), then the sums and affine2), with the same accumulation order, so the
# results are bitwise identical to it.  The backward does not read the output y: its mask
# y > 0 is x * scale + shift > 0 with the forward's scale and shift, recomputed in the
# same float operations (no fused multiply-add in this file), which is the same mask and
# saves a third of the backward's memory traffic.  The mask is a multiplication, not a
# branch: about half the signs are random, and a mispredicted branch per element made
# the backward several times slower.


def masked_channel_sums(const real[:, :, ::1] g, const real[:, :, ::1] x,
                        const real[::1] mask_scale, const real[::1] mask_shift,
                        double[::1] sum_g, double[::1] sum_gx, int num_threads):
    """Per-channel ``sum(gm)`` and ``sum(gm * x)``, ``gm = g * (x * mask_scale[c] +
    mask_shift[c] > 0)``, parallel over C: :func:`channel_sums` of ReLU's input gradient,
    which is never stored.

    Arguments: ``g`` (IN), ``x`` (IN), ``mask_scale`` (IN), ``mask_shift`` (IN), ``sum_g``
    (OUT), ``sum_gx`` (OUT), ``num_threads`` (IN).
    """
    cdef Py_ssize_t c
    cdef double sgx
    with nogil:
        for c in prange(g.shape[1], schedule="static", num_threads=num_threads):
            sgx = 0  # assigned in the loop: private to each thread
            sum_g[c] = _sums(g, x, mask_scale[c], mask_shift[c], True, c, &sgx)
            sum_gx[c] = sgx


# The per-channel scalars of batch norm, each a few float operations on C values: in numpy
# they were about 15 calls of a microsecond each per layer and pass.  Computed in the
# same parallel iteration as the channel's moments or sums, the whole forward or
# backward is one parallel region (two loops, one barrier) instead of three kernels.  These replay the
# numpy expressions of sandbox/array/norm.py operation by operation, in the same types
# (a Python float meets a float32 array as float32: NEP 50; float32 meets float64 as
# float64), so the results are the same bits.  setup.py builds this file with
# -ffp-contract=off: a fused multiply-add would round differently.


cdef inline real _bn_scale(const real[::1] invstd, const real[::1] weight, bint has_weight,
                           Py_ssize_t c) noexcept nogil:
    """Channel ``c``'s ``scale = invstd * weight`` (``invstd`` without a weight): the
    forward's affine and the backward's ``a``."""
    return invstd[c] * weight[c] if has_weight else invstd[c]


cdef inline real _bn_shift(const real[::1] mean, const real[::1] bias, bint has_bias,
                           real scale, Py_ssize_t c) noexcept nogil:
    """Channel ``c``'s ``shift = bias - mean * scale`` (``-mean * scale`` without a bias)."""
    return bias[c] - mean[c] * scale if has_bias else -mean[c] * scale


cdef inline void _train_scalars(Py_ssize_t c, double mean64, double var64, double eps,
                                const real[::1] weight, const real[::1] bias,
                                real[::1] running_mean, real[::1] running_var, real keep,
                                real mom, real unbias, real[::1] mean, real[::1] invstd,
                                real[::1] scale, real[::1] shift, bint has_weight,
                                bint has_bias, bint has_running_mean,
                                bint has_running_var) noexcept nogil:
    """Batch norm in training, channel ``c`` from its moments: ``mean``, ``invstd``, the
    affine ``scale`` and ``shift`` (OUT) and the running statistics updated in place
    (IN/OUT) with ``momentum`` (``keep = 1 - momentum``, ``mom``, ``unbias = momentum *
    m / (m - 1)`` over ``m`` values a channel).  Each of ``weight``, ``bias``,
    ``running_mean`` and ``running_var`` is used only when its flag says it is given."""
    mean[c] = <real> mean64
    invstd[c] = <real> (1 / sqrt(var64 + eps))
    if has_running_mean:
        running_mean[c] = running_mean[c] * keep
        running_mean[c] = running_mean[c] + mom * mean[c]
    if has_running_var:
        running_var[c] = running_var[c] * keep
        running_var[c] = running_var[c] + unbias * <real> var64
    scale[c] = _bn_scale(invstd, weight, has_weight, c)
    shift[c] = _bn_shift(mean, bias, has_bias, scale[c], c)


def train_forward(const real[:, :, ::1] x, double eps, const real[::1] weight,
                  const real[::1] bias, real[::1] running_mean, real[::1] running_var,
                  double momentum, real[::1] mean, real[::1] invstd, real[::1] scale,
                  real[::1] shift, bint has_weight, bint has_bias, bint has_running_mean,
                  bint has_running_var, real[:, :, ::1] out, int num_threads, bint relu):
    """Batch norm (with ``relu``, + ReLU) in training in one parallel region:
    :func:`channel_moments`' operations, each plane's sums by plane (the planes shared as
    the output's are, so that a thread reads the samples it writes), each channel's
    added in sample order and its scalars (``_train_scalars``) by channel, then ``out`` =
    :func:`affine` of ``x`` over its planes.  ``x`` (IN), ``out`` (OUT), the others as
    for ``_train_scalars``."""
    cdef Py_ssize_t n_batch = x.shape[0], n_chan = x.shape[1], length = x.shape[2]
    cdef Py_ssize_t m = n_batch * length, planes = n_batch * n_chan
    cdef Py_ssize_t c, plane, n
    cdef double count = <double> m
    cdef real keep = <real> (1 - momentum), mom = <real> momentum
    cdef real unbias = <real> (momentum * m / (m - 1))
    cdef double* part = _plane_scratch(planes + n_chan)
    cdef double* mu = part + planes  # each channel's mean
    with nogil, parallel(num_threads=num_threads):
        for plane in prange(planes, schedule="static"):
            n = plane // n_chan
            c = plane - n * n_chan
            part[plane] = _sum(&x[n, c, 0], length)
        for c in prange(n_chan, schedule="static"):
            mu[c] = _in_order(part, n_batch, n_chan, c) / count
        for plane in prange(planes, schedule="static"):  # deviations from the rounded mean
            n = plane // n_chan
            c = plane - n * n_chan
            part[plane] = _sq_dev(&x[n, c, 0], length, <real> mu[c])
        for c in prange(n_chan, schedule="static"):
            _train_scalars(c, mu[c], _in_order(part, n_batch, n_chan, c) / count, eps, weight,
                           bias, running_mean, running_var, keep, mom, unbias, mean, invstd,
                           scale, shift, has_weight, has_bias, has_running_mean,
                           has_running_var)
        for plane in prange(planes, schedule="static"):
            n = plane // n_chan
            c = plane - n * n_chan
            _affine(&x[n, c, 0], &out[n, c, 0], scale[c], shift[c], length, relu)
    free(part)


cdef inline void _backward_scalars(Py_ssize_t c, double sum_g64, double sum_gx64,
                                   const real[::1] mean, const real[::1] invstd,
                                   const real[::1] weight, real fm, bint has_weight,
                                   bint training, real[::1] sum_g, real[::1] sum_gxhat,
                                   real[::1] a, real[::1] b, real[::1] shift) noexcept nogil:
    """Batch norm's backward, channel ``c`` from its sums: ``sum_g``, ``sum_gxhat`` (the
    bias and weight gradients) and the coefficients of ``dx = a*g + b*x + shift`` (all
    OUT); ``b`` and ``shift`` are 0 outside ``training`` (constant statistics)."""
    sum_g[c] = <real> sum_g64
    # sum(g * xhat) = invstd * (sum(g * x) - mean * sum(g)), in float64
    sum_gxhat[c] = <real> (<double> invstd[c] * (sum_gx64 - <double> mean[c] * sum_g64))
    a[c] = _bn_scale(invstd, weight, has_weight, c)
    if training:
        b[c] = -a[c] * invstd[c] * sum_gxhat[c] / fm
        shift[c] = -a[c] * sum_g[c] / fm - b[c] * mean[c]
    else:
        b[c] = 0
        shift[c] = 0


def backward_fused(const real[:, :, ::1] g, const real[:, :, ::1] x, const real[::1] mean,
                   const real[::1] invstd, const real[::1] weight, const real[::1] bias,
                   bint has_weight, bint has_bias, bint relu, bint training,
                   real[::1] sum_g, real[::1] sum_gxhat, real[::1] a, real[::1] b,
                   real[::1] shift, real[::1] mask_shift, real[:, :, ::1] gx,
                   int num_threads):
    """Batch norm's backward (with ``relu``, of batch norm + ReLU) in one parallel region:
    :func:`channel_sums` or :func:`masked_channel_sums`' operations (the mask's shift ``bias
    - mean * a`` kept in ``mask_shift``), each plane's sums by plane (shared as the input
    gradient's planes are), each channel's added in sample order and its scalars
    (``_backward_scalars``) by channel, then, when ``gx`` is not None, ``gx`` =
    :func:`affine2` over the planes.  ``g``, ``x`` (IN), ``bias`` (IN,
    read when ``has_bias``), ``mask_shift`` (scratch), ``gx`` (OUT), the others as for
    ``_backward_scalars``."""
    cdef Py_ssize_t n_batch = g.shape[0], n_chan = g.shape[1], length = g.shape[2]
    cdef Py_ssize_t planes = n_batch * n_chan
    cdef Py_ssize_t c, plane, n
    cdef real ms
    cdef bint grad_input = gx is not None
    cdef real fm = <real> (n_batch * length)
    cdef double* part_g = _plane_scratch(2 * planes)
    cdef double* part_gx = part_g + planes
    with nogil, parallel(num_threads=num_threads):
        if relu:  # the forward's scale and shift (_train_scalars'), the same operations
            for c in prange(n_chan, schedule="static"):
                mask_shift[c] = _bn_shift(mean, bias, has_bias,
                                          _bn_scale(invstd, weight, has_weight, c), c)
        for plane in prange(planes, schedule="static"):
            n = plane // n_chan
            c = plane - n * n_chan
            ms = _bn_scale(invstd, weight, has_weight, c) if relu else 0
            _plane_sums(&g[n, c, 0], &x[n, c, 0], length, ms, mask_shift[c] if relu else 0,
                        relu, &part_g[plane], &part_gx[plane])
        for c in prange(n_chan, schedule="static"):
            _backward_scalars(c, _in_order(part_g, n_batch, n_chan, c),
                              _in_order(part_gx, n_batch, n_chan, c), mean, invstd, weight, fm,
                              has_weight, training, sum_g, sum_gxhat, a, b, shift)
        if grad_input:
            for plane in prange(planes, schedule="static"):
                n = plane // n_chan
                c = plane - n * n_chan
                # a[c] is the forward's scale (_bn_scale), as ms above
                _affine2(&g[n, c, 0], &x[n, c, 0], &gx[n, c, 0], a[c],
                         mask_shift[c] if relu else 0, a[c], b[c], shift[c], length, relu)
    free(part_g)


# -- group norm: (N, C, L) in groups of C / G channels of one sample -----------------------
#
# A group of a sample is C / G consecutive planes, one contiguous span of (C / G) * L
# values: one iteration of the loop over the N * G groups takes its statistics, its
# per-channel scalars and its output (or input gradient) planes, so each whole pass is
# one parallel loop, and the result never depends on the threads.

def group_norm_forward(const real[:, :, ::1] x, Py_ssize_t num_groups, double eps,
                       const real[::1] weight, const real[::1] bias, bint has_weight,
                       bint has_bias, real[:, :, ::1] out, real[:, ::1] mean,
                       real[:, ::1] invstd, int num_threads):
    """``out = (x - mean) * invstd * weight + bias`` per group of a sample: its mean and
    ``1 / sqrt(var + eps)`` (biased variance, the sum then the squared deviations from the
    mean rounded to ``real``, as ``_moments`` takes them; in double, rounded once), then per channel ``scale = invstd * weight`` and ``shift =
    bias - mean * scale`` in ``real``, then ``x * scale + shift`` over the channel's plane.

    x (IN) (N, C, L), weight, bias (IN) (C,) or anything when their flag is False, out (OUT)
    (N, C, L), mean, invstd (OUT) (N, G).
    """
    cdef Py_ssize_t per_group = x.shape[1] // num_groups, length = x.shape[2]
    cdef Py_ssize_t span = per_group * length
    cdef Py_ssize_t group, n, g, c
    cdef double total, dev
    cdef real m, sd, scale, shift
    with nogil:
        for group in prange(x.shape[0] * num_groups, schedule="static",
                            num_threads=num_threads):
            n = group // num_groups
            g = group - n * num_groups
            total = _sum(&x[n, g * per_group, 0], span) / span
            m = <real> total
            dev = _sq_dev(&x[n, g * per_group, 0], span, m) / span
            sd = <real> (1 / sqrt(dev + eps))
            mean[n, g] = m
            invstd[n, g] = sd
            for c in range(g * per_group, (g + 1) * per_group):
                scale = sd * weight[c] if has_weight else sd
                shift = bias[c] - m * scale if has_bias else -m * scale
                _affine(&x[n, c, 0], &out[n, c, 0], scale, shift, length, False)


def group_norm_backward(const real[:, :, ::1] g, const real[:, :, ::1] x,
                        const real[:, ::1] mean, const real[:, ::1] invstd,
                        const real[::1] weight, bint has_weight, double[:, ::1] sum_g,
                        double[:, ::1] sum_gxhat, real[:, :, ::1] gx, int num_threads):
    """Group norm's backward per group of a sample: each plane's ``sum(g)`` and ``sum(g *
    x)`` (one pass), ``sum(g * xhat) = invstd * (sum(g x) - mean sum(g))``, then, when
    ``gx`` is not None, ``gx = invstd * (d - mean(d) - xhat * mean(d * xhat))`` with ``d = g
    * weight``, written ``a * g + b * x + shift`` per channel (coefficients in double,
    rounded once).

    g, x (IN) (N, C, L), mean, invstd (IN) (N, G), weight (IN) (C,) or anything when
    ``has_weight`` is False, sum_g, sum_gxhat (OUT) (N, C) per plane (the bias's and the
    weight's gradients are their sums over N), gx (OUT) (N, C, L) or None.
    """
    cdef Py_ssize_t num_groups = mean.shape[1]
    cdef Py_ssize_t per_group = g.shape[1] // num_groups, length = g.shape[2]
    cdef double count = <double> (per_group * length)
    cdef Py_ssize_t group, n, k, c
    cdef double sg, sgx, m, inv, w, mean_d, mean_dx
    cdef bint grad_input = gx is not None
    with nogil:
        for group in prange(g.shape[0] * num_groups, schedule="static",
                            num_threads=num_threads):
            n = group // num_groups
            k = group - n * num_groups
            sg = 0  # assigned in the loop (not only through their addresses): private
            sgx = 0
            m = mean[n, k]
            inv = invstd[n, k]
            mean_d = 0
            mean_dx = 0
            for c in range(k * per_group, (k + 1) * per_group):
                _plane_sums(&g[n, c, 0], &x[n, c, 0], length, 0, 0, False, &sg, &sgx)
                sum_g[n, c] = sg
                sum_gxhat[n, c] = inv * (sgx - m * sg)
                w = weight[c] if has_weight else 1
                mean_d = mean_d + sg * w
                mean_dx = mean_dx + sum_gxhat[n, c] * w
            if not grad_input:
                continue
            mean_d = mean_d / count
            mean_dx = mean_dx / count
            for c in range(k * per_group, (k + 1) * per_group):
                w = weight[c] if has_weight else 1
                _affine2(&g[n, c, 0], &x[n, c, 0], &gx[n, c, 0], 0, 0, <real> (inv * w),
                         <real> (-inv * inv * mean_dx),
                         <real> (inv * (inv * mean_dx * m - mean_d)), length, False)


# -- layer norm: rows (R, L) normalised along L, an elementwise affine over L --------------

cdef enum:
    LN_BLOCK_ROWS = 64  # rows a block of the column sums takes in ``real`` before double

cdef inline const real* _opt(const real[::1] a, bint present) noexcept nogil:
    """The data of an optional argument (NULL when absent: the kernels skip it)."""
    return &a[0] if present else NULL


def layer_norm_forward(const real[:, ::1] x, const real[::1] weight, const real[::1] bias,
                       bint has_weight, bint has_bias, double eps, real[:, ::1] out,
                       real[::1] mean, real[::1] rstd, int num_threads):
    """``out[r] = (x[r] - mean[r]) * rstd[r] * weight + bias`` for every row ``r``, the
    row's mean and ``1 / sqrt(var + eps)`` (biased variance) from sb_ln_stats' sums, rounded once.

    x (IN) (R, L), weight, bias (IN) (L,) or anything when absent, out (OUT) (R, L), mean,
    rstd (OUT) (R,).  Rows are shared among the threads.
    """
    cdef Py_ssize_t rows = x.shape[0], length = x.shape[1], r
    cdef double mu, var
    cdef real m, sd
    if rows == 0 or length == 0:
        return
    with nogil:
        for r in prange(rows, schedule="static", num_threads=num_threads):
            mu = 0  # assigned in the loop, so private (written through its address below)
            if real is float:
                sb_ln_stats_f(&x[r, 0], length, &mu, &var)
            else:
                sb_ln_stats_d(&x[r, 0], length, &mu, &var)
            var = var / length
            m = <real> mu
            sd = <real> (1 / sqrt(var + eps))
            mean[r] = m
            rstd[r] = sd
            if real is float:
                sb_ln_row_f(&x[r, 0], &out[r, 0], m, sd, _opt(weight, has_weight),
                            _opt(bias, has_bias), length)
            else:
                sb_ln_row_d(&x[r, 0], &out[r, 0], m, sd, _opt(weight, has_weight),
                            _opt(bias, has_bias), length)


cdef inline void _ln_row_grad(const real* g, const real* x, real m, real s, const real* w,
                              real* gx, Py_ssize_t n) noexcept nogil:
    """One row's input gradient: its two sums (lanes of ``real`` by blocks, then double),
    their means rounded once, then ``gx = s (d - a - xhat c)``."""
    cdef double sum_d = 0, sum_dx = 0
    if real is float:
        sb_ln_row_sums_f(g, x, m, s, w, n, &sum_d, &sum_dx)
        sb_ln_row_grad_f(g, x, m, s, w, <real> (sum_d / n), <real> (sum_dx / n), gx, n)
    else:
        sb_ln_row_sums_d(g, x, m, s, w, n, &sum_d, &sum_dx)
        sb_ln_row_grad_d(g, x, m, s, w, <real> (sum_d / n), <real> (sum_dx / n), gx, n)


cdef inline void _ln_cols(const real* g, const real* x, real m, real s, real* gw, real* gb,
                          Py_ssize_t n) noexcept nogil:
    """One row's terms added into the block's column sums ``gw += g * xhat``, ``gb += g``."""
    if real is float:
        sb_ln_cols_f(g, x, m, s, gw, gb, n)
    else:
        sb_ln_cols_d(g, x, m, s, gw, gb, n)


cdef inline void _ln_flush(real* block, double* parts, Py_ssize_t n) noexcept nogil:
    """``parts += block`` (in double), and the block zeroed."""
    if real is float:
        sb_ln_flush_f(block, parts, n)
    else:
        sb_ln_flush_d(block, parts, n)


def layer_norm_backward(const real[:, ::1] g, const real[:, ::1] x, const real[::1] mean,
                        const real[::1] rstd, const real[::1] weight, bint has_weight,
                        real[:, ::1] gx, bint want_gx, double[:, ::1] parts,
                        real[:, ::1] block, bint want_params, int num_threads):
    """The input gradient ``gx`` (``want_gx``) of :func:`layer_norm_forward`, and
    (``want_params``) per chunk of rows the column sums ``parts[k, :L] += sum g * xhat``
    and ``parts[k, L:] += sum g`` over the rows of chunk ``k`` (``parts`` (chunks, 2L),
    zeros in; the chunks are fixed by the caller, not the thread count, and added in
    order by it: the bits do not depend on the threads).  A chunk's rows go in blocks
    of LN_BLOCK_ROWS, summed in ``real`` into its row of ``block`` (chunks, 2L; zeros
    in, zeros out) and added into ``parts`` in double; a row's input gradient is made
    in the same pass, so g and x are read once.

    g, x (IN) (R, L), mean, rstd (IN) (R,), weight (IN) (L,) if ``has_weight``.
    """
    cdef Py_ssize_t rows = x.shape[0], length = x.shape[1], r, k, first, last, b, end
    cdef Py_ssize_t chunks = parts.shape[0]
    cdef const real* w = _opt(weight, has_weight)
    if rows == 0 or length == 0:
        return
    with nogil:
        if want_params:
            for k in prange(chunks, schedule="static", num_threads=num_threads):
                first = rows * k // chunks
                last = rows * (k + 1) // chunks
                b = first
                while b < last:
                    end = min(b + LN_BLOCK_ROWS, last)
                    for r in range(b, end):
                        if want_gx:
                            _ln_row_grad(&g[r, 0], &x[r, 0], mean[r], rstd[r], w, &gx[r, 0],
                                         length)
                        _ln_cols(&g[r, 0], &x[r, 0], mean[r], rstd[r], &block[k, 0],
                                 &block[k, length], length)
                    _ln_flush(&block[k, 0], &parts[k, 0], 2 * length)
                    b = end
        elif want_gx:
            for r in prange(rows, schedule="static", num_threads=num_threads):
                _ln_row_grad(&g[r, 0], &x[r, 0], mean[r], rstd[r], w, &gx[r, 0], length)
