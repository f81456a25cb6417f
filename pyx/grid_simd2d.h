/* More blocked loops of the 2-D grid sampling (pyx/_grid_sample.pyx), beside those of
 * grid_block2d.h:
 *
 * sb_gs2d_cubic_coords_*: bicubic points of a block, the rules of _axis/_cubic_taps
 *   (Keys' cubic convolution with A = -0.75) as a branch-free loop the compiler
 *   vectorises: the offset of the first of the 16 taps, the 16 weights
 *   wt[t * SB_GS_CUBIC_LD + j] (t = 4 row + column) and ok[j] = every tap inside
 *   (otherwise offset 0, weights 0: the caller recomputes the point).
 * sb_gs2d_scalar_cubic_*: out[c, j] = sum over the 16 taps of wt * x[c, tap], in the
 *   order of _fast_bicubic_forward.  Plain loads: on the Zen 5 machine this was
 *   written on, 16 AVX-512 gathers a vector of points took 1.8x as long.
 * sb_gs2d_cubic_coords_back_*: the coordinate pass of the backward, with the weights'
 *   derivatives kx, ky (d w / d g_x, d g_y) as _cubic_taps forms them.
 * sb_gs2d_cubic_grid_sums_*: the backward's grid-gradient sums of a block's points,
 *   channel by channel (those of _cubic_back_sums, in its order).
 * sb_gs2d_fused_f: bilinear (float32) with AVX-512F intrinsics, the coordinates and
 *   the gathers of every channel in one pass; nearest on grid_avx2.h's pass (see the
 *   dispatch at the end).
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
#include "grid_block2d.h" /* the AVX2 nearest forward */

/* The row pitch of the bicubic weight tables (16 rows of a block's points): 16 values
 * more than a block, so that the rows do not fall into the same few L1 sets, as rows
 * 1 or 2 KiB apart do (the backward's 48 rows then evicted each other on a 32 KiB
 * 8-way L1: 1.6-1.8x slower than per-point weights on the AMD EPYC family 25 VM). */
#define SB_GS_CUBIC_LD (SB_GS_BLOCK + 16)
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define SB_GS_X86 1
#endif

/* Keys' cubic weights, in the order of operations of _near/_far in _grid_sample.pyx. */
#define SB_NEAR(T, x) ((((T)1.25 * (x) - (T)2.25) * (x)) * (x) + 1)
#define SB_FAR(T, x) (((((T)-0.75 * (x) - (T)-3.75) * (x) + (T)-6.0) * (x)) - (T)-3.0)

/* Keys' derivatives (_dnear/_dfar of _grid_sample.pyx, same order of operations). */
#define SB_DNEAR(T, x) (((T)3.75 * (x) - (T)4.5) * (x))
#define SB_DFAR(T, x) ((((T)-2.25 * (x) - (T)-7.5) * (x)) + (T)-6.0)

/* Unroll the 4 x 4 tap loops completely: with the derivatives' 48 stores, gcc 12 left
 * them rolled, so wx[c], wy[b] stayed memory reads and the point loop scalar (the
 * backward's pass had been a quarter of a 2-D bicubic grid gradient on the AMD EPYC
 * family 25 model 1 VM, perf). */
#if defined(__GNUC__) && !defined(__clang__)
#define SB_UNROLL4 _Pragma("GCC unroll 4")
#elif defined(__clang__)
#define SB_UNROLL4 _Pragma("unroll 4")
#else
#define SB_UNROLL4
#endif
/* only in the backward's pass: the forward's was vectorised without it */
#define SB_UNROLL4_IF_1 SB_UNROLL4
#define SB_UNROLL4_IF_0

/* The loop of both coordinate passes; with DERIV (a constant) also the weights'
 * derivatives d w / d g_x, d g_y: kx[t] = wy[b] * dwx[c], ky[t] = dwy[b] * wx[c], as
 * _cubic_taps forms them (its 2-D factor wz = 1 changes no bits). */
