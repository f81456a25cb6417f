# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Softmax and log-softmax along one axis, and their gradients: an array seen as
# (outer, C, inner) with the axis in the middle (inner = 1 for the last axis).
#   softmax:      y = e / s,               e = exp(x - m), m = max_c x, s = sum_c e
#   log-softmax:  y = (x - m) - log s  (x - m first: exact near m, as numpy's form)
#   gradients:    dx = y (g - sum_c g y)   and   dx = g - exp(y) sum_c g
# numpy took a pass per step (max, subtract, exp, sum, divide), on one thread: softmax
# over the channels of a (8, 16, 64, 64) map, forward + backward, ran 2.4 times
# PyTorch's time at 1 thread and 4.3 at 2 (AMD EPYC family 25 model 1 VM, python
# benchmarks/bench_ops_vs_torch.py --threads 1 2 --ops softmax).  Here each block of positions is read in one go per step,
# with pyx/vec_math.h's exp and, for the column form's log s (one a position), its
# sb_log_ge1 (s >= 1: the maximum's own term is 1), which vectorises where the C library's
# log was a call per position (log-softmax over 2 classes of a (8, 2, 128, 128) map: 0.71
# -> 0.33 ms at 1 thread).  Every position's sums run over c in order (the row form
# in 8 lanes, then the lanes in a fixed order), so the bits do not depend on the
# thread count.
# Kernel contract: pyx/fused.pxd.

from cython.parallel cimport prange
from fused cimport real

cdef extern from "simd_clones.h":
    pass

cdef extern from "vec_math.h":
    pass

cdef extern from "lane_sums.h":
    pass  # the lanes' vector types and loads

