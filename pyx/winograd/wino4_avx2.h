/* Winograd F(4x4, 3x3) input, output and output-gradient transforms of one tile row,
 * float32, AVX2: the
 * portable transforms' operations (wino_portable.h, wino4_rows.h) in their order, 8
 * tiles a register, so the values are the portable transforms' bit for bit.
 *
 * The portable loops split each padded row into its four column phases with a strided
 * pass, then combine rows (R = B^T D) and phases (V = R B) over whole rows.  Here one
 * ymm register holds one patch value for 8 tiles: per input row, four loads and an
 * in-lane 4x4 transpose give the phases (value 4*t + l of the row for tile t), the same
 * from 4 floats further the values 4*t + 4 and 4*t + 5 (phases 0 and 1 of tile t + 1,
 * which is what the portable column step reads), then the row and column combinations
 * run on registers.  On the AMD EPYC family 23 (Zen 1) machine of 3 December 2026 the
 * input transform was 33-38 % of an F(4x4) layer's forward on the portable loops
 * (python benchmarks/bench_winograd_parts.py). */
#ifndef SANDBOX_WINO4_AVX2_H
#define SANDBOX_WINO4_AVX2_H

#include <stddef.h>
#include <string.h>

#include "avx2_lanes.h"  /* sb_store_first8: partial blocks without masked stores */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define SB_W4_HAVE_AVX2 1
#define SB_W4_AVX2 __attribute__((target("avx2")))

/* 1 when this CPU runs the AVX2 transform. */
static int sb_w4_avx2_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}

/* The 4x4 transpose within each 128-bit lane: y[i] lane (h, j) = x[j] lane (h, i), for
 * both halves h.  Its own inverse. */
SB_W4_AVX2 static inline void sb_w4_transpose4_lanes(const __m256 x[4], __m256 y[4])
{
    const __m256 u0 = _mm256_unpacklo_ps(x[0], x[1]), u1 = _mm256_unpackhi_ps(x[0], x[1]);
    const __m256 u2 = _mm256_unpacklo_ps(x[2], x[3]), u3 = _mm256_unpackhi_ps(x[2], x[3]);
    y[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(u0), _mm256_castps_pd(u2)));
    y[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(u0), _mm256_castps_pd(u2)));
    y[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(u1), _mm256_castps_pd(u3)));
    y[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(u1), _mm256_castps_pd(u3)));
}

/* The four column phases of 8 tiles from p[0 .. 32): q[l] lane t = p[4 t + l]. */
SB_W4_AVX2 static inline void sb_w4_phases8(const float *p, __m256 q[4])
{
    /* rows (tile t | tile t + 4) so that the in-lane transpose keeps tiles in order */
    const __m256 a0 = _mm256_loadu_ps(p), a1 = _mm256_loadu_ps(p + 8);
    const __m256 a2 = _mm256_loadu_ps(p + 16), a3 = _mm256_loadu_ps(p + 24);
    const __m256 b[4] = {_mm256_permute2f128_ps(a0, a2, 0x20),    /* tiles 0 | 4 */
                         _mm256_permute2f128_ps(a0, a2, 0x31),    /* tiles 1 | 5 */
                         _mm256_permute2f128_ps(a1, a3, 0x20),    /* tiles 2 | 6 */
                         _mm256_permute2f128_ps(a1, a3, 0x31)};   /* tiles 3 | 7 */
    sb_w4_transpose4_lanes(b, q);
}

/* The inverse of sb_w4_phases8: p[4 t + l] = q[l] lane t for the 8 tiles, to p[0 .. 32). */
SB_W4_AVX2 static inline void sb_w4_unphases8(const __m256 q[4], float *p)
{
    __m256 z[4];   /* z[t] = (tile t | tile t + 4), each tile's 4 phases */
    sb_w4_transpose4_lanes(q, z);
    _mm256_storeu_ps(p, _mm256_permute2f128_ps(z[0], z[1], 0x20));
    _mm256_storeu_ps(p + 8, _mm256_permute2f128_ps(z[2], z[3], 0x20));
    _mm256_storeu_ps(p + 16, _mm256_permute2f128_ps(z[0], z[1], 0x31));
    _mm256_storeu_ps(p + 24, _mm256_permute2f128_ps(z[2], z[3], 0x31));
}