#define SB_GS2D_CUBIC_COORDS_LOOP(T, FLOOR, DERIV)                                           \
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
        T wx[4], wy[4], dwx[4], dwy[4];                                                      \
        wx[0] = SB_FAR(T, tx + 1);                                                           \
        wx[1] = SB_NEAR(T, tx);                                                              \
        wx[2] = SB_NEAR(T, sx);                                                              \
        wx[3] = SB_FAR(T, sx + 1);                                                           \
        wy[0] = SB_FAR(T, ty + 1);                                                           \
        wy[1] = SB_NEAR(T, ty);                                                              \
        wy[2] = SB_NEAR(T, sy);                                                              \
        wy[3] = SB_FAR(T, sy + 1);                                                           \
        if (DERIV) {                                                                         \
            dwx[0] = SB_DFAR(T, tx + 1) * scale_x;                                           \
            dwx[1] = SB_DNEAR(T, tx) * scale_x;                                              \
            dwx[2] = -SB_DNEAR(T, sx) * scale_x;                                             \
            dwx[3] = -SB_DFAR(T, sx + 1) * scale_x;                                          \
            dwy[0] = SB_DFAR(T, ty + 1) * scale_y;                                           \
            dwy[1] = SB_DNEAR(T, ty) * scale_y;                                              \
            dwy[2] = -SB_DNEAR(T, sy) * scale_y;                                             \
            dwy[3] = -SB_DFAR(T, sy + 1) * scale_y;                                          \
        }                                                                                    \
        fx = inside ? fx : 1;                                                                \
        fy = inside ? fy : 1;                                                                \
        off[j] = ((int32_t)fy - 1) * (int32_t)W + ((int32_t)fx - 1);                         \
        SB_UNROLL4_IF_##DERIV for (int b = 0; b < 4; b++)                                    \
            SB_UNROLL4_IF_##DERIV for (int c = 0; c < 4; c++) {                              \
                wt[(4 * b + c) * SB_GS_CUBIC_LD + j] = inside ? wy[b] * wx[c] : 0;              \
                if (DERIV) {                                                                 \
                    kx[(4 * b + c) * SB_GS_CUBIC_LD + j] = inside ? wy[b] * dwx[c] : 0;         \
                    ky[(4 * b + c) * SB_GS_CUBIC_LD + j] = inside ? dwy[b] * wx[c] : 0;         \
                }                                                                            \
            }                                                                                \
        ok[j] = (unsigned char)inside;                                                       \
        all &= inside;                                                                       \
    }                                                                                        \
    return all;

/* sb_gs2d_cubic_coords_*: the forward's pass; sb_gs2d_cubic_coords_back_*: the
 * backward's, with the derivative weights kx, ky (same layout as wt). */
#define SB_GS2D_CUBIC_COORDS(T, S, FLOOR)                                                    \
SB_CLONES static int sb_gs2d_cubic_coords_##S(const T* restrict g, Py_ssize_t n,             \
        Py_ssize_t H, Py_ssize_t W, T scale_x, T scale_y, T shift, int32_t* restrict off,    \
        T* restrict wt, unsigned char* restrict ok) {                                        \
    T* kx = 0;                                                                               \
    T* ky = 0;                                                                               \
    SB_GS2D_CUBIC_COORDS_LOOP(T, FLOOR, 0)                                                   \
}                                                                                            \
SB_CLONES static int sb_gs2d_cubic_coords_back_##S(const T* restrict g, Py_ssize_t n,        \
        Py_ssize_t H, Py_ssize_t W, T scale_x, T scale_y, T shift, int32_t* restrict off,    \
        T* restrict wt, T* restrict kx, T* restrict ky, unsigned char* restrict ok) {        \
    SB_GS2D_CUBIC_COORDS_LOOP(T, FLOOR, 1)                                                   \
}

/* Without -fno-trapping-math gcc keeps this loop scalar ("control flow in loop": the
 * selects of values whose comparisons could trap); with it, 8 points a vector on the
 * AVX2 clone (the same operations, so the same values).  Only here: module-wide, the
 * flag also changed the nearest push's scatter loop, which became 15-25 % slower. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif
SB_GS2D_CUBIC_COORDS(float, f, floorf)
SB_GS2D_CUBIC_COORDS(double, d, floor)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* The scalar sums of a point's taps. */
#define SB_GS2D_SCALAR(T, S)                                                                 \
static inline T sb_gs2d_cubic1_##S(const T* q, Py_ssize_t W, const T* wt, Py_ssize_t j) {    \
    T acc = 0;                                                                               \
    for (int b = 0; b < 4; b++)                                                              \
        for (int c = 0; c < 4; c++)                                                          \
            acc = acc + wt[(4 * b + c) * SB_GS_CUBIC_LD + j] * q[b * W + c];                 \
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

/* The grid-gradient sums of the backward's points whose taps are all inside (ok[j]),
 * the sums of _cubic_back_sums (same products, same order: each point's chains, then
 * ax = ax + gy * sx over the channels in order), with the channels outermost and the
 * points innermost: consecutive points' 16-long chains are independent, so they overlap
 * in the core instead of waiting on each other's adds as the point-by-point loop does.
 * Point j is point idx[j] of the sample (its gy[c * P + idx[j]], gg[2 * idx[j]]); kx, ky
 * are the coordinate pass's tables (row pitch SB_GS_CUBIC_LD); ax, ay scratch of n. */