cdef extern from *:
    """
    #include <math.h>
    #include <string.h>
    /* positions a block handles at once in the column form (inner > 1) */
    #define SB_SOFTMAX_BLOCK 256

    #define SB_SOFTMAX(T, S, EXP, LOG, LOG_GE1)                                                 \\
    /* nb positions (nb <= SB_SOFTMAX_BLOCK) of C classes each, class stride `inner` */ \\
    SB_CLONES static void sb_softmax_cols_##S(const T* restrict x, T* restrict out,    \\
            Py_ssize_t C, Py_ssize_t inner, Py_ssize_t nb, int as_log) {                  \\
        T m[SB_SOFTMAX_BLOCK], s[SB_SOFTMAX_BLOCK];                                     \\
        for (Py_ssize_t j = 0; j < nb; j++) { m[j] = x[j]; s[j] = 0; }                  \\
        for (Py_ssize_t c = 1; c < C; c++) {                                            \\
            const T* xc = x + c * inner;                                                \\
            for (Py_ssize_t j = 0; j < nb; j++) m[j] = xc[j] > m[j] ? xc[j] : m[j]; }   \\
        /* two loops: a store under the flag compiled to a masked store, slow on Zen */ \\
        for (Py_ssize_t c = 0; c < C; c++) {                                            \\
            const T* xc = x + c * inner;                                                \\
            T* oc = out + c * inner;                                                    \\
            if (as_log)                                                                 \\
                for (Py_ssize_t j = 0; j < nb; j++) s[j] += EXP(xc[j] - m[j]);          \\
            else                                                                        \\
                for (Py_ssize_t j = 0; j < nb; j++) {                                   \\
                    T e = EXP(xc[j] - m[j]);                                            \\
                    oc[j] = e;                                                          \\
                    s[j] += e; } }                                                      \\
        if (as_log) {                                                                      \\
            for (Py_ssize_t j = 0; j < nb; j++) s[j] = LOG_GE1(s[j]);                      \\
            for (Py_ssize_t c = 0; c < C; c++) {                                        \\
                const T* xc = x + c * inner;                                            \\
                T* oc = out + c * inner;                                                \\
                for (Py_ssize_t j = 0; j < nb; j++) oc[j] = (xc[j] - m[j]) - s[j]; }             \\
        } else {                                                                        \\
            for (Py_ssize_t c = 0; c < C; c++) {                                        \\
                T* oc = out + c * inner;                                                \\
                for (Py_ssize_t j = 0; j < nb; j++) oc[j] = oc[j] / s[j]; } } }         \\
    SB_CLONES static void sb_softmax_grad_cols_##S(const T* restrict g,                \\
            const T* restrict y, T* restrict out, Py_ssize_t C, Py_ssize_t inner,      \\
            Py_ssize_t nb, int as_log) {                                                  \\
        T d[SB_SOFTMAX_BLOCK];                                                          \\
        for (Py_ssize_t j = 0; j < nb; j++) d[j] = 0;                                   \\
        for (Py_ssize_t c = 0; c < C; c++) {                                            \\
            const T* gc = g + c * inner;                                                \\
            const T* yc = y + c * inner;                                                \\
            if (as_log) { for (Py_ssize_t j = 0; j < nb; j++) d[j] += gc[j]; }             \\
            else { for (Py_ssize_t j = 0; j < nb; j++) d[j] += gc[j] * yc[j]; } }       \\
        for (Py_ssize_t c = 0; c < C; c++) {                                            \\
            const T* gc = g + c * inner;                                                \\
            const T* yc = y + c * inner;                                                \\
            T* oc = out + c * inner;                                                    \\
            if (as_log) { for (Py_ssize_t j = 0; j < nb; j++)                              \\
                           oc[j] = gc[j] - EXP(yc[j]) * d[j]; }                         \\
            else { for (Py_ssize_t j = 0; j < nb; j++)                                  \\
                       oc[j] = yc[j] * (gc[j] - d[j]); } } }                            \\
    /* the row form (inner = 1): C contiguous classes, reductions in 8 lanes */         \\
    SB_CLONES static void sb_softmax_row_##S(const T* restrict x, T* restrict out,     \\
            Py_ssize_t C, int as_log) {                                                   \\
        T m8[8], m, s;                                                                  \\
        Py_ssize_t c, k, body = C - C % 8;                                              \\
        m = x[0];                                                                       \\
        {   /* 8 lanes of running maxima as vectors (an array of 8 was left scalar):   \\
             * lane k keeps x > lane ? x : lane, as a bitwise select on the compare */ \\
            enum { L = 32 / sizeof(T), NV = 8 / L };                                    \\
            sb_lanes_##S mv[NV];                                                        \\
            for (int v = 0; v < NV; v++) mv[v] = (sb_lanes_##S) {0} + m;                \\
            for (c = 0; c < body; c += 8)                                               \\
                for (int v = 0; v < NV; v++) {                                          \\
                    const sb_lanes_##S xv = SB_LANE_LOAD(S, x + c + v * L);             \\
                    const sb_lane_bits_##S up = (sb_lane_bits_##S) (xv > mv[v]);                  \\
                    mv[v] = (sb_lanes_##S) ((up & (sb_lane_bits_##S) xv)                     \\
                                            | (~up & (sb_lane_bits_##S) mv[v])); }           \\
            memcpy(m8, mv, sizeof m8);                                                  \\
        }                                                                               \\
        for (k = 0; k < 8; k++) m = m8[k] > m ? m8[k] : m;                              \\
        for (c = body; c < C; c++) m = x[c] > m ? x[c] : m;                             \\
        for (c = 0; c < C; c++) out[c] = EXP(x[c] - m);  /* e, then the sum of it */    \\
        {   /* the sum's 8 lanes as vectors, as the gradient's */                      \\
            enum { L = 32 / sizeof(T), NV = 8 / L };                                    \\
            sb_lanes_##S acc[NV] = {{0}};                                               \\
            for (c = 0; c < body; c += 8)                                               \\
                for (int v = 0; v < NV; v++) acc[v] += SB_LANE_LOAD(S, out + c + v * L); \\
            s = SB_LANE_FOLD8(T, acc);                                                  \\
        }                                                                               \\
        for (c = body; c < C; c++) s += out[c];                                         \\
        if (as_log) { T ls = LOG(s); for (c = 0; c < C; c++) out[c] = (x[c] - m) - ls; }\\
        else { for (c = 0; c < C; c++) out[c] = out[c] / s; } }                         \\
    SB_CLONES static void sb_softmax_grad_row_##S(const T* restrict g,                 \\
            const T* restrict y, T* restrict out, Py_ssize_t C, int as_log) {             \\
        /* the 8 lanes as vectors (gcc left an array of 8 partial sums scalar) */       \\
        enum { L = 32 / sizeof(T), NV = 8 / L };                                        \\
        sb_lanes_##S acc[NV] = {{0}};                                                   \\
        T d;                                                                            \\
        Py_ssize_t c, body = C - C % 8;                                                 \\
        if (as_log) {                                                                   \\
            for (c = 0; c < body; c += 8)                                               \\
                for (int v = 0; v < NV; v++) acc[v] += SB_LANE_LOAD(S, g + c + v * L); \\
        } else {                                                                        \\
            for (c = 0; c < body; c += 8)                                               \\
                for (int v = 0; v < NV; v++)                                            \\
                    acc[v] += SB_LANE_LOAD(S, g + c + v * L) * SB_LANE_LOAD(S, y + c + v * L); \\
        }                                                                               \\
        d = SB_LANE_FOLD8(T, acc);                                                      \\
        for (c = body; c < C; c++) d += as_log ? g[c] : g[c] * y[c];                       \\
        if (as_log) { for (c = 0; c < C; c++) out[c] = g[c] - EXP(y[c]) * d; }             \\
        else { for (c = 0; c < C; c++) out[c] = y[c] * (g[c] - d); } }
    SB_SOFTMAX(float, f, sb_expf, logf, sb_log_ge1f)
    SB_SOFTMAX(double, d, sb_exp, log, sb_log_ge1)

    /* One parallel unit: a row (inner = 1) or a block of nb positions, of the forward
     * (a = x) or the gradient (a = g, b = y). */
    #define SB_SOFTMAX_UNIT(T, S)                                                        \
    static void sb_softmax_unit_##S(const T* a, const T* b, T* out, Py_ssize_t C,       \
            Py_ssize_t inner, Py_ssize_t nb, int as_log, int grad) {                    \
        if (inner == 1) {                                                               \
            if (grad) sb_softmax_grad_row_##S(a, b, out, C, as_log);                    \
            else sb_softmax_row_##S(a, out, C, as_log);                                 \
        } else {                                                                        \
            if (grad) sb_softmax_grad_cols_##S(a, b, out, C, inner, nb, as_log);        \
            else sb_softmax_cols_##S(a, out, C, inner, nb, as_log); } }
    SB_SOFTMAX_UNIT(float, f)
    SB_SOFTMAX_UNIT(double, d)
    """
    enum: SB_SOFTMAX_BLOCK
    void sb_softmax_unit_f(const float* a, const float* b, float* out, Py_ssize_t C,
                           Py_ssize_t inner, Py_ssize_t nb, int as_log, int grad) noexcept nogil
    void sb_softmax_unit_d(const double* a, const double* b, double* out, Py_ssize_t C,
                           Py_ssize_t inner, Py_ssize_t nb, int as_log, int grad) noexcept nogil


