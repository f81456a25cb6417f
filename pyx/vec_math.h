/* Branch-free exp, erfc, sigmoid and log1p on [0, 1] that gcc vectorises (8 floats or 4
 * doubles a vector under the avx2 clones of simd_clones.h), for the smooth activations of
 * _activation.pyx and the losses of _loss.pyx.
 * The C library's expf/exp/erf are calls gcc cannot vectorise: SiLU's forward +
 * backward on a (8, 16, 64, 64) float32 map took 2.3 times PyTorch's time at 1 thread
 * and 3.7 at 2 (AMD EPYC family 25 model 1 VM, python benchmarks/bench_ops_vs_torch.py
 * --threads 1 2 --ops silu); ns an element of these kernels: bench_activation_kernels.py.
 *
 * exp(x), the textbook reduction (Cody and Waite):
 *   n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a high part with few bits, so
 *   n * hi is exact, and a low part), |r| <= ln(2)/2;
 *   exp(r) by its Taylor series to r^7 (float: r^8/8! < 5e-9 there) or r^13 (double:
 *   r^14/14! < 5e-18), evaluated by Estrin's scheme (pairs of terms, then pairs of
 *   pairs: a quarter of Horner's chain of dependent operations);
 *   exp(x) = exp(r) * 2^a * 2^b with a = round(n/2), b = n - a: both factors stay
 *   normal numbers, so subnormal results and overflow to inf come out right.
 * round() is the "shifter": adding 1.5 * 2^23 (2^52 for double) to a number under 2^22
 * rounds it to an integer held in the low bits of the sum; those bits, moved into the
 * exponent field, build 2^a without a float-to-int conversion (AVX2 has none for
 * 64-bit integers).  Arguments are clamped first (exp underflows to 0 below the low
 * bound and overflows to inf above the high one); NaN fails both compares and stays.
 * The error is within 2 ulps in float and double (tests/array/test_activation.py,
 * against long double).  No FMA is formed (the avx2 clones do not enable it, and the module is built
 * with -ffp-contract=off), so every clone gives the same bits. */
#ifndef SANDBOX_VEC_MATH_H
#define SANDBOX_VEC_MATH_H
#include <math.h>
#include <stdint.h>

static inline uint32_t sb_bits_f(float x) { union { float f; uint32_t i; } u; u.f = x; return u.i; }
static inline float sb_float_bits(uint32_t i) { union { float f; uint32_t i; } u; u.i = i; return u.f; }
static inline uint64_t sb_bits_d(double x) { union { double f; uint64_t i; } u; u.f = x; return u.i; }
static inline double sb_double_bits(uint64_t i) { union { double f; uint64_t i; } u; u.i = i; return u.f; }

#define SB_SHIFT_F 12582912.0f            /* 1.5 * 2^23 */
#define SB_SHIFT_D 6755399441055744.0     /* 1.5 * 2^52 */

/* 2^k for an integer-valued float k in [-126, 127] (the shifter's low bits hold k) */
static inline float sb_pow2_f(float k) {
    return sb_float_bits((sb_bits_f(k + SB_SHIFT_F) + 127u) << 23);
}

static inline double sb_pow2_d(double k) {
    return sb_double_bits((sb_bits_d(k + SB_SHIFT_D) + 1023u) << 52);
}

static inline float sb_expf(float x) {
    x = x < -104.0f ? -104.0f : x;  /* exp(-104) < the least subnormal: 0 */
    x = x > 89.0f ? 89.0f : x;      /* exp(89) > FLT_MAX: inf */
    float n = (x * 1.44269504088896341f + SB_SHIFT_F) - SB_SHIFT_F;
    float r = x - n * 0.693359375f;  /* ln 2 = 0.693359375 - 2.12194440e-4, hi: 10 bits */
    r = r + n * 2.12194440e-4f;
    /* Estrin's scheme (pairs of terms, then pairs of pairs): a short chain of
     * dependent operations */
    float r2 = r * r, r4 = r2 * r2;
    float p = ((1.0f + r) + (0.5f + r * (1.0f / 6)) * r2)
              + ((1.0f / 24 + r * (1.0f / 120)) + (1.0f / 720 + r * (1.0f / 5040)) * r2) * r4;
    float a = (n * 0.5f + SB_SHIFT_F) - SB_SHIFT_F;
    return p * sb_pow2_f(a) * sb_pow2_f(n - a);
}