#define SB_GS2D_CUBIC_GRID(T, S)                                                             \
static void sb_gs2d_cubic_grid_sums_##S(const T* restrict x, Py_ssize_t C, Py_ssize_t HW,    \
        Py_ssize_t W, const T* restrict gy, Py_ssize_t P, Py_ssize_t n,                      \
        const Py_ssize_t* restrict idx, const int32_t* restrict off, const T* restrict kx,  \
        const T* restrict ky, const unsigned char* restrict ok, T* restrict ax,             \
        T* restrict ay, T* restrict gg) {                                                    \
    for (Py_ssize_t j = 0; j < n; j++) {                                                     \
        ax[j] = 0;                                                                           \
        ay[j] = 0;                                                                           \
    }                                                                                        \
    for (Py_ssize_t c = 0; c < C; c++) {                                                     \
        const T* xc = x + c * HW;                                                            \
        const T* gyc = gy + c * P;                                                           \
        for (Py_ssize_t j = 0; j < n; j++) {                                                 \
            if (!ok[j])                                                                      \
                continue;                                                                    \
            const T* q = xc + off[j];                                                        \
            T sx = 0, sy = 0;                                                                \
            for (int b = 0; b < 4; b++)                                                      \
                for (int k = 0; k < 4; k++) {                                                \
                    T v = q[b * W + k];                                                      \
                    sx = sx + kx[(4 * b + k) * SB_GS_CUBIC_LD + j] * v;                      \
                    sy = sy + ky[(4 * b + k) * SB_GS_CUBIC_LD + j] * v;                      \
                }                                                                            \
            T g = gyc[idx[j]];                                                               \
            ax[j] = ax[j] + g * sx;                                                          \
            ay[j] = ay[j] + g * sy;                                                          \
        }                                                                                    \
    }                                                                                        \
    for (Py_ssize_t j = 0; j < n; j++)                                                       \
        if (ok[j]) {                                                                         \
            gg[2 * idx[j]] = ax[j];                                                          \
            gg[2 * idx[j] + 1] = ay[j];                                                      \
        }                                                                                    \
}

SB_GS2D_CUBIC_GRID(float, f)
SB_GS2D_CUBIC_GRID(double, d)

#ifdef SB_GS_X86
#define SB_GS2D_IF_X86(...) __VA_ARGS__
#else
#define SB_GS2D_IF_X86(...)
#endif

#ifdef SB_GS_X86
/* The AVX-512 passes below share the coordinate rules of sb_gs2d_coords_f, written on
 * registers for 16 points: the unnormalisation, reflection (the unflipped and
 * once-flipped cases; farther points are flagged "far" for the caller's general path),
 * clipping, and the grid derivative factor d = du/dg (0 on and beyond a clipped bound). */
#define SB_AVX512 __attribute__((target("avx512f")))
typedef struct {
    __m512 one, zero, sx, sy, shift, lo, spx, spy, spx2, spy2, hx, hy, fw, fh;
    __m512i vw, even, odd;
    int pad;
} sb_gs2d_k16;

SB_AVX512 static inline sb_gs2d_k16 sb_gs2d_k16_make(Py_ssize_t H, Py_ssize_t W, float scale_x,
        float scale_y, float shift, int pad, float lo, float span_x, float span_y) {
    sb_gs2d_k16 k;
    k.one = _mm512_set1_ps(1.0f);
    k.zero = _mm512_setzero_ps();
    k.sx = _mm512_set1_ps(scale_x);
    k.sy = _mm512_set1_ps(scale_y);
    k.shift = _mm512_set1_ps(shift);
    k.lo = _mm512_set1_ps(lo);
    k.spx = _mm512_set1_ps(span_x);
    k.spy = _mm512_set1_ps(span_y);
    k.spx2 = _mm512_set1_ps(2 * span_x);
    k.spy2 = _mm512_set1_ps(2 * span_y);
    k.hx = _mm512_set1_ps((float)(W - 1));
    k.hy = _mm512_set1_ps((float)(H - 1));
    k.fw = _mm512_set1_ps((float)W);
    k.fh = _mm512_set1_ps((float)H);
    k.vw = _mm512_set1_epi32((int)W);
    k.even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    k.odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    k.pad = pad;
    return k;
}

/* One axis: u (unnormalised, shifted) -> the padded coordinate; *d <- du/dg. */
SB_AVX512 static inline __m512 sb_gs2d_pad16(const sb_gs2d_k16* k, __m512 u, __m512 scale,
        __m512 span, __m512 span2, __m512 hi, __m512* d, __mmask16* far) {
    __m512 sg = k->one;
    if (k->pad == 2) {  /* |u - lo|, then one flip at span */
        __m512 v = _mm512_sub_ps(u, k->lo);
        const __mmask16 neg = _mm512_cmp_ps_mask(v, k->zero, _CMP_LT_OQ);
        sg = _mm512_mask_sub_ps(sg, neg, k->zero, sg);
        v = _mm512_mask_sub_ps(v, neg, k->zero, v);
        *far |= _mm512_cmp_ps_mask(v, span2, _CMP_GE_OQ);
        const __mmask16 in = _mm512_cmp_ps_mask(v, span, _CMP_LT_OQ);
        sg = _mm512_mask_sub_ps(sg, (__mmask16)~in, k->zero, sg);
        u = _mm512_mask_blend_ps(in, _mm512_add_ps(_mm512_sub_ps(span, _mm512_sub_ps(v, span)),
                                                   k->lo),
                                 _mm512_add_ps(v, k->lo));
    }
    *d = scale;
    if (k->pad) {  /* clip into [0, size - 1] (NaN -> 0); the derivative is 0 on the bounds */
        *d = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u, k->zero, _CMP_GT_OQ)
                                 & _mm512_cmp_ps_mask(u, hi, _CMP_LT_OQ),
                                 _mm512_mul_ps(sg, scale));
        u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, hi, _CMP_GE_OQ), u, hi);
        u = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(u, k->zero, _CMP_GT_OQ), u);
    }
    return u;
}

