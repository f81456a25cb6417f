# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Cross-entropy with class-index targets (sandbox/functional/_loss.py): the two steps
# numpy has no fast form for, picking each element's target class along the class
# axis and the gradient that differs at it.  And the pointwise losses reduced to a sum
# (sandbox/array/pointwise_loss.py): MSE, L1 and binary cross-entropy on logits (with
# its weights), their values and input gradients in one pass each.  Kernel contract:
# pyx/fused.pxd; every element is one iteration's, and the sums run over chunks the
# caller fixes, so results do not depend on the thread count.  setup.py compiles this
# file with -ffp-contract=off (the cross-entropy gradient's s - prob * s rounds as
# numpy's separate multiply and subtract) and -fno-trapping-math (the losses' selects
# become vector blends).

from cython.parallel cimport prange

from fused cimport real

cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from "vec_math.h":
    pass  # sb_expf, sb_exp, the sigmoid and log1p on [0, 1], used by the C below

cdef extern from "lane_sums.h":
    pass  # SB_BLOCK_SUM: the losses' block sums

cdef extern from *:
    """
    /* One block of points of one sample: out[c, p] = s[p] - q[c, p] * s[p] where
     * t[p] == c, else -(q[c, p] * s[p]); rows of the classes are ``stride`` apart.
     * Every class row first (a plain vector loop), then the target entries again: there
     * s + out[k] = s + (-(q s)), which IEEE 754 defines as s - q s (the same bits, NaN
     * and signed zeros included), so the scattered pass takes no exp (it had computed q
     * again, one scalar exp a point: 145 -> 51 us at 1 thread, 74 -> 29 at 2, for a
     * (8, 2, 64, 64) float32 log-softmax, AMD EPYC family 26 model 2).  q is the softmax PROB(v) of the
     * input's entry v: the entry itself (sb_xent_grad), or the exp of a log-softmax
     * (sb_xent_grad_log: the same exp as activation.exp's kernel, so the same bits as exp
     * first, then this, without the array between). */
    #define SB_XENT_GRAD(T, S, NAME, PROB)                                              \
    SB_CLONES static void NAME##_##S(const T* restrict prob,                            \
            const Py_ssize_t* restrict t, const T* restrict s, T* restrict out,         \
            Py_ssize_t classes, Py_ssize_t stride, Py_ssize_t len) {                    \
        for (Py_ssize_t c = 0; c < classes; c++) {                                      \
            const T* restrict pc = prob + c * stride;                                   \
            T* restrict oc = out + c * stride;                                          \
            for (Py_ssize_t p = 0; p < len; p++) oc[p] = -(PROB(pc[p]) * s[p]);         \
        }                                                                               \
        for (Py_ssize_t p = 0; p < len; p++) {                                          \
            Py_ssize_t k = t[p] * stride + p;                                           \
            out[k] = s[p] + out[k]; } }
    #define SB_SAME(v) (v)
    SB_XENT_GRAD(float, f, sb_xent_grad, SB_SAME)
    SB_XENT_GRAD(double, d, sb_xent_grad, SB_SAME)
    SB_XENT_GRAD(float, f, sb_xent_grad_log, sb_expf)
    SB_XENT_GRAD(double, d, sb_xent_grad_log, sb_exp)

    /* Pointwise losses of an input v and a target w, per kind: the values of a block
     * into a buffer (one vectorised loop a kind), then their sum in lane_sums.h's lanes;
     * and the gradient in v.  MSE (v - w)^2, slope 2 (v - w); L1 |v - w|, slope
     * sign(v - w) (0 where equal, NaN stays NaN); BCE on logits max(v, 0) - v w +
     * log1p(e^-|v|) (softplus(v) - v w), slope sigmoid(v) - w. */
    #define SB_LOSS_MSE 0
    #define SB_LOSS_L1 1
    #define SB_LOSS_BCE_LOGITS 2
    #define SB_LOSS_KIND(NAME, T, S, VALUE, SLOPE)                                      \
    SB_CLONES static void sb_loss_values_##NAME##_##S(const T* restrict x,              \
            const T* restrict t, T* restrict out, Py_ssize_t n) {                       \
        for (Py_ssize_t i = 0; i < n; i++) { const T v = x[i], w = t[i]; out[i] = VALUE; } } \
    SB_CLONES static void sb_loss_grad_##NAME##_##S(const T* restrict x,                \
            const T* restrict t, T scale, T* restrict out, Py_ssize_t n) {              \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            const T v = x[i], w = t[i]; out[i] = (SLOPE) * scale; } }
    #define SB_POINTWISE_LOSS(T, S, FABS, EXP, LOG1P01)                                 \
    SB_LOSS_KIND(mse, T, S, (v - w) * (v - w), (T) 2 * (v - w))                          \
    SB_LOSS_KIND(l1, T, S, FABS(v - w), v > w ? (T) 1 : v < w ? (T) -1 : (v - w))       \
    SB_LOSS_KIND(bce, T, S, (v > 0 ? v : 0) - v * w + LOG1P01(EXP(-FABS(v))),            \
                 sb_sigmoid_value_##S(v) - w)                                            \
    /* a block's values (n <= SB_LANE_BLOCK) summed by lane_sums.h's sb_sum */          \
    SB_BLOCK_SUM(T, S)                                                                  \
    static double sb_loss_sum_##S(int kind, const T* x, const T* t, Py_ssize_t n) {     \
        T buf[SB_LANE_BLOCK];                                                           \
        if (kind == SB_LOSS_MSE) sb_loss_values_mse_##S(x, t, buf, n);                  \
        else if (kind == SB_LOSS_L1) sb_loss_values_l1_##S(x, t, buf, n);               \
        else sb_loss_values_bce_##S(x, t, buf, n);                                      \
        return sb_sum_##S(buf, n); }                                             \
    static void sb_loss_grad_##S(int kind, const T* x, const T* t, T scale, T* out,     \
            Py_ssize_t n) {                                                              \
        if (kind == SB_LOSS_MSE) sb_loss_grad_mse_##S(x, t, scale, out, n);              \
        else if (kind == SB_LOSS_L1) sb_loss_grad_l1_##S(x, t, scale, out, n);           \
        else sb_loss_grad_bce_##S(x, t, scale, out, n); }                                \
    /* BCE on logits with weights w and positive weights p (full arrays, ones where the \
     * caller has none): w ((1 - t) v + c softplus(-v)), c = 1 + (p - 1) t, softplus(-v) \
     * = max(-v, 0) + log1p(e^-|v|); slope w (c sigmoid(v) - p t) */                     \
    SB_CLONES static void sb_bcew_values_##S(const T* restrict x, const T* restrict t,  \
            const T* restrict w, const T* restrict p, T* restrict out, Py_ssize_t n) {  \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            const T v = x[i], y = t[i], c = 1 + (p[i] - 1) * y;                         \
            out[i] = w[i] * ((1 - y) * v + c * ((v < 0 ? -v : 0) + LOG1P01(EXP(-FABS(v))))); } } \
    SB_CLONES static void sb_bcew_grad_##S(const T* restrict x, const T* restrict t,    \
            const T* restrict w, const T* restrict p, T scale, T* restrict out,         \
            Py_ssize_t n) {                                                              \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            const T y = t[i], c = 1 + (p[i] - 1) * y;                                   \
            out[i] = w[i] * (c * sb_sigmoid_value_##S(x[i]) - p[i] * y) * scale; } }     \
    static double sb_bcew_sum_##S(const T* x, const T* t, const T* w, const T* p,       \
            Py_ssize_t n) {                                                              \
        T buf[SB_LANE_BLOCK];                                                            \
        sb_bcew_values_##S(x, t, w, p, buf, n);                                          \
        return sb_sum_##S(buf, n); }
    SB_POINTWISE_LOSS(float, f, fabsf, sb_expf, sb_log1p01f)
    SB_POINTWISE_LOSS(double, d, fabs, sb_exp, sb_log1p01)
    """
    void sb_xent_grad_f(const float* prob, const Py_ssize_t* t, const float* s, float* out,
                        Py_ssize_t classes, Py_ssize_t stride, Py_ssize_t len) noexcept nogil
    void sb_xent_grad_d(const double* prob, const Py_ssize_t* t, const double* s,
                        double* out, Py_ssize_t classes, Py_ssize_t stride,
                        Py_ssize_t len) noexcept nogil
    void sb_xent_grad_log_f(const float* logp, const Py_ssize_t* t, const float* s,
                            float* out, Py_ssize_t classes, Py_ssize_t stride,
                            Py_ssize_t len) noexcept nogil
    void sb_xent_grad_log_d(const double* logp, const Py_ssize_t* t, const double* s,
                            double* out, Py_ssize_t classes, Py_ssize_t stride,
                            Py_ssize_t len) noexcept nogil
    enum: SB_LANE_BLOCK
    double sb_loss_sum_f(int kind, const float* x, const float* t, Py_ssize_t n) noexcept nogil
    double sb_loss_sum_d(int kind, const double* x, const double* t,
                         Py_ssize_t n) noexcept nogil
    void sb_loss_grad_f(int kind, const float* x, const float* t, float scale, float* out,
                        Py_ssize_t n) noexcept nogil
    void sb_loss_grad_d(int kind, const double* x, const double* t, double scale,
                        double* out, Py_ssize_t n) noexcept nogil
    double sb_bcew_sum_f(const float* x, const float* t, const float* w, const float* p,
                         Py_ssize_t n) noexcept nogil
    double sb_bcew_sum_d(const double* x, const double* t, const double* w, const double* p,
                         Py_ssize_t n) noexcept nogil
    void sb_bcew_grad_f(const float* x, const float* t, const float* w, const float* p,
                        float scale, float* out, Py_ssize_t n) noexcept nogil
    void sb_bcew_grad_d(const double* x, const double* t, const double* w, const double* p,
                        double scale, double* out, Py_ssize_t n) noexcept nogil


