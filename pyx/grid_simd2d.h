/* More blocked loops of the 2-D grid sampling (pyx/_grid_sample.pyx), beside those of
 * grid_block2d.h:
 *
 * sb_gs2d_cubic_coords_*: bicubic points of a block, the rules of _axis/_cubic_taps
 *   (Keys' cubic convolution with A = -0.75) as a branch-free loop the compiler
 *   vectorises: the offset of the first of the 16 taps, the 16 weights
 *   wt[t * SB_GS_BLOCK + j] (t = 4 row + column) and ok[j] = every tap inside
 *   (otherwise offset 0, weights 0: the caller recomputes the point).
 * sb_gs2d_scalar_cubic_*: out[c, j] = sum over the 16 taps of wt * x[c, tap], in the
 *   order of _fast_bicubic_forward.  Plain loads: on the Zen 5 machine this was
 *   written on, 16 AVX-512 gathers a vector of points took 1.8x as long.
 * sb_gs2d_fused_f: nearest and bilinear (float32) with AVX-512F intrinsics, the
 *   coordinates and the gathers of every channel in one pass (see there).
 *
 * Each computes the same products and sums, in the same order, as the scalar code of
 * pyx/_grid_sample.pyx (separate multiply and add, no fused multiply-add: the module
 * is built with -ffp-contract=off), so every path gives bitwise the same values. */
#ifndef SANDBOX_GRID_SIMD2D_H
#define SANDBOX_GRID_SIMD2D_H
#include <math.h>
#include <stdint.h>
#include "simd_clones.h"
#include "grid_block3d.h" /* SB_GS_BLOCK */
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SB_GS_X86 1
#endif

/* Keys' cubic weights, in the order of operations of _near/_far in _grid_sample.pyx. */
#define SB_NEAR(T, x) ((((T)1.25 * (x) - (T)2.25) * (x)) * (x) + 1)
#define SB_FAR(T, x) (((((T)-0.75 * (x) - (T)-3.75) * (x) + (T)-6.0) * (x)) - (T)-3.0)

#define SB_GS2D_CUBIC_COORDS(T, S, FLOOR)                                                    \
SB_CLONES static int sb_gs2d_cubic_coords_##S(const T* restrict g, Py_ssize_t n,             \
        Py_ssize_t H, Py_ssize_t W, T scale_x, T scale_y, T shift, int32_t* restrict off,    \
        T* restrict wt, unsigned char* restrict ok) {                                        \
    int all = 1;                                                                             \
    const T fw = (T)W, fh = (T)H;                                                            \
    for (Py_ssize_t j = 0; j < n; j++) {                                                     \
        T ux = (g[2 * j] + 1) * scale_x;                                                     \
        T uy = (g[2 * j + 1] + 1) * scale_y;                                                 \
        ux = ux - shift;                                                                     \
        uy = uy - shift;                                                                     \
        T fx = FLOOR(ux), fy = FLOOR(uy);                                                    \
        T tx = ux - fx, ty = uy - fy, sx = 1 - tx, sy = 1 - ty;                              \
        int inside = (fx + (T)-1 >= 0) & (fx + 2 < fw) & (fy + (T)-1 >= 0) & (fy + 2 < fh); \
        T wx[4], wy[4];                                                                      \
        wx[0] = SB_FAR(T, tx + 1);                                                           \
        wx[1] = SB_NEAR(T, tx);                                                              \
        wx[2] = SB_NEAR(T, sx);                                                              \
        wx[3] = SB_FAR(T, sx + 1);                                                           \
        wy[0] = SB_FAR(T, ty + 1);                                                           \
        wy[1] = SB_NEAR(T, ty);                                                              \
        wy[2] = SB_NEAR(T, sy);                                                              \
        wy[3] = SB_FAR(T, sy + 1);                                                           \
        fx = inside ? fx : 1;                                                                \
        fy = inside ? fy : 1;                                                                \
        off[j] = ((int32_t)fy - 1) * (int32_t)W + ((int32_t)fx - 1);                         \
        for (int b = 0; b < 4; b++)                                                          \
            for (int c = 0; c < 4; c++)                                                      \
                wt[(4 * b + c) * SB_GS_BLOCK + j] = inside ? wy[b] * wx[c] : 0;              \
        ok[j] = (unsigned char)inside;                                                       \
        all &= inside;                                                                       \
    }                                                                                        \
    return all;                                                                              \
}