/* The r <= 16 points of g (x, y pairs) -> padded coordinates, du/dg, far mask. */
SB_AVX512 static inline void sb_gs2d_coords16(const sb_gs2d_k16* k, const float* g,
        Py_ssize_t r, __m512* ux, __m512* uy, __m512* dx, __m512* dy, __mmask16* far) {
    __m512 a, b;
    if (r == 16) {
        a = _mm512_loadu_ps(g);
        b = _mm512_loadu_ps(g + 16);
    } else {  /* the tail: 2 r values, zeros after them */
        const __mmask16 ma = (__mmask16)(2 * r >= 16 ? 0xFFFF : (1u << (2 * r)) - 1);
        const __mmask16 mb = (__mmask16)(2 * r <= 16 ? 0 : (1u << (2 * r - 16)) - 1);
        a = _mm512_maskz_loadu_ps(ma, g);
        b = _mm512_maskz_loadu_ps(mb, g + 16);
    }
    __m512 u = _mm512_mul_ps(_mm512_add_ps(_mm512_permutex2var_ps(a, k->even, b), k->one), k->sx);
    __m512 v = _mm512_mul_ps(_mm512_add_ps(_mm512_permutex2var_ps(a, k->odd, b), k->one), k->sy);
    *far = 0;
    *ux = sb_gs2d_pad16(k, _mm512_sub_ps(u, k->shift), k->sx, k->spx, k->spx2, k->hx, dx, far);
    *uy = sb_gs2d_pad16(k, _mm512_sub_ps(v, k->shift), k->sy, k->spy, k->spy2, k->hy, dy, far);
}

SB_AVX512 static inline __m512 sb_gs2d_round16(__m512 u, int nearest) {
    /* rint (round half to even) for nearest, floor for bilinear */
    return nearest ? _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                   : _mm512_roundscale_ps(u, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

SB_AVX512 static inline __mmask16 sb_gs2d_in16(const sb_gs2d_k16* k, __m512 f, __m512 size) {
    return _mm512_cmp_ps_mask(f, k->zero, _CMP_GE_OQ) & _mm512_cmp_ps_mask(f, size, _CMP_LT_OQ);
}

/* Flat offset y W + x of the first tap (lanes outside m: 0). */
SB_AVX512 static inline __m512i sb_gs2d_off16(const sb_gs2d_k16* k, __m512 fx, __m512 fy,
        __mmask16 m) {
    return _mm512_add_epi32(
        _mm512_mullo_epi32(_mm512_cvttps_epi32(_mm512_maskz_mov_ps(m, fy)), k->vw),
        _mm512_cvttps_epi32(_mm512_maskz_mov_ps(m, fx)));
}

/* x[off] and x[off + 1] of 16 points whose two taps are both inside (mask m): one
 * 64-bit gather per 8 points fetches both (half the elements of two 32-bit gathers,
 * which is what a gather costs), then the pairs are split into two vectors. */
SB_AVX512 static inline void sb_gs2d_pairs16(const sb_gs2d_k16* k, const float* x, __m512i off,
        __mmask16 m, __m512* left, __m512* right) {
    const __m512i none = _mm512_setzero_si512();
    const __m512 lo = _mm512_castsi512_ps(_mm512_mask_i32gather_epi64(
        none, (__mmask8)(m & 0xFF), _mm512_castsi512_si256(off), (const void*)x, 4));
    const __m512 hi = _mm512_castsi512_ps(_mm512_mask_i32gather_epi64(
        none, (__mmask8)(m >> 8), _mm512_extracti64x4_epi64(off, 1), (const void*)x, 4));
    *left = _mm512_permutex2var_ps(lo, k->even, hi);
    *right = _mm512_permutex2var_ps(lo, k->odd, hi);
}

/* The lanes of the r <= 16 points a vector holds. */
static inline __mmask16 sb_gs_lanes(Py_ssize_t r) {
    return (__mmask16)(r == 16 ? 0xFFFF : (1u << r) - 1);
}

/* The r points' indices into their sample: ia[t] = pts[j + t], or p0 + j + t when pts
 * is NULL; returns them as 16 int32 lanes for gathers (zeros when pts is NULL). */
SB_AVX512 static inline __m512i sb_gs_points16(const Py_ssize_t* pts, Py_ssize_t p0,
        Py_ssize_t j, Py_ssize_t r, Py_ssize_t* ia) {
    for (Py_ssize_t t = 0; t < r; t++) ia[t] = pts ? pts[j + t] : p0 + j + t;
    if (!pts) return _mm512_setzero_si512();
    const __mmask16 lanes = sb_gs_lanes(r);
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm512_cvtepi64_epi32(
            _mm512_maskz_loadu_epi64((__mmask8)(lanes & 0xFF), pts + j))),
        _mm512_cvtepi64_epi32(_mm512_maskz_loadu_epi64((__mmask8)(lanes >> 8), pts + j + 8)),
        1);
}

