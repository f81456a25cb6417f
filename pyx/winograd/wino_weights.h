/* The Winograd weight transform, U = G w G^T, of runs of 3x3 kernels, and its adjoint,
 * the weight gradient's fold (below), float and double:
 * F(2x2, 3x3) (16 points) and F(4x4, 3x3) (36 points).  One home for the weight
 * transform of _winograd_weights.pyx (its prange over runs) and of the convolutions in
 * one OpenMP region (wino_fused.h, which transform the weights in the region before the
 * chunks), so both give the same bits.
 *
 * A run is `count` kernels w + j*step (9 taps each, row-major), transformed 64 at a time:
 * their taps gathered into nine contiguous planes (so the arithmetic vectorises across
 * kernels: sb_w2_wt / sb_w4_wt in wino2_rows.h / wino4_rows.h), transformed into a local
 * block, and the output rows copied out as contiguous runs u[xi * su + j] (16 or 36
 * single-float streams su apart alias in the cache when su is a multiple of 4 KiB:
 * measured 11.8 ms instead of 0.6 ms for 128x384 kernels).  With flip, the transforms
 * of the flipped kernels w[2-k, 2-l] (the input gradient's): for F(2x2) a permutation of
 * the 16 points (G J = P G, J reversing the taps, P swapping rows 0 and 3), for F(4x4)
 * the taps gathered in reverse. */
#ifndef SANDBOX_WINO_WEIGHTS_H
#define SANDBOX_WINO_WEIGHTS_H

#include <stddef.h>
#include <string.h>

#include "wino2_rows.h"
#include "wino4_rows.h"
#include "wino_planes.h"  /* sb_copy_floats */

/* The point of the flipped kernel's F(2x2) transform that holds point xi of the
 * kernel's: G (J a J) G^T = P (G a G^T) P^T. */
static inline int sb_w2_flip_point(int xi)
{
    int i = xi / 4, j = xi % 4;
    i = i == 0 || i == 3 ? 3 - i : i;
    j = j == 0 || j == 3 ? 3 - j : j;
    return 4 * i + j;
}

/* Taps of kernels j0 .. nb-1 a value at a time (the AVX2 gather's remainder, and every
 * kernel where there is no AVX2 or the values are doubles). */
#define SB_TAPS_FROM(T, S)                                                              \
static inline void sb_taps_from_##S(const T *w, ptrdiff_t step, ptrdiff_t j0,           \
                                    ptrdiff_t nb, int reverse, T *taps)                 \
{                                                                                       \
    for (ptrdiff_t j = j0; j < nb; j++)                                                 \
        for (int t = 0; t < 9; t++)                                                     \
            taps[t * 64 + j] = w[j * step + (reverse ? 8 - t : t)];                     \
}
SB_TAPS_FROM(float, f)
SB_TAPS_FROM(double, d)

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* Eight kernels w + k*step (k < 8) into taps[t * 64 + k]. */
__attribute__((target("avx2")))
static void sb_gather_taps8_avx2(const float *w, ptrdiff_t step, int reverse, float *taps)
{
    const __m256i back = _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0);
    __m256 r[8], a[8], b[8];
    if (reverse) {  /* taps 0..7 of kernel k: w[8] .. w[1] */
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            r[k] = _mm256_permutevar8x32_ps(_mm256_loadu_ps(w + k * step + 1), back);
    } else {
        #pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            r[k] = _mm256_loadu_ps(w + k * step);
    }
    /* the kernels' next cache lines, which the next runs (the next input channels, 9
     * floats on, in the forward's runs) read: kernels a whole weight row apart defeat
     * the hardware's prefetch (a prefetch never faults, past the array's end either) */
    #pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        _mm_prefetch((const char *)(w + k * step + 16), _MM_HINT_T0);
    #pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
        a[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        a[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    #pragma GCC unroll 2
    for (int k = 0; k < 8; k += 4) {
        b[k] = _mm256_shuffle_ps(a[k], a[k + 2], 0x44);
        b[k + 1] = _mm256_shuffle_ps(a[k], a[k + 2], 0xEE);
        b[k + 2] = _mm256_shuffle_ps(a[k + 1], a[k + 3], 0x44);
        b[k + 3] = _mm256_shuffle_ps(a[k + 1], a[k + 3], 0xEE);
    }
    #pragma GCC unroll 4
    for (int t = 0; t < 4; t++) {  /* tap t of the eight kernels, and tap t + 4 */
        _mm256_storeu_ps(taps + t * 64, _mm256_permute2f128_ps(b[t], b[t + 4], 0x20));
        _mm256_storeu_ps(taps + (t + 4) * 64, _mm256_permute2f128_ps(b[t], b[t + 4], 0x31));
    }
    for (int k = 0; k < 8; k++)
        taps[8 * 64 + k] = w[k * step + (reverse ? 0 : 8)];
}
#endif

/* The taps of nb <= 64 kernels w + j*step (9 values each, row-major; in reverse for the
 * flipped F(4x4) kernels) into nine planes taps[t * 64 + j], the layout the transforms
 * read.  A float at a time this is 9 loads and 9 stores a kernel, most of the weight
 * transform's own time (perf annotate of a 256x256 F(2x2) transform); with AVX2, eight
 * kernels at a time: one load of eight taps a kernel, an 8x8 transpose, eight stores,
 * and a prefetch of each kernel's next line.  It only moves values: the same bits either
 * way.  Measured on the user UNet's step (64², batch 8, AMD EPYC family 26 model 2): the
 * gather 5.5 -> 3.0 % of the 1-thread step's samples (perf), the step 0.982 of its time
 * at 1 thread, 0.996 at 2 (python benchmarks/ab_checkouts.py, 20 rounds). */
static inline void sb_gather_taps_f(const float *w, ptrdiff_t step, ptrdiff_t nb,
                                    int reverse, float *taps)
{
    ptrdiff_t j0 = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (__builtin_cpu_supports("avx2"))  /* a flag set when the module loaded */
        for (; j0 + 8 <= nb; j0 += 8)
            sb_gather_taps8_avx2(w + j0 * step, step, reverse, taps + j0);
#endif
    sb_taps_from_f(w, step, j0, nb, reverse, taps);
}

static inline void sb_gather_taps_d(const double *w, ptrdiff_t step, ptrdiff_t nb,
                                    int reverse, double *taps)
{
    sb_taps_from_d(w, step, 0, nb, reverse, taps);
}

/* The transform's output runs (one point of up to 64 kernels, 256 bytes in float) copied
 * without a call into the C library per run (about 130,000 a 64² user UNet step):
 * wino_planes.h's sb_copy_floats. */
static inline void sb_copy_run_f(float *dst, const float *src, ptrdiff_t n)
{
    sb_copy_floats(dst, src, n);
}

static inline void sb_copy_run_d(double *dst, const double *src, ptrdiff_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(double));
}