SB_GS2D_CUBIC_COORDS(float, f, floorf)
SB_GS2D_CUBIC_COORDS(double, d, floor)

/* The scalar sums of a point's taps. */
#define SB_GS2D_SCALAR(T, S)                                                                 \
static inline T sb_gs2d_bilinear1_##S(const T* q, Py_ssize_t W, T w0, T w1, T w2, T w3) {   \
    return ((w0 * q[0] + w1 * q[1]) + w2 * q[W]) + w3 * q[W + 1];                            \
}                                                                                            \
static inline T sb_gs2d_cubic1_##S(const T* q, Py_ssize_t W, const T* wt, Py_ssize_t j) {    \
    T acc = 0;                                                                               \
    for (int b = 0; b < 4; b++)                                                              \
        for (int c = 0; c < 4; c++)                                                          \
            acc = acc + wt[(4 * b + c) * SB_GS_BLOCK + j] * q[b * W + c];                    \
    return acc;                                                                              \
}                                                                                            \
SB_CLONES static void sb_gs2d_scalar_cubic_##S(const T* restrict x, Py_ssize_t C,            \
        Py_ssize_t HW, Py_ssize_t W, T* restrict out, Py_ssize_t P, Py_ssize_t n,            \
        const int32_t* restrict off, const T* restrict wt) {                                 \
    for (Py_ssize_t c = 0; c < C; c++)                                                       \
        for (Py_ssize_t j = 0; j < n; j++)                                                   \
            out[c * P + j] = sb_gs2d_cubic1_##S(x + c * HW + off[j], W, wt, j);              \
}

SB_GS2D_SCALAR(float, f)
SB_GS2D_SCALAR(double, d)

#ifdef SB_GS_X86
#define SB_GS2D_IF_X86(...) __VA_ARGS__
#else
#define SB_GS2D_IF_X86(...)
#endif

#ifdef SB_GS_X86
/* sb_gs2d_fused_f_avx512: the whole blocked forward of nearest/bilinear (float32) in
 * one pass, 16 points a vector: the coordinate rules of sb_gs2d_coords_f (padding,
 * at most one reflection, clipping, rint or floor, the inside test) on registers,
 * then the gathers of every channel, with no scratch arrays between the two.  Taps
 * outside the input are masked out of the gathers, which gives the general path's
 * sums for points with some taps outside (zeros padding, or the last row and column
 * after clipping).  Points reflected more than once get ok[j] = 0 (the caller
 * recomputes them); returns whether every point was ok. */