/* grad_y of the points of one channel (lanes in m): gathered by index, or loaded when
 * the points are consecutive. */
SB_AVX512 static inline __m512 sb_gs_grad16(const float* gyp, const Py_ssize_t* pts,
        __m512i pidx, Py_ssize_t p0, Py_ssize_t j, __mmask16 m) {
    return pts ? _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, pidx, gyp, 4)
               : _mm512_maskz_loadu_ps(m, gyp + p0 + j);
}

SB_AVX512 static inline void sb_gs2d_ok16(unsigned char* ok, Py_ssize_t r, __mmask16 m) {
    for (Py_ssize_t q = 0; q < r; q++) ok[q] = (unsigned char)((m >> q) & 1);
}

/* The nearest tap of r <= 16 points of g: the lanes whose tap is inside (returned), its
 * flat offset there (0 in the other lanes, *off), and the points reflected more than
 * once (*far). */
SB_AVX512 static inline __mmask16 sb_gs2d_nearest_tap16(const sb_gs2d_k16* k, const float* g,
        Py_ssize_t r, __m512i* off, __mmask16* far) {
    __m512 ux, uy, dx, dy;
    sb_gs2d_coords16(k, g, r, &ux, &uy, &dx, &dy, far);
    const __m512 fx = sb_gs2d_round16(ux, 1), fy = sb_gs2d_round16(uy, 1);
    const __mmask16 in = sb_gs2d_in16(k, fx, k->fw) & sb_gs2d_in16(k, fy, k->fh)
                         & (__mmask16)~*far & sb_gs_lanes(r);
    *off = sb_gs2d_off16(k, fx, fy, in);
    return in;
}

/* sb_gs2d_fused_f_avx512: the blocked bilinear forward (float32) in one pass, 16 points
 * a vector: the coordinates
 * on registers, then the gathers of every channel, with no scratch arrays between
 * the two.  Taps outside the input are masked out of the gathers, which gives the
 * general path's sums for points with some taps outside (zeros padding, or the last
 * row and column after clipping): a dropped tap adds +0 here, which leaves the sum as
 * the general path forms it.
 * Points reflected more than once get ok[j] = 0 (the caller recomputes them);
 * returns whether every point was ok. */
SB_AVX512 static int sb_gs2d_fused_f_avx512(const float* x, const float* g, float* out,
        Py_ssize_t C, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,
        const sb_gs2d_k16* k, unsigned char* ok) {
    const Py_ssize_t HW = H * W;
    const __m512 zero = k->zero;
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        const __mmask16 lanes = sb_gs_lanes(r);
        __m512 ux, uy, dx, dy;
        __mmask16 far;
        sb_gs2d_coords16(k, g + 2 * j, r, &ux, &uy, &dx, &dy, &far);
        const __m512 fx = sb_gs2d_round16(ux, 0), fy = sb_gs2d_round16(uy, 0);
        const __m512 ex = _mm512_add_ps(fx, k->one), ey = _mm512_add_ps(fy, k->one);
        const __mmask16 vx0 = sb_gs2d_in16(k, fx, k->fw);
        const __mmask16 vy0 = sb_gs2d_in16(k, fy, k->fh) & (__mmask16)~far & lanes;
        const __mmask16 m00 = vx0 & vy0;
        const __m512 tx = _mm512_sub_ps(ux, fx), ty = _mm512_sub_ps(uy, fy);
        const __m512i off = _mm512_add_epi32(_mm512_mullo_epi32(_mm512_cvttps_epi32(fy), k->vw),
                                             _mm512_cvttps_epi32(fx));
        const __mmask16 vx1 = sb_gs2d_in16(k, ex, k->fw);
        const __mmask16 vy1 = sb_gs2d_in16(k, ey, k->fh) & (__mmask16)~far & lanes;
        const __mmask16 m01 = vx1 & vy0, m10 = vx0 & vy1, m11 = vx1 & vy1;
        const __mmask16 any = m00 | m01 | m10 | m11;
        const __m512 sx1 = _mm512_sub_ps(k->one, tx), sy1 = _mm512_sub_ps(k->one, ty);
        const __m512 w0 = _mm512_mul_ps(sy1, sx1), w1 = _mm512_mul_ps(sy1, tx);
        const __m512 w2 = _mm512_mul_ps(ty, sx1), w3 = _mm512_mul_ps(ty, tx);
        /* every point with all four taps inside or none: pairs of taps per gather */
        const int whole = m01 == m00 && m10 == m00 && m11 == m00;
        for (Py_ssize_t c = 0; c < C; c++) {
            const float* xp = x + c * HW;
            __m512 q0, q1, q2, q3;
            if (whole) {
                sb_gs2d_pairs16(k, xp, off, m00, &q0, &q1);
                sb_gs2d_pairs16(k, xp + W, off, m00, &q2, &q3);
            } else {
                q0 = _mm512_mask_i32gather_ps(zero, m00, off, xp, 4);
                q1 = _mm512_mask_i32gather_ps(zero, m01, off, xp + 1, 4);
                q2 = _mm512_mask_i32gather_ps(zero, m10, off, xp + W, 4);
                q3 = _mm512_mask_i32gather_ps(zero, m11, off, xp + W + 1, 4);
            }
            __m512 v = _mm512_add_ps(_mm512_mul_ps(w0, q0), _mm512_mul_ps(w1, q1));
            v = _mm512_add_ps(v, _mm512_mul_ps(w2, q2));
            v = _mm512_add_ps(v, _mm512_mul_ps(w3, q3));
            /* no tap inside (NaN or far coordinates, NaN weights): 0 */
            _mm512_mask_storeu_ps(out + c * P + j, lanes, _mm512_maskz_mov_ps(any, v));
        }
        all &= far == 0;
        sb_gs2d_ok16(ok + j, r, (__mmask16)~far);
    }
    return all;
}