cdef enum:
    BLOCK = 2048  # points per parallel iteration: a batch of one still splits


def take_classes(const real[:, :, ::1] x, const Py_ssize_t[:, ::1] t, real[:, ::1] out,
                 int num_threads):
    """``out[n, p] = x[n, t[n, p], p]`` (``np.take_along_axis`` on the class axis).

    x (IN) (N, C, P), t (IN) (N, P) in [0, C), out (OUT) (N, P).
    """
    cdef Py_ssize_t points = x.shape[2], blocks = (points + BLOCK - 1) // BLOCK
    cdef Py_ssize_t i, n, p, start
    if x.shape[0] == 0 or points == 0:
        return
    for i in prange(x.shape[0] * blocks, nogil=True, schedule="static",
                    num_threads=num_threads):
        n = i // blocks
        start = (i - n * blocks) * BLOCK
        for p in range(start, min(start + BLOCK, points)):
            out[n, p] = x[n, t[n, p], p]


def class_grad(const real[:, :, ::1] prob, const Py_ssize_t[:, ::1] t,
               const real[:, ::1] s, real[:, :, ::1] out, int num_threads, bint log=False):
    """Cross-entropy's input gradient from the softmax ``prob`` and ``s = -g * wt``:
    ``out[n, c, p] = s - prob * s`` at ``c == t[n, p]``, else ``-(prob * s)``; with
    ``log``, ``prob`` holds the log-softmax, whose exp is taken on the way.

    prob (IN) (N, C, P), t (IN) (N, P), s (IN) (N, P), out (OUT) (N, C, P).
    """
    cdef Py_ssize_t classes = prob.shape[1], points = prob.shape[2]
    cdef Py_ssize_t blocks = (points + BLOCK - 1) // BLOCK
    cdef Py_ssize_t i, n, start
    if prob.shape[0] == 0 or points == 0:
        return
    for i in prange(prob.shape[0] * blocks, nogil=True, schedule="static",
                    num_threads=num_threads):
        n = i // blocks
        start = (i - n * blocks) * BLOCK
        if real is float:
            (sb_xent_grad_log_f if log else sb_xent_grad_f)(
                &prob[n, 0, start], &t[n, start], &s[n, start], &out[n, 0, start], classes,
                points, min(BLOCK, points - start))
        else:
            (sb_xent_grad_log_d if log else sb_xent_grad_d)(
                &prob[n, 0, start], &t[n, start], &s[n, start], &out[n, 0, start], classes,
                points, min(BLOCK, points - start))