static inline double sb_exp(double x) {
    x = x < -746.0 ? -746.0 : x;  /* exp(-746) < the least subnormal: 0 */
    x = x > 710.0 ? 710.0 : x;    /* exp(710) > DBL_MAX: inf */
    double n = (x * 1.4426950408889634 + SB_SHIFT_D) - SB_SHIFT_D;
    /* ln 2 = hi + lo, hi with its low 32 bits zero (fdlibm's split) */
    double r = x - n * 6.93147180369123816490e-01;
    r = r - n * 1.90821492927058770002e-10;
    double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    double p = ((1.0 + r) + (0.5 + r * (1.0 / 6)) * r2)
               + ((1.0 / 24 + r * (1.0 / 120)) + (1.0 / 720 + r * (1.0 / 5040)) * r2) * r4
               + (((1.0 / 40320 + r * (1.0 / 362880)) + (1.0 / 3628800 + r * (1.0 / 39916800)) * r2)
                  + (1.0 / 479001600 + r * (1.0 / 6227020800.0)) * r4) * r8;
    double a = (n * 0.5 + SB_SHIFT_D) - SB_SHIFT_D;
    return p * sb_pow2_d(a) * sb_pow2_d(n - a);
}

/* e^u - 1 without the cancellation of exp(u) - 1 near 0: the Taylor series where |u| is
 * small (float: |u| < 1, terms to u^10, the rest under 1/11! = 2.5e-8 of |u|; double:
 * |u| < ln(2)/2, terms to u^13, under 1e-17), exp(u) - 1 elsewhere (there e^u - 1 is at
 * least 0.29 in size: a few ulps).  Both are computed and one is selected (no branch). */
static inline float sb_expm1f(float u) {
    float u2 = u * u, u4 = u2 * u2, u8 = u4 * u4;
    float small = ((u + u2 * 0.5f) + (1.0f / 6 + u * (1.0f / 24)) * (u2 * u))
                  + ((1.0f / 120 + u * (1.0f / 720)) + (1.0f / 5040 + u * (1.0f / 40320)) * u2)
                    * (u4 * u)
                  + (1.0f / 362880 + u * (1.0f / 3628800)) * (u8 * u);
    float large = sb_expf(u) - 1.0f;
    return (u < 1.0f && u > -1.0f) ? small : large;
}

static inline double sb_expm1(double u) {
    double u2 = u * u, u4 = u2 * u2, u8 = u4 * u4;
    double small = ((u + u2 * 0.5) + (1.0 / 6 + u * (1.0 / 24)) * (u2 * u))
                   + ((1.0 / 120 + u * (1.0 / 720)) + (1.0 / 5040 + u * (1.0 / 40320)) * u2)
                     * (u4 * u)
                   + (((1.0 / 362880 + u * (1.0 / 3628800))
                       + (1.0 / 39916800 + u * (1.0 / 479001600)) * u2) + u4 * (1.0 / 6227020800.0))
                     * (u8 * u);
    double large = sb_exp(u) - 1.0;
    return (u < 0.34657359027997264 && u > -0.34657359027997264) ? small : large;
}

/* tanh(x) = -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of x: no overflow, no
 * cancellation near 0, and 1 exactly once e^-2|x| rounds away. */
static inline float sb_tanhf(float x) {
    float e = sb_expm1f(-2.0f * fabsf(x));
    return copysignf(-e / (2.0f + e), x);
}

static inline double sb_tanh(double x) {
    double e = sb_expm1(-2.0 * fabs(x));
    return copysign(-e / (2.0 + e), x);
}

/* erfcx(z) = e^(z^2) erfc(z) for float z >= 0, as t R(t) with t = 1/(1 + z/2) (the
 * substitution of Numerical Recipes' erfcc, Press et al., 2nd ed., section 6.2) and R a
 * degree-10 polynomial fitted here (Chebyshev nodes on t in (0, 1], weighted for
 * relative error) to erfcx(2/t - 2)/t: relative error 1.2e-8 in exact arithmetic,
 * 2.6e-7 evaluated in float (Estrin's scheme); R(0) = 1/(2 sqrt(pi)), erfcx's tail. */
