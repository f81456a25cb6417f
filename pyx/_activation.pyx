# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# The smooth activations users call one by one (nn.SiLU, nn.GELU, torch.sigmoid, tanh) and
# their gradients, elementwise on every thread.  The float32 forms compute in float32
# with pyx/vec_math.h's vectorisable exp and erfc (about 1 ulp each: numpy's and the C
# library's calls cannot be vectorised by gcc and ran on one thread); float64 uses the
# same exp, and the C library's erfc for GELU.
# Kernel contract: pyx/fused.pxd (no validation, C-contiguous operands of one dtype
# and size, nogil prange with a Python-computed thread count; every block writes only
# its own part of the output -> bitwise identical for any thread count).

from cython.parallel cimport prange
from fused cimport real

cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from "vec_math.h":
    pass  # sb_expf, sb_exp, sb_erfcf, used by the C below

cdef extern from *:
    """
    #include <math.h>
    /* sigmoid(x) = 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: with e = exp(-|x|)
     * the exp never overflows */
    static inline float sb_sigmoid_value_f(float x) {
        float e = sb_expf(-fabsf(x));
        return (x >= 0 ? 1.0f : e) / (1.0f + e);
    }
    static inline double sb_sigmoid_value_d(double x) {
        double e = sb_exp(-fabs(x));
        return (x >= 0 ? 1.0 : e) / (1.0 + e);
    }
    static inline double sb_erfc_d(double u) { return erfc(u); }
    /* Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal CDF; phi(x) its density */
    #define SB_RSQRT2 0.70710678118654752440
    #define SB_RSQRT2PI 0.39894228040143267794
    /* Phi(v) and phi(v) for GELU's gradient; in float one exp serves both:
     * with z = |v| / sqrt 2, e^(-z^2) = e^(-v^2 / 2) and erfc(z) = erfcx(z) e^(-z^2) */
    static inline void sb_gelu_parts_f(float v, float* cdf, float* pdf) {
        float u = -v * (float)SB_RSQRT2;
        float z = sb_erfc_arg_f(u);
        float e = sb_expf(-z * z);
        float ans = sb_erfcxf(z) * e;
        *cdf = 0.5f * (u < 0 ? 2.0f - ans : ans);
        *pdf = e * (float)SB_RSQRT2PI;
    }
    static inline void sb_gelu_parts_d(double v, double* cdf, double* pdf) {
        *cdf = 0.5 * erfc(-v * SB_RSQRT2);
        *pdf = sb_exp(v * v * -0.5) * SB_RSQRT2PI;
    }
    /* GELU's tanh form: x (1 + tanh u) / 2 = x sigmoid(2u), u = sqrt(2/pi) (x + c x^3) */
    #define SB_GELU_C 0.044715
    #define SB_SQRT_2_PI 0.79788456080286535588

    #define SB_ACTIVATIONS(T, S, EXP, ERFC, SIG, TANH, GELU_PARTS)                                            \\
    SB_CLONES static void sb_sigmoid_##S(const T* restrict x, T* restrict out,        \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = SIG(x[i]); }        \\
    /* d sigmoid = y (1 - y) */                                                        \\
    SB_CLONES static void sb_sigmoid_grad_##S(const T* restrict g, const T* restrict y,\\
            T* restrict out, Py_ssize_t n) {                                           \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = g[i] * (y[i] * ((T)1 - y[i])); }   \\
    SB_CLONES static void sb_silu_##S(const T* restrict x, T* restrict out,           \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = x[i] * SIG(x[i]); } \\
    /* d (x s(x)) = s (1 + x (1 - s)), as PyTorch's silu_backward */                   \\
    SB_CLONES static void sb_silu_grad_##S(const T* restrict g, const T* restrict x,  \\
            T* restrict out, Py_ssize_t n) {                                           \\
        for (Py_ssize_t i = 0; i < n; i++) {                                           \\
            T s = SIG(x[i]);                                            \\
            out[i] = g[i] * (s * ((T)1 + x[i] * ((T)1 - s))); } }                     \\
    SB_CLONES static void sb_gelu_##S(const T* restrict x, T* restrict out,           \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++)                                             \\
            out[i] = x[i] * ((T)0.5 * ERFC(-x[i] * (T)SB_RSQRT2)); }                   \\
    /* d (x Phi(x)) = Phi(x) + x phi(x) */                                             \\
    SB_CLONES static void sb_gelu_grad_##S(const T* restrict g, const T* restrict x,  \\
            T* restrict out, Py_ssize_t n) {                                           \\
        for (Py_ssize_t i = 0; i < n; i++) {                                           \\
            T v = x[i];                                                                \\
            T cdf, pdf;                                                                \\
            GELU_PARTS(v, &cdf, &pdf);                                                 \\
            out[i] = g[i] * (cdf + v * pdf); } }                                       \\
    SB_CLONES static void sb_gelu_tanh_##S(const T* restrict x, T* restrict out,      \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++) {                                           \\
            T v = x[i];                                                                \\
            T u2 = (T)(2 * SB_SQRT_2_PI) * (v + (T)SB_GELU_C * (v * v * v));           \\
            out[i] = v * SIG(u2); } }                                   \\
    /* d (x s(2u)) = s + x s (1 - s) 2u', u' = sqrt(2/pi) (1 + 3c x^2) */              \\
    SB_CLONES static void sb_gelu_tanh_grad_##S(const T* restrict g,                  \\
            const T* restrict x, T* restrict out, Py_ssize_t n) {                      \\
        for (Py_ssize_t i = 0; i < n; i++) {                                           \\
            T v = x[i];                                                                \\
            T u2 = (T)(2 * SB_SQRT_2_PI) * (v + (T)SB_GELU_C * (v * v * v));           \\
            T s = SIG(u2);                                              \\
            T du2 = (T)(2 * SB_SQRT_2_PI) * ((T)1 + (T)(3 * SB_GELU_C) * (v * v));     \\
            out[i] = g[i] * (s + v * (s * ((T)1 - s)) * du2); } }                      \\
    SB_CLONES static void sb_exp_##S(const T* restrict x, T* restrict out,            \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = EXP(x[i]); }                       \\
    /* d e^x = e^x, the output */                                                      \\
    SB_CLONES static void sb_exp_grad_##S(const T* restrict g, const T* restrict y,   \\
            T* restrict out, Py_ssize_t n) {                                           \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = g[i] * y[i]; }                     \\
    SB_CLONES static void sb_tanh_##S(const T* restrict x, T* restrict out,           \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = TANH(x[i]); }                      \\
    /* d tanh = 1 - y^2 */                                                             \\
    SB_CLONES static void sb_tanh_grad_##S(const T* restrict g, const T* restrict y,  \\
            T* restrict out, Py_ssize_t n) {                                           \\
        for (Py_ssize_t i = 0; i < n; i++) out[i] = g[i] * ((T)1 - y[i] * y[i]); }
    SB_ACTIVATIONS(float, f, sb_expf, sb_erfcf, sb_sigmoid_value_f, sb_tanhf, sb_gelu_parts_f)
    SB_ACTIVATIONS(double, d, sb_exp, sb_erfc_d, sb_sigmoid_value_d, sb_tanh, sb_gelu_parts_d)

    typedef void (*sb_unary_f)(const float*, float*, Py_ssize_t);
    typedef void (*sb_unary_d)(const double*, double*, Py_ssize_t);
    typedef void (*sb_binary_f)(const float*, const float*, float*, Py_ssize_t);
    typedef void (*sb_binary_d)(const double*, const double*, double*, Py_ssize_t);
    static sb_unary_f sb_unary_fs[] = {sb_sigmoid_f, sb_silu_f, sb_gelu_f, sb_gelu_tanh_f,
                                       sb_exp_f, sb_tanh_f};
    static sb_unary_d sb_unary_ds[] = {sb_sigmoid_d, sb_silu_d, sb_gelu_d, sb_gelu_tanh_d,
                                       sb_exp_d, sb_tanh_d};
    static sb_binary_f sb_binary_fs[] = {sb_sigmoid_grad_f, sb_silu_grad_f, sb_gelu_grad_f,
                                         sb_gelu_tanh_grad_f, sb_exp_grad_f, sb_tanh_grad_f};
    static sb_binary_d sb_binary_ds[] = {sb_sigmoid_grad_d, sb_silu_grad_d, sb_gelu_grad_d,
                                         sb_gelu_tanh_grad_d, sb_exp_grad_d, sb_tanh_grad_d};
    """
    ctypedef void (*sb_unary_f)(const float*, float*, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_unary_d)(const double*, double*, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_binary_f)(const float*, const float*, float*, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_binary_d)(const double*, const double*, double*,
                                 Py_ssize_t) noexcept nogil
    sb_unary_f sb_unary_fs[6]
    sb_unary_d sb_unary_ds[6]
    sb_binary_f sb_binary_fs[6]
    sb_binary_d sb_binary_ds[6]