/* The bilinear push of r <= 16 points (lanes `in`, first tap offsets oa, tap weights
 * wa) for the channels c0 ... c1 - 1 (at most SB_GS_PUSH_GROUP; gq[c % group] holds
 * their grad_y): point by point, each point's channels in turn.  Neighbouring points
 * share taps, so within a channel each point's adds wait for the previous point's
 * stores; the other channels' adds are independent and fill that wait.  The order of
 * the additions into each element (point order) is the channel-by-channel loop's, so
 * the values are the same bits.  On the Zen 5 machine this was written on (a C
 * harness, 128x128 warp, 1 thread) the push of 4 channels took 109 us against 132 us
 * channel by channel, of 16 channels 353 against 448 us. */
#define SB_GS_PUSH_GROUP 4
static inline void sb_gs2d_push_group(float* gx, Py_ssize_t W, Py_ssize_t HW, Py_ssize_t c0,
        Py_ssize_t c1, Py_ssize_t r, __mmask16 in, const int32_t* oa, float wa[4][16],
        float gq[SB_GS_PUSH_GROUP][16]) {
    if (c1 - c0 == SB_GS_PUSH_GROUP) {
        float* g0 = gx + c0 * HW;
        float* g1 = g0 + HW;
        float* g2 = g1 + HW;
        float* g3 = g2 + HW;
        for (Py_ssize_t q = 0; q < r; q++) {
            if (!((in >> q) & 1)) continue;
            const Py_ssize_t o = oa[q];
            const float w0 = wa[0][q], w1 = wa[1][q], w2 = wa[2][q], w3 = wa[3][q];
            const float a = gq[0][q], b = gq[1][q], c = gq[2][q], d = gq[3][q];
            g0[o] = g0[o] + w0 * a;
            g1[o] = g1[o] + w0 * b;
            g2[o] = g2[o] + w0 * c;
            g3[o] = g3[o] + w0 * d;
            g0[o + 1] = g0[o + 1] + w1 * a;
            g1[o + 1] = g1[o + 1] + w1 * b;
            g2[o + 1] = g2[o + 1] + w1 * c;
            g3[o + 1] = g3[o + 1] + w1 * d;
            g0[o + W] = g0[o + W] + w2 * a;
            g1[o + W] = g1[o + W] + w2 * b;
            g2[o + W] = g2[o + W] + w2 * c;
            g3[o + W] = g3[o + W] + w2 * d;
            g0[o + W + 1] = g0[o + W + 1] + w3 * a;
            g1[o + W + 1] = g1[o + W + 1] + w3 * b;
            g2[o + W + 1] = g2[o + W + 1] + w3 * c;
            g3[o + W + 1] = g3[o + W + 1] + w3 * d;
        }
        return;
    }
    for (Py_ssize_t q = 0; q < r; q++) {
        if (!((in >> q) & 1)) continue;
        const Py_ssize_t o = oa[q];
        const float w0 = wa[0][q], w1 = wa[1][q], w2 = wa[2][q], w3 = wa[3][q];
        for (Py_ssize_t c = c0; c < c1; c++) {
            float* gxp = gx + c * HW + o;
            const float g = gq[c % SB_GS_PUSH_GROUP][q];
            gxp[0] = gxp[0] + w0 * g;
            gxp[1] = gxp[1] + w1 * g;
            gxp[W] = gxp[W] + w2 * g;
            gxp[W + 1] = gxp[W + 1] + w3 * g;
        }
    }
}

/* sb_gs2d_fused_back_f_avx512: the backward of a block's n points (float32, bilinear; the
 * nearest push is grid_nearest.h's), g their grid values in block order and pts their
 * indices into the sample's P points (NULL: the points p0 ... p0 + n - 1).  For the
 * points with every tap inside (ok[j] = 1; the others are the caller's), 16 at a time: the grid gradient's sums over the
 * channels on registers (as sb_gs2d_backward_f forms them: the same values) and,
 * channel by channel, the push in point order; gg (unless NULL, bilinear) gets
 * (sum * du/dg) per point, gx (unless NULL) the push. */