cdef void _passes(const real* a, const real* b, real* out, Py_ssize_t outer, Py_ssize_t C,
                  Py_ssize_t inner, int as_log, int grad, int num_threads) noexcept nogil:
    """Every unit of the forward or the gradient, shared among the threads: the rows
    (inner = 1) or blocks of SB_SOFTMAX_BLOCK positions of each outer index."""
    cdef Py_ssize_t blocks = 1, units = outer, q, start, nb = 1
    if inner > 1:
        blocks = (inner + SB_SOFTMAX_BLOCK - 1) // SB_SOFTMAX_BLOCK
        units = outer * blocks
    for q in prange(units, schedule="static", num_threads=num_threads):
        if inner == 1:
            start = q * C
        else:
            start = (q // blocks) * C * inner + (q % blocks) * SB_SOFTMAX_BLOCK
            nb = min(SB_SOFTMAX_BLOCK, inner - (q % blocks) * SB_SOFTMAX_BLOCK)
        if real is float:
            sb_softmax_unit_f(a + start, b + start, out + start, C, inner, nb, as_log, grad)
        else:
            sb_softmax_unit_d(a + start, b + start, out + start, C, inner, nb, as_log, grad)


def forward(const real[::1] x,  # IN  (outer, C, inner) flat
            real[::1] out,      # OUT same
            Py_ssize_t outer, Py_ssize_t C, Py_ssize_t inner, bint as_log, int num_threads):
    """``out`` = softmax (``as_log``: log-softmax) of ``x`` along its middle axis (C >= 1)."""
    if outer * C * inner == 0:
        return
    with nogil:
        _passes(&x[0], &x[0], &out[0], outer, C, inner, as_log, 0, num_threads)


def backward(const real[::1] g,  # IN  (outer, C, inner) flat: the output's gradient
             const real[::1] y,  # IN  same: the forward's output
             real[::1] out,      # OUT same: the input's gradient
             Py_ssize_t outer, Py_ssize_t C, Py_ssize_t inner, bint as_log, int num_threads):
    """``out = y (g - sum_c g y)``, or for log-softmax ``g - exp(y) sum_c g``."""
    if outer * C * inner == 0:
        return
    with nogil:
        _passes(&g[0], &y[0], &out[0], outer, C, inner, as_log, 1, num_threads)
