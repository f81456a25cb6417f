# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# The activations users call one by one (nn.ReLU after nn.BatchNorm2d, nn.LeakyReLU,
# nn.SiLU, nn.GELU, torch.sigmoid, tanh, exp, erf) and their gradients, elementwise on
# every thread.  ReLU and the leaky ReLU compute numpy's np.maximum / np.where forms
# (numpy's bits); the float32 smooth ones compute in float32 with pyx/vec_math.h's
# vectorisable exp, expm1 and erfc (within 2-6 ulps, measured in
# tests/array/test_activation.py: numpy's and the C library's calls cannot be
# vectorised by gcc and ran on one thread); float64 uses the same exp, and the C
# library's erfc and erf.
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
    /* The value of each activation at v and its slope, per dtype S (f, d): sigmoid from
     * vec_math.h; Phi(x) = erfc(-x / sqrt 2) / 2, the standard normal CDF, and
     * phi(x) its density; GELU's tanh form x (1 + tanh u) / 2 = x sigmoid(2u), u =
     * sqrt(2/pi) (x + c x^3). */
    #define SB_RSQRT2 0.70710678118654752440
    #define SB_RSQRT2PI 0.39894228040143267794
    #define SB_GELU_C 0.044715
    #define SB_SQRT_2_PI 0.79788456080286535588
    /* d (x Phi(x)) = Phi(x) + x phi(x); in float one exp serves both: with z = |v| /
     * sqrt 2, e^(-z^2) = e^(-v^2 / 2) and erfc(z) = erfcx(z) e^(-z^2) */
    static inline float sb_gelu_slope_f(float v) {
        float u = -v * (float)SB_RSQRT2;
        float z = sb_erfc_arg_f(u);
        float e = sb_expf(-z * z);
        float ans = sb_erfcxf(z) * e;
        return 0.5f * (u < 0 ? 2.0f - ans : ans) + v * (e * (float)SB_RSQRT2PI);
    }
    static inline double sb_gelu_slope_d(double v) {
        return 0.5 * erfc(-v * SB_RSQRT2) + v * (sb_exp(v * v * -0.5) * SB_RSQRT2PI);
    }
    #define SB_VALUES(T, S, ERFC)                                                      \\
    static inline T sb_gelu_value_##S(T v) {                                           \\
        return v * ((T)0.5 * ERFC(-v * (T)SB_RSQRT2)); }                               \\
    /* 2u of the tanh form */                                                          \\
    static inline T sb_gelu_u2_##S(T v) {                                              \\
        return (T)(2 * SB_SQRT_2_PI) * (v + (T)SB_GELU_C * (v * v * v)); }             \\
    /* d (x s(x)) = s (1 + x (1 - s)), as PyTorch's silu_backward */                   \\
    static inline T sb_silu_slope_##S(T v) {                                           \\
        T s = sb_sigmoid_value_##S(v);                                                 \\
        return s * ((T)1 + v * ((T)1 - s)); }                                          \\
    /* d (x s(2u)) = s + x s (1 - s) 2u', u' = sqrt(2/pi) (1 + 3c x^2) */              \\
    static inline T sb_gelu_tanh_slope_##S(T v) {                                      \\
        T s = sb_sigmoid_value_##S(sb_gelu_u2_##S(v));                                 \\
        T du2 = (T)(2 * SB_SQRT_2_PI) * ((T)1 + (T)(3 * SB_GELU_C) * (v * v));         \\
        return s + v * (s * ((T)1 - s)) * du2; }
    SB_VALUES(float, f, sb_erfcf)
    SB_VALUES(double, d, erfc)

    /* An activation's kernel from its value at v (x[i]) and its gradient's from g[i]
     * times its slope at v (the saved input or output); p a parameter (the leaky
     * ReLU's slope, unused by the others). */
    #define SB_UNARY(NAME, T, S, VALUE)                                                \\
    SB_CLONES static void sb_##NAME##_##S(const T* restrict x, T* restrict out, T p,   \\
            Py_ssize_t n) {                                                            \\
        for (Py_ssize_t i = 0; i < n; i++) { T v = x[i]; out[i] = (VALUE); } }
    #define SB_BINARY(NAME, T, S, SLOPE)                                               \\
    SB_CLONES static void sb_##NAME##_##S(const T* restrict g, const T* restrict saved,\\
            T* restrict out, T p, Py_ssize_t n) {                                      \\
        for (Py_ssize_t i = 0; i < n; i++) { T v = saved[i]; out[i] = g[i] * (SLOPE); } }
    #define SB_ACTIVATIONS(T, S, EXP, TANH)                                            \\
    /* max(x, 0) as np.maximum(x, 0): NaN passes through, -0.0 becomes 0; its           \\
     * gradient through the output y, g * (y > 0) */                                   \\
    SB_UNARY(relu, T, S, (v > 0 || v != v) ? v : 0)                                    \\
    SB_BINARY(relu_grad, T, S, (T)(v > 0))                                             \\
    /* np.where(x > 0, x, x * p); g * np.where(m > 0, 1, p), m the input (or the        \\
     * output, for a slope of at least 0) */                                           \\
    SB_UNARY(leaky_relu, T, S, v > 0 ? v : v * p)                                      \\
    SB_BINARY(leaky_relu_grad, T, S, v > 0 ? (T)1 : p)                                 \\
    SB_UNARY(sigmoid, T, S, sb_sigmoid_value_##S(v))                                   \\
    SB_BINARY(sigmoid_grad, T, S, v * ((T)1 - v))                                      \\
    SB_UNARY(silu, T, S, v * sb_sigmoid_value_##S(v))                                  \\
    SB_BINARY(silu_grad, T, S, sb_silu_slope_##S(v))                                   \\
    SB_UNARY(gelu, T, S, sb_gelu_value_##S(v))                                         \\
    SB_BINARY(gelu_grad, T, S, sb_gelu_slope_##S(v))                                   \\
    SB_UNARY(gelu_tanh, T, S, v * sb_sigmoid_value_##S(sb_gelu_u2_##S(v)))             \\
    SB_BINARY(gelu_tanh_grad, T, S, sb_gelu_tanh_slope_##S(v))                         \\
    SB_UNARY(tanh, T, S, TANH(v))                                                      \\
    SB_BINARY(tanh_grad, T, S, (T)1 - v * v)                                           \\
    SB_UNARY(exp, T, S, EXP(v))                                                        \\
    SB_UNARY(erf, T, S, (T)erf((double)v))
    SB_ACTIVATIONS(float, f, sb_expf, sb_tanhf)
    SB_ACTIVATIONS(double, d, sb_exp, sb_tanh)

    typedef void (*sb_unary_f)(const float*, float*, float, Py_ssize_t);
    typedef void (*sb_unary_d)(const double*, double*, double, Py_ssize_t);
    typedef void (*sb_binary_f)(const float*, const float*, float*, float, Py_ssize_t);
    typedef void (*sb_binary_d)(const double*, const double*, double*, double, Py_ssize_t);
    /* by code (below): the seven with a gradient first, then exp and erf */
    static sb_unary_f sb_unary_fs[] = {sb_relu_f, sb_leaky_relu_f, sb_sigmoid_f, sb_silu_f,
                                       sb_gelu_f, sb_gelu_tanh_f, sb_tanh_f, sb_exp_f,
                                       sb_erf_f};
    static sb_unary_d sb_unary_ds[] = {sb_relu_d, sb_leaky_relu_d, sb_sigmoid_d, sb_silu_d,
                                       sb_gelu_d, sb_gelu_tanh_d, sb_tanh_d, sb_exp_d,
                                       sb_erf_d};
    static sb_binary_f sb_binary_fs[] = {sb_relu_grad_f, sb_leaky_relu_grad_f,
                                         sb_sigmoid_grad_f, sb_silu_grad_f, sb_gelu_grad_f,
                                         sb_gelu_tanh_grad_f, sb_tanh_grad_f};
    static sb_binary_d sb_binary_ds[] = {sb_relu_grad_d, sb_leaky_relu_grad_d,
                                         sb_sigmoid_grad_d, sb_silu_grad_d, sb_gelu_grad_d,
                                         sb_gelu_tanh_grad_d, sb_tanh_grad_d};
    """
    ctypedef void (*sb_unary_f)(const float*, float*, float, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_unary_d)(const double*, double*, double, Py_ssize_t) noexcept nogil
    ctypedef void (*sb_binary_f)(const float*, const float*, float*, float,
                                 Py_ssize_t) noexcept nogil
    ctypedef void (*sb_binary_d)(const double*, const double*, double*, double,
                                 Py_ssize_t) noexcept nogil
    sb_unary_f sb_unary_fs[9]
    sb_unary_d sb_unary_ds[9]
    sb_binary_f sb_binary_fs[7]
    sb_binary_d sb_binary_ds[7]

# The activations, by the code the wrappers pass (sandbox/array/activation.py): the
# seven with a gradient kernel first (their codes index both tables), then exp and erf.
RELU, LEAKY_RELU, SIGMOID, SILU, GELU, GELU_TANH, TANH, EXP, ERF = range(9)

# Elements per parallel block: a block's start-up is noise, and two threads share a
# (8, 16, 64, 64) map.
cdef enum:
    BLOCK = 16384


def unary(int fn, const real[::1] x, real[::1] out, double param, int num_threads):
    """``out = f(x)`` elementwise for the activation ``fn`` (any code); ``param`` is the
    leaky ReLU's slope (rounded to the dtype, as numpy takes a Python float), unused by
    the others.

    x (IN), out (OUT): flat, same size and dtype; ``out`` may be ``x`` itself.
    """
    cdef Py_ssize_t n = x.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    cdef sb_unary_f kf = sb_unary_fs[fn]
    cdef sb_unary_d kd = sb_unary_ds[fn]
    cdef real p = <real> param
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            kf(&x[start], &out[start], p, min(BLOCK, n - start))
        else:
            kd(&x[start], &out[start], p, min(BLOCK, n - start))


def gradient(int fn, const real[::1] g, const real[::1] saved, real[::1] out, double param,
             int num_threads):
    """``out = g * f'`` elementwise for the activation ``fn`` (RELU to TANH), from
    ``saved``: the output for RELU, SIGMOID and TANH, the input for SILU, GELU and
    GELU_TANH, either for LEAKY_RELU (the output only for a slope ``param`` of at least
    0, positive exactly where the input is).

    g (IN), saved (IN), out (OUT): flat, same size and dtype; ``out`` may be ``g``.
    """
    cdef Py_ssize_t n = g.shape[0], blocks = (n + BLOCK - 1) // BLOCK, b, start
    cdef sb_binary_f kf = sb_binary_fs[fn]
    cdef sb_binary_d kd = sb_binary_ds[fn]
    cdef real p = <real> param
    if n == 0:
        return
    for b in prange(blocks, nogil=True, schedule="static", num_threads=num_threads):
        start = b * BLOCK
        if real is float:
            kf(&g[start], &saved[start], &out[start], p, min(BLOCK, n - start))
        else:
            kd(&g[start], &saved[start], &out[start], p, min(BLOCK, n - start))