SB_AVX512 static int sb_gs2d_fused_back_f_avx512(const float* x, const float* gy, float* gx,
        float* gg, Py_ssize_t C, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,
        const float* g, const Py_ssize_t* pts, Py_ssize_t p0,
        const sb_gs2d_k16* k, unsigned char* ok) {
    const Py_ssize_t HW = H * W;
    const __m512 zero = k->zero, one = k->one;
    const int deriv = gg != 0;
    float wa[4][16], gq[SB_GS_PUSH_GROUP][16], sa[2][16];
    int32_t oa[16];
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        const __mmask16 lanes = sb_gs_lanes(r);
        __m512 ux, uy, dx, dy;
        __mmask16 far;
        sb_gs2d_coords16(k, g + 2 * j, r, &ux, &uy, &dx, &dy, &far);
        const __m512 fx = sb_gs2d_round16(ux, 0), fy = sb_gs2d_round16(uy, 0);
        const __m512 ex = _mm512_add_ps(fx, one), ey = _mm512_add_ps(fy, one);
        const __mmask16 in = sb_gs2d_in16(k, fx, k->fw) & sb_gs2d_in16(k, ex, k->fw)
                             & sb_gs2d_in16(k, fy, k->fh) & sb_gs2d_in16(k, ey, k->fh)
                             & (__mmask16)~far & lanes;
        const __m512 tx = _mm512_sub_ps(ux, fx), ty = _mm512_sub_ps(uy, fy);
        const __m512i off = sb_gs2d_off16(k, fx, fy, in);
        Py_ssize_t ia[16];  /* the points' indices into the sample */
        const __m512i pidx = sb_gs_points16(pts, p0, j, r, ia);
        const __m512 sx1 = _mm512_sub_ps(one, tx), sy1 = _mm512_sub_ps(one, ty);
        _mm512_storeu_si512((void*)oa, off);
        _mm512_storeu_ps(wa[0], _mm512_mul_ps(sy1, sx1));
        _mm512_storeu_ps(wa[1], _mm512_mul_ps(sy1, tx));
        _mm512_storeu_ps(wa[2], _mm512_mul_ps(ty, sx1));
        _mm512_storeu_ps(wa[3], _mm512_mul_ps(ty, tx));
        __m512 ax = zero, ay = zero;
        for (Py_ssize_t c = 0; c < C; c++) {
            const float* xp = x + c * HW;
            const __m512 gv = sb_gs_grad16(gy + c * P, pts, pidx, p0, j, in);
            float* const ga = gq[c % SB_GS_PUSH_GROUP];
            if (deriv) {  /* the interpolant's differences along x and y */
                __m512 q0, q1, q2, q3;
                sb_gs2d_pairs16(k, xp, off, in, &q0, &q1);
                sb_gs2d_pairs16(k, xp + W, off, in, &q2, &q3);
                ax = _mm512_add_ps(ax, _mm512_mul_ps(gv, _mm512_add_ps(
                    _mm512_mul_ps(sy1, _mm512_sub_ps(q1, q0)),
                    _mm512_mul_ps(ty, _mm512_sub_ps(q3, q2)))));
                ay = _mm512_add_ps(ay, _mm512_mul_ps(gv, _mm512_add_ps(
                    _mm512_mul_ps(sx1, _mm512_sub_ps(q2, q0)),
                    _mm512_mul_ps(tx, _mm512_sub_ps(q3, q1)))));
            }
            if (gx) {
                _mm512_storeu_ps(ga, gv);
                if (c % SB_GS_PUSH_GROUP == SB_GS_PUSH_GROUP - 1 || c == C - 1)
                    sb_gs2d_push_group(gx, W, HW, c - c % SB_GS_PUSH_GROUP, c + 1, r, in, oa,
                                       wa, gq);
            }
        }
        if (deriv) {
            _mm512_storeu_ps(sa[0], _mm512_mul_ps(ax, dx));
            _mm512_storeu_ps(sa[1], _mm512_mul_ps(ay, dy));
            for (Py_ssize_t q = 0; q < r; q++) {
                if (!((in >> q) & 1)) continue;
                gg[2 * ia[q]] = sa[0][q];
                gg[2 * ia[q] + 1] = sa[1][q];
            }
        }
        all &= in == lanes;
        sb_gs2d_ok16(ok + j, r, in);
    }
    return all;
}

/* The push's keys of r <= 16 points from their padded coordinate u along the slab axis
 * (y in 2-D, z in 3-D; `size` its length): the slab of the lowest row (plane) its taps
 * touch (slab_of_row[row]), -1 for none, -2 for a point reflected more than once (the
 * caller computes those). */
SB_AVX512 static inline void sb_gs_keys16(const sb_gs2d_k16* k, __m512 u, __m512 size,
        __mmask16 far, const int32_t* slab_of_row, Py_ssize_t r, Py_ssize_t* keys) {
    const __m512 f = sb_gs2d_round16(u, 0);
    const __mmask16 v0 = sb_gs2d_in16(k, f, size);
    const __mmask16 v1 = sb_gs2d_in16(k, _mm512_add_ps(f, k->one), size);
    const __m512 row = _mm512_mask_blend_ps(v0, _mm512_add_ps(f, k->one), f);  /* f, else f + 1 */
    const __m512i s = _mm512_mask_i32gather_epi32(
        _mm512_set1_epi32(-1), v0 | v1, _mm512_cvttps_epi32(_mm512_maskz_mov_ps(v0 | v1, row)),
        (const void*)slab_of_row, 4);
    int32_t ka[16];
    _mm512_storeu_si512((void*)ka, _mm512_mask_mov_epi32(s, far, _mm512_set1_epi32(-2)));
    for (Py_ssize_t q = 0; q < r; q++) keys[q] = ka[q];
}