__attribute__((target("avx512f"))) static int sb_gs2d_fused_f_avx512(const float* x,
        const float* g, float* out, Py_ssize_t C, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P,
        Py_ssize_t n, int nearest, int pad, float scale_x, float scale_y, float shift,
        float lo, float span_x, float span_y, unsigned char* ok) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4,
                                          2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5,
                                         3, 1);
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    const __m512 sx = _mm512_set1_ps(scale_x), sy = _mm512_set1_ps(scale_y);
    const __m512 vshift = _mm512_set1_ps(shift), vlo = _mm512_set1_ps(lo);
    const __m512 spx = _mm512_set1_ps(span_x), spy = _mm512_set1_ps(span_y);
    const __m512 spx2 = _mm512_set1_ps(2 * span_x), spy2 = _mm512_set1_ps(2 * span_y);
    const __m512 hx = _mm512_set1_ps((float)(W - 1)), hy = _mm512_set1_ps((float)(H - 1));
    const __m512 fw = _mm512_set1_ps((float)W), fh = _mm512_set1_ps((float)H);
    const __m512i vw = _mm512_set1_epi32((int)W);
    const Py_ssize_t HW = H * W;
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        const __mmask16 lanes = (__mmask16)(r == 16 ? 0xFFFF : (1u << r) - 1);
        __m512 a, b;
        if (r == 16) {
            a = _mm512_loadu_ps(g + 2 * j);
            b = _mm512_loadu_ps(g + 2 * j + 16);
        } else {  /* the tail: 2 r values, zeros after them */
            const __mmask16 ma = (__mmask16)(2 * r >= 16 ? 0xFFFF : (1u << (2 * r)) - 1);
            const __mmask16 mb = (__mmask16)(2 * r <= 16 ? 0 : (1u << (2 * r - 16)) - 1);
            a = _mm512_maskz_loadu_ps(ma, g + 2 * j);
            b = _mm512_maskz_loadu_ps(mb, g + 2 * j + 16);
        }
        __m512 ux = _mm512_mul_ps(_mm512_add_ps(_mm512_permutex2var_ps(a, even, b), one), sx);
        __m512 uy = _mm512_mul_ps(_mm512_add_ps(_mm512_permutex2var_ps(a, odd, b), one), sy);
        ux = _mm512_sub_ps(ux, vshift);
        uy = _mm512_sub_ps(uy, vshift);
        __mmask16 far = 0;
        if (pad == 2) {  /* |u - lo|, flipped once at span (farther: the general path) */
            __m512 vx = _mm512_sub_ps(ux, vlo), vy = _mm512_sub_ps(uy, vlo);
            vx = _mm512_mask_sub_ps(vx, _mm512_cmp_ps_mask(vx, zero, _CMP_LT_OQ), zero, vx);
            vy = _mm512_mask_sub_ps(vy, _mm512_cmp_ps_mask(vy, zero, _CMP_LT_OQ), zero, vy);
            far = _mm512_cmp_ps_mask(vx, spx2, _CMP_GE_OQ) | _mm512_cmp_ps_mask(vy, spy2, _CMP_GE_OQ);
            const __mmask16 inx = _mm512_cmp_ps_mask(vx, spx, _CMP_LT_OQ);
            const __mmask16 iny = _mm512_cmp_ps_mask(vy, spy, _CMP_LT_OQ);
            ux = _mm512_mask_blend_ps(inx, _mm512_add_ps(_mm512_sub_ps(spx, _mm512_sub_ps(vx, spx)), vlo),
                                      _mm512_add_ps(vx, vlo));
            uy = _mm512_mask_blend_ps(iny, _mm512_add_ps(_mm512_sub_ps(spy, _mm512_sub_ps(vy, spy)), vlo),
                                      _mm512_add_ps(vy, vlo));
        }
        if (pad) {  /* clip into [0, size - 1]; NaN -> 0 */
            ux = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ux, hx, _CMP_GE_OQ), ux, hx);
            uy = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(uy, hy, _CMP_GE_OQ), uy, hy);
            ux = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(ux, zero, _CMP_GT_OQ), ux);
            uy = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(uy, zero, _CMP_GT_OQ), uy);
        }
        __m512 fx, fy;  /* rint (round half to even) or floor */
        if (nearest) {
            fx = _mm512_roundscale_ps(ux, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            fy = _mm512_roundscale_ps(uy, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        } else {
            fx = _mm512_roundscale_ps(ux, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
            fy = _mm512_roundscale_ps(uy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        }
        /* each tap's own inside test: a point with some taps outside sums the others,
         * as the general path does (a dropped tap adds +0 here: the same sum) */
        const __m512 ex = _mm512_add_ps(fx, one), ey = _mm512_add_ps(fy, one);
        const __mmask16 vx0 = _mm512_cmp_ps_mask(fx, zero, _CMP_GE_OQ)
                              & _mm512_cmp_ps_mask(fx, fw, _CMP_LT_OQ);
        const __mmask16 vy0 = (_mm512_cmp_ps_mask(fy, zero, _CMP_GE_OQ)
                               & _mm512_cmp_ps_mask(fy, fh, _CMP_LT_OQ) & (__mmask16)~far & lanes);
        const __mmask16 m00 = vx0 & vy0;
        const __m512 tx = _mm512_sub_ps(ux, fx), ty = _mm512_sub_ps(uy, fy);
        const __m512i off = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_cvttps_epi32(fy), vw),
                                             _mm512_cvttps_epi32(fx));
        if (nearest) {
            for (Py_ssize_t c = 0; c < C; c++)
                _mm512_mask_storeu_ps(out + c * P + j, lanes,
                                      _mm512_mask_i32gather_ps(zero, m00, off, x + c * HW, 4));
        } else {
            const __mmask16 vx1 = _mm512_cmp_ps_mask(ex, zero, _CMP_GE_OQ)
                                  & _mm512_cmp_ps_mask(ex, fw, _CMP_LT_OQ);
            const __mmask16 vy1 = (_mm512_cmp_ps_mask(ey, zero, _CMP_GE_OQ)
                                   & _mm512_cmp_ps_mask(ey, fh, _CMP_LT_OQ) & (__mmask16)~far
                                   & lanes);
            const __mmask16 m01 = vx1 & vy0, m10 = vx0 & vy1, m11 = vx1 & vy1;
            const __mmask16 any = m00 | m01 | m10 | m11;
            const __m512 sx1 = _mm512_sub_ps(one, tx), sy1 = _mm512_sub_ps(one, ty);
            const __m512 w0 = _mm512_mul_ps(sy1, sx1), w1 = _mm512_mul_ps(sy1, tx);
            const __m512 w2 = _mm512_mul_ps(ty, sx1), w3 = _mm512_mul_ps(ty, tx);
            for (Py_ssize_t c = 0; c < C; c++) {
                const float* xp = x + c * HW;
                __m512 v = _mm512_add_ps(
                    _mm512_mul_ps(w0, _mm512_mask_i32gather_ps(zero, m00, off, xp, 4)),
                    _mm512_mul_ps(w1, _mm512_mask_i32gather_ps(zero, m01, off, xp + 1, 4)));
                v = _mm512_add_ps(v, _mm512_mul_ps(
                    w2, _mm512_mask_i32gather_ps(zero, m10, off, xp + W, 4)));
                v = _mm512_add_ps(v, _mm512_mul_ps(
                    w3, _mm512_mask_i32gather_ps(zero, m11, off, xp + W + 1, 4)));
                /* no tap inside (NaN or far coordinates, NaN weights): 0 */
                _mm512_mask_storeu_ps(out + c * P + j, lanes, _mm512_maskz_mov_ps(any, v));
            }
        }
        if (far) {  /* reflected more than once: the caller's general path */
            all = 0;
            for (Py_ssize_t k = 0; k < r; k++) ok[j + k] = (unsigned char)(!((far >> k) & 1));
        } else {
            for (Py_ssize_t k = 0; k < r; k++) ok[j + k] = 1;
        }
    }
    return all;
}
#endif

static int sb_gs2d_fused_f(int isa, const float* x, const float* g, float* out, Py_ssize_t C,
        Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n, int nearest, int pad,
        float scale_x, float scale_y, float shift, float lo, float span_x, float span_y,
        unsigned char* ok, int* all) {
    SB_GS2D_IF_X86(
    if (isa == 2) {
        *all = sb_gs2d_fused_f_avx512(x, g, out, C, H, W, P, n, nearest, pad, scale_x, scale_y,
                                      shift, lo, span_x, span_y, ok);
        return 1;
    })
    return 0;
}

/* The widest set of these loops this CPU runs: 2 AVX-512F, 1 AVX2, 0 none. */
static int sb_gs2d_isa_available(void) {
#ifdef SB_GS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
    if (__builtin_cpu_supports("avx2")) return 1;
#endif
    return 0;
}
#endif
