/* Winograd F(2x2, 3x3) input, output and output-gradient transforms of one tile row,
 * float32, AVX2: the
 * row loops' operations (wino_portable.h, wino2_rows.h) in their order, 8 tiles a
 * register, so the values are the row loops' bit for bit.
 *
 * The row loops make one call a padded row to copy it, then one for the rows' B^T and
 * four for the columns' B (or four and two for the output), each over one tile row: on
 * the 8x8 and 16x16 maps of a UNet's deeper levels (4 and 8 tiles a row) the calls and
 * the vector loops' scalar remainders were most of the work (the F(2x2) transforms about
 * 6 % of a 64x64 user step at 1 thread, AMD EPYC family 25 model 1, perf).  Here a tile
 * row is one call: per padded row, two loads give the even and odd columns of 8 tiles
 * (value 2 t + l for l = 0, 1) and the next tile's (l = 2, 3) follow by a lane shift;
 * the row and column combinations run on registers.  A partial block (fewer than 8
 * tiles) stores its lanes with plain partial stores (sb_store_first8). */
#ifndef SANDBOX_WINO2_AVX2_H
#define SANDBOX_WINO2_AVX2_H

#include "wino4_avx2.h"  /* SB_W4_AVX2, sb_w4_keep; sb_store_first8 (avx2_lanes.h) */

#ifdef SB_W4_HAVE_AVX2

/* Even and odd values of the 16 values a | b in tile order: e lane t = value 2 t, o lane t
 * = value 2 t + 1 (in-lane pairs a0 a2 b0 b2 | a4 a6 b4 b6, then the middle 64-bit pairs
 * swapped). */
SB_W4_AVX2 static inline void sb_w2_deinterleave8(__m256 a, __m256 b, __m256 *e, __m256 *o)
{
    const __m256 ev = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    const __m256 od = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    *e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
    *o = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), 0xD8));
}

/* sb_w2_deinterleave8 of p[0 .. 16). */
SB_W4_AVX2 static inline void sb_w2_split8(const float *p, __m256 *e, __m256 *o)
{
    sb_w2_deinterleave8(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8), e, o);
}

/* sb_w2_split8 of the first m (< 16) values of p, the others read as zeros. */
SB_W4_AVX2 static inline void sb_w2_split8_first(const float *p, int m, __m256 *e, __m256 *o)
{
    sb_w2_deinterleave8(_mm256_maskload_ps(p, sb_w4_keep(m)),
                        _mm256_maskload_ps(p + 8, sb_w4_keep(m - 8)), e, o);
}

/* q moved down a lane, lane 7 = *last: lane t of the result is lane t + 1 of q. */
SB_W4_AVX2 static inline __m256 sb_w2_next8(__m256 q, const float *last)
{
    const __m256i down = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
    return _mm256_blend_ps(_mm256_permutevar8x32_ps(q, down), _mm256_broadcast_ss(last), 0x80);
}

/* d: the four zero-padded input rows of a tile row, wp floats apart, each readable for
 * 2 * ntiles + 18 floats (a partial last block reads past its tiles; those lanes are not
 * stored).  Writes V[4 k + j] = v[(4 k + j) * pitch + t] for the ntiles tiles t:
 * r = B^T d down the rows (r0 = d0 - d2, r1 = d1 + d2, r2 = d2 - d1, r3 = d1 - d3), then
 * V = r B along them (the same four combinations of the columns 2t .. 2t + 3). */
SB_W4_AVX2 static void sb_w2_in_tilerow_avx2(const float *d, ptrdiff_t wp, int ntiles,
                                             float *v, ptrdiff_t pitch)
{
    for (int t0 = 0; t0 < ntiles; t0 += 8) {
        const int n = ntiles - t0 < 8 ? ntiles - t0 : 8;
        __m256 c[4][4];    /* c[i][l]: column 2 t + l of padded row i */
        for (int i = 0; i < 4; i++) {
            const float *p = d + i * wp + 2 * t0;
            sb_w2_split8(p, &c[i][0], &c[i][1]);
            c[i][2] = sb_w2_next8(c[i][0], p + 16);
            c[i][3] = sb_w2_next8(c[i][1], p + 17);
        }
        for (int k = 0; k < 4; k++) {
            __m256 r[4], y[4];
            for (int l = 0; l < 4; l++) {
                const __m256 d0 = c[0][l], d1 = c[1][l], d2 = c[2][l], d3 = c[3][l];
                r[l] = k == 0 ? _mm256_sub_ps(d0, d2) : k == 1 ? _mm256_add_ps(d1, d2)
                     : k == 2 ? _mm256_sub_ps(d2, d1) : _mm256_sub_ps(d1, d3);
            }
            y[0] = _mm256_sub_ps(r[0], r[2]);
            y[1] = _mm256_add_ps(r[1], r[2]);
            y[2] = _mm256_sub_ps(r[2], r[1]);
            y[3] = _mm256_sub_ps(r[1], r[3]);
            for (int j = 0; j < 4; j++) {
                float *dst = v + (4 * k + j) * pitch + t0;
                if (n == 8)
                    _mm256_storeu_ps(dst, y[j]);
                else
                    sb_store_first8(dst, y[j], n);
            }
        }
    }
}