/* sb_gs2d_keys_f_avx512: the keys of a sample's n points (2-D: by rows). */
SB_AVX512 static void sb_gs2d_keys_f_avx512(const float* g, Py_ssize_t n,
        const sb_gs2d_k16* k, const int32_t* slab_of_row, Py_ssize_t* keys) {
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        __m512 ux, uy, dx, dy;
        __mmask16 far;
        sb_gs2d_coords16(k, g + 2 * j, r, &ux, &uy, &dx, &dy, &far);
        sb_gs_keys16(k, uy, k->fh, far, slab_of_row, r, keys + j);
    }
}
#endif

/* Dispatch: each returns 0 (nothing done) unless isa == 2 on an x86-64 build, or for
 * sb_gs2d_fused_f isa >= 1 with nearest: grid_avx2.h's sb_gs_nearest_f_avx2 on both SIMD
 * paths.  Its 8-lane vectors built from plain loads, the offsets read once for every
 * channel, beat this file's 16-lane forms on the AMD EPYC family 25 VM (Zen 4) in 23
 * of 24 timings (2-D and 3-D, batch 1 and 8, each padding, 1 and 2 threads; the 2-D
 * 16-lane form copied value by value, the 3-D one gathered): 2-D batch 1 zeros 27.9
 * against 34.6 us at 1 thread, 3-D batch 8 zeros 591 against 962 (kernel calls, best
 * of 7).  On Zen 5 the 16-lane copy had been measured against gathers only. */
static int sb_gs2d_fused_f(int isa, const float* x, const float* g, float* out, Py_ssize_t C,
        Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n, int nearest, int pad,
        float scale_x, float scale_y, float shift, float lo, float span_x, float span_y,
        unsigned char* ok, int* all) {
    SB_GS2D_IF_X86(
    if (isa >= 1 && nearest) {
        const float scale[2] = {scale_x, scale_y}, span[2] = {span_x, span_y};
        const sb_gs_k8 k = sb_gs_k8_make(1, H, W, scale, shift, pad, lo, span, 2);
        *all = sb_gs_nearest_f_avx2(2, x, g, out, C, H * W, P, n, &k, ok);
        return 1;
    }
    if (isa == 2) {
        const sb_gs2d_k16 k = sb_gs2d_k16_make(H, W, scale_x, scale_y, shift, pad, lo, span_x,
                                               span_y);
        *all = sb_gs2d_fused_f_avx512(x, g, out, C, H, W, P, n, &k, ok);
        return 1;
    })
    return 0;
}

static int sb_gs2d_fused_back_f(int isa, const float* x, const float* gy, float* gx,
        float* gg, Py_ssize_t C, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,
        const float* g, const Py_ssize_t* pts, Py_ssize_t p0, int pad,
        float scale_x, float scale_y, float shift, float lo, float span_x, float span_y,
        unsigned char* ok, int* all) {
    SB_GS2D_IF_X86(
    if (isa == 2) {
        const sb_gs2d_k16 k = sb_gs2d_k16_make(H, W, scale_x, scale_y, shift, pad, lo, span_x,
                                               span_y);
        *all = sb_gs2d_fused_back_f_avx512(x, gy, gx, gg, C, H, W, P, n, g, pts, p0, &k, ok);
        return 1;
    })
    return 0;
}

static int sb_gs2d_keys_f(int isa, const float* g, Py_ssize_t n, Py_ssize_t H, Py_ssize_t W,
        int pad, float scale_x, float scale_y, float shift, float lo,
        float span_x, float span_y, const int32_t* slab_of_row, Py_ssize_t* keys) {
    SB_GS2D_IF_X86(
    if (isa == 1) {
        const float scale[2] = {scale_x, scale_y}, span[2] = {span_x, span_y};
        const sb_gs_k8 k = sb_gs_k8_make(1, H, W, scale, shift, pad, lo, span, 2);
        sb_gs_keys_f_avx2(2, g, n, &k, slab_of_row, keys);
        return 1;
    }
    if (isa == 2) {
        const sb_gs2d_k16 k = sb_gs2d_k16_make(H, W, scale_x, scale_y, shift, pad, lo, span_x,
                                               span_y);
        sb_gs2d_keys_f_avx512(g, n, &k, slab_of_row, keys);
        return 1;
    })
    return 0;
}

/* The isa code of the passes above this CPU runs: 2 (AVX-512F), or 0 (none: the
 * portable loops). */
static int sb_gs2d_isa_available(void) {
#ifdef SB_GS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
#endif
    return 0;
}
#endif