static inline float sb_erfcxf(float z) {
    float t = 1.0f / (1.0f + 0.5f * z);
    float t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
    float q01 = 2.820947952e-01f + 2.820937537e-01f * t;
    float q23 = 2.468845780e-01f + 1.753159424e-01f * t;
    float q45 = 9.346262020e-02f - 5.921197247e-02f * t;
    float q67 = 1.321783077e-01f - 4.549756146e-01f * t;
    float q89 = 4.936962062e-01f - 2.347341478e-01f * t;
    float r = (q01 + q23 * t2) + (q45 + q67 * t2) * t4 + (q89 + 4.319553615e-02f * t2) * t8;
    return t * r;
}

/* |u| clamped where erfc rounds to 0 in float (erfc(12) does, as does sb_expf(-144)) */
static inline float sb_erfc_arg_f(float u) {
    float z = u < 0 ? -u : u;
    return z > 12.0f ? 12.0f : z;
}

/* erfc(u) for float: erfcx(|u|) e^(-u^2), and 2 - erfc(|u|) for u < 0.  In float the
 * rounding of u^2 adds a relative error of about u^2 * 6e-8 (with the fit's, under 1e-6
 * for |u| < 3.5, the GELU of |x| < 5; below x = -5 the GELU is under 1.5e-6 in size):
 * the C library's erff would cost 20 ns an element, splitting u^2 exactly a second exp. */
static inline float sb_erfcf(float u) {
    float z = sb_erfc_arg_f(u);
    float ans = sb_erfcxf(z) * sb_expf(-z * z);
    return u < 0 ? 2.0f - ans : ans;
}

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

/* log(1 + u) for 0 <= u <= 1 (softplus's log1p(exp(-|x|))): 2 atanh(s) with s = u / (2 +
 * u), no cancellation for small u, s <= 1/3, the series 2 s (1 + s^2/3 + s^4/5 + ...) to
 * s^12 in float (the next term under 2e-8 of the sum) and s^30 in double (under 2e-17),
 * in powers of s^2 by Estrin's scheme. */
static inline float sb_log1p01f(float u) {
    float s = u / (2.0f + u), z = s * s, z2 = z * z, z4 = z2 * z2;
    float p = ((1.0f + z * (1.0f / 3)) + (1.0f / 5 + z * (1.0f / 7)) * z2)
              + ((1.0f / 9 + z * (1.0f / 11)) + (1.0f / 13) * z2) * z4;
    return 2.0f * s * p;
}
static inline double sb_log1p01(double u) {
    double s = u / (2.0 + u), z = s * s, z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
    double lo = ((1.0 + z * (1.0 / 3)) + (1.0 / 5 + z * (1.0 / 7)) * z2)
                + ((1.0 / 9 + z * (1.0 / 11)) + (1.0 / 13 + z * (1.0 / 15)) * z2) * z4;
    double hi = ((1.0 / 17 + z * (1.0 / 19)) + (1.0 / 21 + z * (1.0 / 23)) * z2)
                + ((1.0 / 25 + z * (1.0 / 27)) + (1.0 / 29 + z * (1.0 / 31)) * z2) * z4;
    return 2.0 * s * (lo + hi * z8);
}

/* log(s) for s >= 1 or NaN (a softmax's sum of e^(x - max), the max's own term 1): s = 2^e
 * m with m in [1, 2), log s = e ln 2 + log1p(m - 1) (sb_log1p01 on m - 1 in [0, 1): every
 * term >= 0, no cancellation), ln 2 split in two (Cody and Waite) so that e ln 2 keeps its
 * bits for e up to 2^12.  Branch-free, so gcc vectorises it where the C library's log is a
 * call per element; NaN comes back as itself. */
static inline float sb_log_ge1f(float s) {
    const uint32_t bits = sb_bits_f(s);
    const float e = (float)(int32_t)((bits >> 23) - 127);
    const float m = sb_float_bits((bits & 0x007fffffu) | 0x3f800000u);
    const float r = e * 0.693145751953125f + (e * 1.428606765330187e-06f + sb_log1p01f(m - 1.0f));
    return s == s ? r : s;
}
static inline double sb_log_ge1(double s) {
    const uint64_t bits = sb_bits_d(s);
    const double e = (double)(int64_t)((bits >> 52) - 1023);
    const double m = sb_double_bits((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    const double r = e * 0.6931471803691238 + (e * 1.9082149292705877e-10 + sb_log1p01(m - 1.0));
    return s == s ? r : s;
}

#endif