# -- pointwise losses: MSE, L1 and binary cross-entropy on logits, reduced -------------

#: the kinds of :func:`loss_sums` and :func:`loss_grad`
MSE, L1, BCE_LOGITS = range(3)


cdef inline double _block_sum(int kind, const real* x, const real* t, const real* w,
                              const real* p, Py_ssize_t n) noexcept nogil:
    """The sum of one block's losses (``w`` NULL: unweighted)."""
    if w != NULL:
        if real is float:
            return sb_bcew_sum_f(x, t, w, p, n)
        else:
            return sb_bcew_sum_d(x, t, w, p, n)
    if real is float:
        return sb_loss_sum_f(kind, x, t, n)
    else:
        return sb_loss_sum_d(kind, x, t, n)


def loss_sums(int kind, const real[::1] x, const real[::1] t, const real[::1] w,
              const real[::1] p, double[::1] parts, int num_threads):
    """``parts[k]`` = the sum of the losses of chunk ``k`` of the elements (the chunks:
    ``parts``' length, fixed by the caller, not by the threads), each chunk's in 16 lanes
    of ``real`` over blocks of SB_LANE_BLOCK, each block's added in double: the caller adds
    the parts in order.

    x, t (IN) (n,), parts (OUT) (chunks,).  ``kind``: :data:`MSE`, :data:`L1` or
    :data:`BCE_LOGITS`.  ``w``, ``p`` (IN): empty, or for BCE_LOGITS the weights and
    positive weights as full arrays (ones where there are none): ``w ((1 - t) x + (1 +
    (p - 1) t) softplus(-x))``.
    """
    cdef Py_ssize_t n = x.shape[0], chunks = parts.shape[0], k, b, first, last
    cdef bint weighted = w.shape[0] > 0
    cdef double total
    for k in prange(chunks, nogil=True, schedule="static", num_threads=num_threads):
        first = n * k // chunks
        last = n * (k + 1) // chunks
        total = 0
        b = first
        while b < last:
            total = total + _block_sum(kind, &x[b], &t[b], &w[b] if weighted else NULL,
                                       &p[b] if weighted else NULL,
                                       min(SB_LANE_BLOCK, last - b))
            b = b + SB_LANE_BLOCK
        parts[k] = total