/* Output-gradient transform of one tile row (the weight gradient's Gt = A q A^T of the
 * 2x2 tiles): rows: the two zero-padded output-gradient rows of the tile row, wt >= 2
 * ntiles floats apart (a partial last block loads only its 2 n values); writes
 * Gt[4 k + j] = v[(4 k + j) * pitch + t] for the ntiles tiles t: r = A q down the rows
 * (q0, q0 + q1, q0 - q1, -q1), then Gt = r A^T along them (a, a + b, a - b, -b of the
 * columns a = 2t, b = 2t + 1), as the row loops form them. */
SB_W4_AVX2 static void sb_w2_grad_tilerow_avx2(const float *rows, ptrdiff_t wt, int ntiles,
                                               float *v, ptrdiff_t pitch)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);  /* -x: the sign bit flipped, as C's minus */
    for (int t0 = 0; t0 < ntiles; t0 += 8) {
        const int n = ntiles - t0 < 8 ? ntiles - t0 : 8;
        __m256 q[2][2];    /* q[i][l]: column 2 t + l of row i */
        for (int i = 0; i < 2; i++) {
            const float *p = rows + i * wt + 2 * t0;
            if (n == 8)
                sb_w2_split8(p, &q[i][0], &q[i][1]);
            else  /* the 2 n values only (masked loads are as fast as plain ones) */
                sb_w2_split8_first(p, 2 * n, &q[i][0], &q[i][1]);
        }
        for (int k = 0; k < 4; k++) {
            __m256 r[2], y[4];
            for (int l = 0; l < 2; l++)
                r[l] = k == 0 ? q[0][l] : k == 1 ? _mm256_add_ps(q[0][l], q[1][l])
                     : k == 2 ? _mm256_sub_ps(q[0][l], q[1][l]) : _mm256_xor_ps(q[1][l], sign);
            y[0] = r[0];
            y[1] = _mm256_add_ps(r[0], r[1]);
            y[2] = _mm256_sub_ps(r[0], r[1]);
            y[3] = _mm256_xor_ps(r[1], sign);
            for (int j = 0; j < 4; j++)
                sb_store_first8(v + (4 * k + j) * pitch + t0, y[j], n);
        }
    }
}

/* Output transform of one tile row: M[4 k + j] = m[(4 k + j) * pitch + t] for the ntiles
 * tiles t; rows[i * wt + 2 t + l] = (A^T M A)[i][l], the two output rows side by side as
 * sb_w2_out_channel's row buffer holds them (wt >= 2 ntiles).  a = A^T M down the points
 * (a0 = M0 + M1 + M2, a1 = M1 - M2 - M3 per column j), then the rows' two outputs
 * (a_0 + a_1 + a_2, a_1 - a_2 - a_3), as the row loops form them. */
SB_W4_AVX2 static void sb_w2_out_tilerow_avx2(const float *m, ptrdiff_t pitch, int ntiles,
                                              float *rows, ptrdiff_t wt)
{
    for (int t0 = 0; t0 < ntiles; t0 += 8) {
        const int n = ntiles - t0 < 8 ? ntiles - t0 : 8;
        const __m256i keep = sb_w4_keep(n);
        __m256 a[2][4];
        for (int j = 0; j < 4; j++) {
            __m256 x[4];
            for (int k = 0; k < 4; k++) {
                const float *src = m + (4 * k + j) * pitch + t0;
                x[k] = n == 8 ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, keep);
            }
            a[0][j] = _mm256_add_ps(_mm256_add_ps(x[0], x[1]), x[2]);
            a[1][j] = _mm256_sub_ps(_mm256_sub_ps(x[1], x[2]), x[3]);
        }
        for (int i = 0; i < 2; i++) {
            const __m256 e = _mm256_add_ps(_mm256_add_ps(a[i][0], a[i][1]), a[i][2]);
            const __m256 o = _mm256_sub_ps(_mm256_sub_ps(a[i][1], a[i][2]), a[i][3]);
            /* interleaved: e0 o0 e1 o1 ... (in-lane unpacks, then the halves in order) */
            const __m256 lo = _mm256_unpacklo_ps(e, o), hi = _mm256_unpackhi_ps(e, o);
            const __m256 first = _mm256_permute2f128_ps(lo, hi, 0x20);
            const __m256 second = _mm256_permute2f128_ps(lo, hi, 0x31);
            float *dst = rows + i * wt + 2 * t0;  /* 2 n values */
            sb_store_first8(dst, first, 2 * n);
            if (n > 4) sb_store_first8(dst + 8, second, 2 * n - 8);
        }
    }
}

#endif
#endif