#define SB_WINO_WEIGHTS(T, S)                                                          \
/* U of the run (tile 2: F(2x2), 4: F(4x4)) into u[xi * su + j]. */                     \
static void sb_transform_run_##S(const T *w, ptrdiff_t step, ptrdiff_t count, int tile, \
                                 int flip, T *u, ptrdiff_t su)                          \
{                                                                                       \
    const int points = tile == 4 ? 36 : 16;                                             \
    const int reverse = flip && tile == 4, permute = flip && tile != 4;                 \
    T taps[9 * 64], blk[36 * 64];                                                       \
    for (ptrdiff_t j0 = 0; j0 < count; j0 += 64) {                                      \
        const ptrdiff_t nb = count - j0 < 64 ? count - j0 : 64;                         \
        sb_gather_taps_##S(w + j0 * step, step, nb, reverse, taps);                     \
        if (tile == 4)                                                                  \
            sb_w4_wt_##S(taps, blk, nb);                                                \
        else                                                                            \
            sb_w2_wt_##S(taps, blk, nb);                                                \
        for (int xi = 0; xi < points; xi++)                                             \
            sb_copy_run_##S(u + (ptrdiff_t)(permute ? sb_w2_flip_point(xi) : xi) * su + j0, \
                            blk + xi * 64, nb);                                         \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* Run k of the transform of the weights w (O x C x 3 x 3: kernel (o, c) the 9 taps from \
 * w + (o * C + c) * ks, row-major; ks 9 for contiguous weights, 27 for one depth tap of  \
 * a 3x3x3 kernel read in place) into U (points su apart, rows sr apart): with c_major,  \
 * the kernels w[:, k] into U[:, k, :] (U stored (P, C, O), k < C); else the kernels     \
 * w[k, :] into U[:, k, :] ((P, O, C), k < O). */                                       \
static inline void sb_weight_run_##S(const T *w, ptrdiff_t O, ptrdiff_t C, ptrdiff_t ks, \
                                     int tile, int flip, int c_major, ptrdiff_t k, T *u,  \
                                     ptrdiff_t su, ptrdiff_t sr)                         \
{                                                                                       \
    sb_transform_run_##S(c_major ? w + ks * k : w + ks * C * k, c_major ? ks * C : ks,   \
                         c_major ? O : C, tile, flip, u + sr * k, su);                  \
}