# The functions, by the code the wrappers pass (sandbox/array/activation.py): forward
# (unary) and gradient (binary) of each activation, and exp alone.
SIGMOID, SILU, GELU, GELU_TANH, EXP, TANH = range(6)

# Elements per parallel block (as _elementwise.pyx): a block's start-up is noise, and
# two threads share a (8, 16, 64, 64) map.
cdef enum:
    BLOCK = 16384


def unary(int fn, const real[::1] x, real[::1] out, int num_threads):
    """``out = f(x)`` elementwise for the activation ``fn`` (SIGMOID, SILU, GELU,
    GELU_TANH, EXP or TANH).

    x (IN), out (OUT): flat, same size and dtype; ``out`` may be ``x`` itself.
    """
    cdef Py_ssize_t n = x.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    cdef sb_unary_f kf = sb_unary_fs[fn]
    cdef sb_unary_d kd = sb_unary_ds[fn]
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            kf(&x[start], &out[start], min(BLOCK, n - start))
        else:
            kd(&x[start], &out[start], min(BLOCK, n - start))


def gradient(int fn, const real[::1] g, const real[::1] saved, real[::1] out,
             int num_threads):
    """``out = g * f'(x)`` elementwise for the activation ``fn`` (SIGMOID, EXP and TANH:
    ``saved`` is the output y; SILU, GELU, GELU_TANH: the input x).

    g (IN), saved (IN), out (OUT): flat, same size and dtype; ``out`` may be ``g``.
    """
    cdef Py_ssize_t n = g.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    cdef sb_binary_f kf = sb_binary_fs[fn]
    cdef sb_binary_d kd = sb_binary_ds[fn]
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            kf(&g[start], &saved[start], &out[start], min(BLOCK, n - start))
        else:
            kd(&g[start], &saved[start], &out[start], min(BLOCK, n - start))