/* The mask of the first n lanes. */
SB_W4_AVX2 static inline __m256i sb_w4_keep(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* y[0..6) to dst + j * pitch, the first n lanes of each. */
SB_W4_AVX2 static inline void sb_w4_store6(float *dst, ptrdiff_t pitch, const __m256 y[6],
                                           int n)
{
    for (int j = 0; j < 6; j++) {
        if (n == 8)
            _mm256_storeu_ps(dst + j * pitch, y[j]);
        else
            sb_store_first8(dst + j * pitch, y[j], n);
    }
}

/* The six combinations of sb_w4_in_rows / sb_w4_in_cols (B^T, and B with x4, x5 the next
 * tile's phases 0 and 1), in their order of operations. */
#define SB_W4_BT8(x0, x1, x2, x3, x4, x5, y) do {                                         \
        const __m256 four_ = _mm256_set1_ps(4.0f), five_ = _mm256_set1_ps(5.0f);        \
        const __m256 two_ = _mm256_set1_ps(2.0f);                                        \
        y[0] = _mm256_add_ps(_mm256_sub_ps(_mm256_mul_ps(four_, x0), _mm256_mul_ps(five_, x2)), x4); \
        y[1] = _mm256_sub_ps(_mm256_add_ps(x3, x4), _mm256_mul_ps(four_, _mm256_add_ps(x1, x2))); \
        y[2] = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(four_, _mm256_sub_ps(x1, x2)), x4), x3); \
        y[3] = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(two_, _mm256_sub_ps(x3, x1)), x4), x2); \
        y[4] = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(two_, _mm256_sub_ps(x1, x3)), x4), x2); \
        y[5] = _mm256_add_ps(_mm256_sub_ps(_mm256_mul_ps(four_, x1), _mm256_mul_ps(five_, x3)), x5); \
    } while (0)

/* d: the six zero-padded input rows of a tile row, wp floats apart, each readable for
 * 4 * ntiles + 34 floats (the last block reads past its tiles; those lanes are not
 * stored).  Writes V[6 k + j] = v[(6 k + j) * pitch + t] for the ntiles tiles t. */
SB_W4_AVX2 static void sb_w4_in_tilerow_avx2(const float *d, ptrdiff_t wp, int ntiles,
                                             float *v, ptrdiff_t pitch)
{
    for (int t0 = 0; t0 < ntiles; t0 += 8) {
        const int n = ntiles - t0 < 8 ? ntiles - t0 : 8;
        __m256 ph[6][6];   /* ph[i][l]: phase l (4, 5: of the next tile) of input row i */
        for (int i = 0; i < 6; i++) {
            __m256 next[4];
            const float *p = d + i * wp + 4 * t0;
            sb_w4_phases8(p, ph[i]);
            sb_w4_phases8(p + 4, next);
            ph[i][4] = next[0];
            ph[i][5] = next[1];
        }
        __m256 r[6][6];    /* r[k][l]: (B^T D)[k] at phase l */
        for (int l = 0; l < 6; l++) {
            __m256 c[6];
            SB_W4_BT8(ph[0][l], ph[1][l], ph[2][l], ph[3][l], ph[4][l], ph[5][l], c);
            for (int k = 0; k < 6; k++) r[k][l] = c[k];
        }
        for (int k = 0; k < 6; k++) {   /* V[6 k + j] = (R B)[k][j] */
            __m256 y[6];
            SB_W4_BT8(r[k][0], r[k][1], r[k][2], r[k][3], r[k][4], r[k][5], y);
            sb_w4_store6(v + 6 * k * pitch + t0, pitch, y, n);
        }
    }
}
/* The four combinations of sb_w4_out_cols / sb_w4_out_row (A^T), in their order. */
#define SB_W4_AT8(x0, x1, x2, x3, x4, x5, y) do {                                         \
        y[0] = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), x2), x3), x4); \
        y[1] = _mm256_add_ps(_mm256_sub_ps(x1, x2),                                      \
                             _mm256_mul_ps(_mm256_set1_ps(2.0f), _mm256_sub_ps(x3, x4))); \
        y[2] = _mm256_add_ps(_mm256_add_ps(x1, x2),                                      \
                             _mm256_mul_ps(_mm256_set1_ps(4.0f), _mm256_add_ps(x3, x4))); \
        y[3] = _mm256_add_ps(_mm256_add_ps(_mm256_sub_ps(x1, x2),                        \
                             _mm256_mul_ps(_mm256_set1_ps(8.0f), _mm256_sub_ps(x3, x4))), x5); \
    } while (0)