SB_WINO_WEIGHTS(float, f)
SB_WINO_WEIGHTS(double, d)

/* The weight gradient's fold, dW = G^T P G: the adjoint of the transform, the 16 or 36
 * points P[xi] = p[xi * sp] of each (o, c) back onto its 3x3 taps d (row-major), the G of
 * F(2x2) in the float type, of F(4x4) in double (rounded once). */
static inline void sb_w4_fold_gt(double v0, double v1, double v2, double v3, double v4,
                                 double v5, double *t)
{
    /* t = G^T v for one column of 6 points */
    t[0] = ((v0 / 4.0) - ((v1 + v2) / 6.0)) + ((v3 + v4) / 24.0);
    t[1] = ((v2 - v1) / 6.0) + ((v3 - v4) / 12.0);
    t[2] = ((((v3 + v4) - v1) - v2) / 6.0) + v5;
}

#define SB_WINO_FOLD(T, S)                                                             \
/* One tile: d (3x3) from P[xi] = p[xi * sp]. */                                        \
static inline void sb_w2_fold_kernel_##S(const T *p, ptrdiff_t sp, T *d)                \
{                                                                                       \
    const T half = (T)0.5;                                                              \
    T b[3][4];                                                                          \
    for (int i = 0; i < 4; i++) {   /* b = G^T P (3 x 4) */                             \
        b[0][i] = p[i * sp] + (p[(4 + i) * sp] + p[(8 + i) * sp]) * half;               \
        b[1][i] = (p[(4 + i) * sp] - p[(8 + i) * sp]) * half;                           \
        b[2][i] = (p[(4 + i) * sp] + p[(8 + i) * sp]) * half + p[(12 + i) * sp];        \
    }                                                                                   \
    for (int k = 0; k < 3; k++) {   /* d = b G */                                       \
        d[3 * k] = b[k][0] + (b[k][1] + b[k][2]) * half;                                \
        d[3 * k + 1] = (b[k][1] - b[k][2]) * half;                                      \
        d[3 * k + 2] = (b[k][1] + b[k][2]) * half + b[k][3];                            \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* count consecutive tiles p + j into d + 9j, 16 at a time with the tiles innermost      \
 * (contiguous vector operations, each tile the arithmetic of the kernel above).  With   \
 * an AVX2 clone like the F(4x4) fold's (256x256 kernels 0.181-0.254 -> 0.143 ms at 1    \
 * thread, 0.092 -> 0.074 at 2: bench_winograd_parts.py's fold F2 column, AMD EPYC       \
 * family 26 model 2). */                                                                \
SB_CLONES static void sb_w2_fold_run_##S(const T *p, ptrdiff_t sp, ptrdiff_t count, T *d) \
{                                                                                       \
    const T half = (T)0.5;                                                              \
    T b[3][4][16];                                                                      \
    for (ptrdiff_t j0 = 0; j0 < count; j0 += 16) {                                      \
        const ptrdiff_t nb = count - j0 < 16 ? count - j0 : 16;                         \
        const T *q = p + j0;                                                            \
        for (int i = 0; i < 4; i++)                                                     \
            for (ptrdiff_t l = 0; l < nb; l++) {                                        \
                b[0][i][l] = q[i * sp + l] + (q[(4 + i) * sp + l] + q[(8 + i) * sp + l]) * half; \
                b[1][i][l] = (q[(4 + i) * sp + l] - q[(8 + i) * sp + l]) * half;        \
                b[2][i][l] = (q[(4 + i) * sp + l] + q[(8 + i) * sp + l]) * half         \
                             + q[(12 + i) * sp + l];                                    \
            }                                                                           \
        for (int k = 0; k < 3; k++)                                                     \
            for (ptrdiff_t l = 0; l < nb; l++) {                                        \
                d[9 * (j0 + l) + 3 * k] = b[k][0][l] + (b[k][1][l] + b[k][2][l]) * half; \
                d[9 * (j0 + l) + 3 * k + 1] = (b[k][1][l] - b[k][2][l]) * half;         \
                d[9 * (j0 + l) + 3 * k + 2] = (b[k][1][l] + b[k][2][l]) * half + b[k][3][l]; \
            }                                                                           \
    }                                                                                   \
}                                                                                       \
                                                                                        \
static inline void sb_w4_fold_kernel_##S(const T *p, ptrdiff_t sp, T *d)                \
{                                                                                       \
    double b[6][3], t[3];                                                               \
    for (int j = 0; j < 6; j++)   /* b[j] = G^T P[:, j] */                              \
        sb_w4_fold_gt(p[j * sp], p[(6 + j) * sp], p[(12 + j) * sp], p[(18 + j) * sp],   \
                      p[(24 + j) * sp], p[(30 + j) * sp], b[j]);                        \
    for (int k = 0; k < 3; k++) {   /* d[k] = b[:, k] G */                              \
        sb_w4_fold_gt(b[0][k], b[1][k], b[2][k], b[3][k], b[4][k], b[5][k], t);         \
        d[3 * k] = (T)t[0];                                                             \
        d[3 * k + 1] = (T)t[1];                                                         \
        d[3 * k + 2] = (T)t[2];                                                         \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* count consecutive tiles p + j into d + 9j, 16 at a time (the double arithmetic and    \
 * divisions of sb_w4_fold_kernel, vectorised across the tiles: the same bits).  With    \
 * an AVX2 clone: the baseline build divided 2 doubles at a time (36x64x192 points: 266  \
 * -> 144 us at 1 thread, 138 -> 79 at 2, benchmarks/bench_winograd_parts.py, AMD EPYC   \
 * family 26 model 2). */                                                                \
SB_CLONES static void sb_w4_fold_run_##S(const T *p, ptrdiff_t sp, ptrdiff_t count,     \
                                         T *d)                                          \
{                                                                                       \
    double b[6][3][16], v[6][16];                                                       \
    for (ptrdiff_t j0 = 0; j0 < count; j0 += 16) {                                      \
        const ptrdiff_t nb = count - j0 < 16 ? count - j0 : 16;                         \
        for (int j = 0; j < 6; j++) {   /* b[j] = G^T P[:, j] */                        \
            for (int i = 0; i < 6; i++)                                                 \
                for (ptrdiff_t l = 0; l < nb; l++)                                      \
                    v[i][l] = p[(6 * i + j) * sp + j0 + l];                             \
            for (ptrdiff_t l = 0; l < nb; l++) {                                        \
                b[j][0][l] = ((v[0][l] / 4.0) - ((v[1][l] + v[2][l]) / 6.0))            \
                             + ((v[3][l] + v[4][l]) / 24.0);                            \
                b[j][1][l] = ((v[2][l] - v[1][l]) / 6.0) + ((v[3][l] - v[4][l]) / 12.0); \
                b[j][2][l] = ((((v[3][l] + v[4][l]) - v[1][l]) - v[2][l]) / 6.0) + v[5][l]; \
            }                                                                           \
        }                                                                               \
        for (int k = 0; k < 3; k++)   /* d[k] = b[:, k] G */                            \
            for (ptrdiff_t l = 0; l < nb; l++) {                                        \
                const double t0 = ((b[0][k][l] / 4.0) - ((b[1][k][l] + b[2][k][l]) / 6.0)) \
                                  + ((b[3][k][l] + b[4][k][l]) / 24.0);                 \
                const double t1 = ((b[2][k][l] - b[1][k][l]) / 6.0)                     \
                                  + ((b[3][k][l] - b[4][k][l]) / 12.0);                 \
                const double t2 = ((((b[3][k][l] + b[4][k][l]) - b[1][k][l]) - b[2][k][l]) \
                                   / 6.0) + b[5][k][l];                                 \
                d[9 * (j0 + l) + 3 * k] = (T)t0;                                        \
                d[9 * (j0 + l) + 3 * k + 1] = (T)t1;                                    \
                d[9 * (j0 + l) + 3 * k + 2] = (T)t2;                                    \
            }                                                                           \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* Output channel o of the fold of P (points sp apart, rows so apart, channels sc apart: \
 * runs of contiguous channels where sc == 1) into dW (O x C x 3 x 3, contiguous). */    \
static inline void sb_fold_row_##S(const T *p, ptrdiff_t sp, ptrdiff_t so, ptrdiff_t sc, \
                                   ptrdiff_t C, int tile, ptrdiff_t o, T *dw)           \
{                                                                                       \
    const T *po = p + o * so;                                                           \
    T *d = dw + 9 * C * o;                                                              \
    if (sc == 1) {                                                                      \
        if (tile == 4) sb_w4_fold_run_##S(po, sp, C, d);                                \
        else sb_w2_fold_run_##S(po, sp, C, d);                                          \
        return;                                                                         \
    }                                                                                   \
    for (ptrdiff_t c = 0; c < C; c++) {                                                 \
        if (tile == 4) sb_w4_fold_kernel_##S(po + c * sc, sp, d + 9 * c);               \
        else sb_w2_fold_kernel_##S(po + c * sc, sp, d + 9 * c);                         \
    }                                                                                   \
}

SB_WINO_FOLD(float, f)
SB_WINO_FOLD(double, d)

#endif