cdef inline void _block_grad(int kind, const real* x, const real* t, const real* w,
                             const real* p, real scale, real* out,
                             Py_ssize_t n) noexcept nogil:
    """One block of the input gradient (``w`` NULL: unweighted)."""
    if w != NULL:
        if real is float:
            sb_bcew_grad_f(x, t, w, p, scale, out, n)
        else:
            sb_bcew_grad_d(x, t, w, p, scale, out, n)
    elif real is float:
        sb_loss_grad_f(kind, x, t, scale, out, n)
    else:
        sb_loss_grad_d(kind, x, t, scale, out, n)


def loss_grad(int kind, const real[::1] x, const real[::1] t, const real[::1] w,
              const real[::1] p, real scale, real[::1] out, int num_threads):
    """``out = scale * d loss / d x``, elementwise (see :func:`loss_sums`; weighted:
    ``scale * w ((1 + (p - 1) t) sigmoid(x) - p t)``).

    x, t (IN) (n,), w, p (IN) empty or (n,), out (OUT) (n,).
    """
    cdef Py_ssize_t n = x.shape[0], blocks = (n + BLOCK - 1) // BLOCK, i, start
    cdef bint weighted = w.shape[0] > 0
    for i in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = i * BLOCK
        _block_grad(kind, &x[start], &t[start], &w[start] if weighted else NULL,
                    &p[start] if weighted else NULL, scale, &out[start],
                    min(BLOCK, n - start))