/* Output transform of one tile row: M[6 k + j] = m[(6 k + j) * pitch + t] for the ntiles
 * tiles t; rows[i * wt + 4 t + l] = (A^T M A)[i][l], the four output rows of the tile
 * row side by side as sb_w4_out_channel's row buffer holds them (wt >= 4 ntiles).  The
 * points combine across k first, then across j, as the row loops do. */
SB_W4_AVX2 static void sb_w4_out_tilerow_avx2(const float *m, ptrdiff_t pitch, int ntiles,
                                              float *rows, ptrdiff_t wt)
{
    for (int t0 = 0; t0 < ntiles; t0 += 8) {
        const int n = ntiles - t0 < 8 ? ntiles - t0 : 8;
        const __m256i keep = sb_w4_keep(n);
        __m256 a[4][6];    /* a[i][j] = sum_k A^T[i][k] M[6 k + j] */
        for (int j = 0; j < 6; j++) {
            __m256 x[6], c[4];
            for (int k = 0; k < 6; k++) {
                const float *src = m + (6 * k + j) * pitch + t0;
                x[k] = n == 8 ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, keep);
            }
            SB_W4_AT8(x[0], x[1], x[2], x[3], x[4], x[5], c);
            for (int i = 0; i < 4; i++) a[i][j] = c[i];
        }
        for (int i = 0; i < 4; i++) {
            __m256 y[4];
            SB_W4_AT8(a[i][0], a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], y);
            float out[32];   /* y[l] lane t -> row[4 t + l] */
            sb_w4_unphases8(y, out);
            memcpy(rows + i * wt + 4 * t0, out, (size_t)(4 * n) * sizeof(float));
        }
    }
}
/* r = A q of sb_w4_a (A = [[1,0,0,0],[1,1,1,1],[1,-1,1,-1],[1,2,4,8],[1,-2,4,-8],
 * [0,0,0,1]]), in its order. */
#define SB_W4_A8(q0, q1, q2, q3, r) do {                                                  \
        const __m256 e_ = _mm256_add_ps(q0, q2), o_ = _mm256_add_ps(q1, q3);            \
        const __m256 e4_ = _mm256_add_ps(q0, _mm256_mul_ps(_mm256_set1_ps(4.0f), q2));  \
        const __m256 o8_ = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), q1),       \
                                         _mm256_mul_ps(_mm256_set1_ps(8.0f), q3));      \
        r[0] = q0; r[1] = _mm256_add_ps(e_, o_); r[2] = _mm256_sub_ps(e_, o_);          \
        r[3] = _mm256_add_ps(e4_, o8_); r[4] = _mm256_sub_ps(e4_, o8_); r[5] = q3;      \
    } while (0)

/* Output-gradient transform of one tile row (the weight gradient's Gt = A q A^T of the 4x4
 * tiles): rows: the four zero-padded output-gradient rows of the tile row, wt >= 4 ntiles
 * floats apart; writes Gt[6 k + j] = v[(6 k + j) * pitch + t] for the ntiles tiles t.
 * A across the rows first, then across the phases, as the row loops do.  A partial last
 * block reads its rows through a zeroed copy (the rows end at 4 ntiles). */
SB_W4_AVX2 static void sb_w4_grad_tilerow_avx2(const float *rows, ptrdiff_t wt, int ntiles,
                                               float *v, ptrdiff_t pitch)
{
    for (int t0 = 0; t0 < ntiles; t0 += 8) {
        const int n = ntiles - t0 < 8 ? ntiles - t0 : 8;
        __m256 q[4][4];    /* q[i][l]: phase l of row i */
        for (int i = 0; i < 4; i++) {
            const float *p = rows + i * wt + 4 * t0;
            float tail[32];
            if (n < 8) {
                memset(tail, 0, sizeof(tail));
                memcpy(tail, p, (size_t)(4 * n) * sizeof(float));
                p = tail;
            }
            sb_w4_phases8(p, q[i]);
        }
        __m256 r[6][4];    /* r[k][l] = (A Q)[k] at phase l */
        for (int l = 0; l < 4; l++) {
            __m256 c[6];
            SB_W4_A8(q[0][l], q[1][l], q[2][l], q[3][l], c);
            for (int k = 0; k < 6; k++) r[k][l] = c[k];
        }
        for (int k = 0; k < 6; k++) {   /* Gt[6 k + j] = (R A^T)[k][j] */
            __m256 y[6];
            SB_W4_A8(r[k][0], r[k][1], r[k][2], r[k][3], y);
            sb_w4_store6(v + 6 * k * pitch + t0, pitch, y, n);
        }
    }
}
#else
static int sb_w4_avx2_available(void) { return 0; }
#endif

#endif
