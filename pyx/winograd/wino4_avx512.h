/* Winograd F(4x4, 3x3) input transform of one tile row, float32, AVX-512.
 *
 * The portable transform in _winograd.pyx runs a dozen short loops per tile row
 * (16 tiles on a 64-pixel row), and most of its time goes to loop overhead and a
 * scalar phase split.  Here one zmm register holds one patch value for 16 tiles:
 * per input row, four loads and four two-source permutes give the column phases
 * (value 4*t + l of the row for tile t), two lane shifts the values 4*t + 4 and
 * 4*t + 5, and V = B^T d B is then 6 + 6 six-term combinations of whole
 * registers, stored as 36 runs of 16 tiles (masked at the end of the row).
 * Same matrices as _winograd.pyx:  B^T = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0],
 * [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]].
 */
#ifndef SANDBOX_WINO4_AVX512_H
#define SANDBOX_WINO4_AVX512_H

/* Floats of one padded row buffer of sb_w4_in_tilerow_f32 (it reads 4 ntiles + 80 past
 * the start, in whole registers of 16 tiles). */
#define SB_W4_ROW_FLOATS(tiles_w) (4 * ((tiles_w) + 16) + 80)

#include <stddef.h>
#include <string.h>

#include "wino_planes.h"  /* sb_copy_f32 */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

static int sb_w4_avx512_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
}

#define SB_W4_TARGET __attribute__((target("avx512f")))

/* The six B^T combinations of x0..x5 (whole registers). */
#define SB_W4_BT(x0, x1, x2, x3, x4, x5, y0, y1, y2, y3, y4, y5) do {                 \
        __m512 four_ = _mm512_set1_ps(4.0f), five_ = _mm512_set1_ps(5.0f);          \
        __m512 two_ = _mm512_set1_ps(2.0f);                                          \
        __m512 x4m2_ = _mm512_sub_ps(x4, x2);                                        \
        y0 = _mm512_add_ps(_mm512_sub_ps(_mm512_mul_ps(four_, x0),                   \
                                         _mm512_mul_ps(five_, x2)), x4);             \
        y1 = _mm512_sub_ps(_mm512_add_ps(x3, x4),                                    \
                           _mm512_mul_ps(four_, _mm512_add_ps(x1, x2)));             \
        y2 = _mm512_add_ps(_mm512_mul_ps(four_, _mm512_sub_ps(x1, x2)),              \
                           _mm512_sub_ps(x4, x3));                                   \
        y3 = _mm512_add_ps(_mm512_mul_ps(two_, _mm512_sub_ps(x3, x1)), x4m2_);       \
        y4 = _mm512_add_ps(_mm512_mul_ps(two_, _mm512_sub_ps(x1, x3)), x4m2_);       \
        y5 = _mm512_add_ps(_mm512_sub_ps(_mm512_mul_ps(four_, x1),                   \
                                         _mm512_mul_ps(five_, x3)), x5);             \
    } while (0)

/* Six registers of 16 tiles' points to dst, dst + step, ... dst + 5 step (the lanes mask
 * keeps). */
__attribute__((target("avx512f")))
static inline void sb_w4_store6_avx512(float *dst, ptrdiff_t step, __mmask16 mask,
                                       __m512 y0, __m512 y1, __m512 y2, __m512 y3, __m512 y4,
                                       __m512 y5)
{
    _mm512_mask_storeu_ps(dst, mask, y0);
    _mm512_mask_storeu_ps(dst + step, mask, y1);
    _mm512_mask_storeu_ps(dst + 2 * step, mask, y2);
    _mm512_mask_storeu_ps(dst + 3 * step, mask, y3);
    _mm512_mask_storeu_ps(dst + 4 * step, mask, y4);
    _mm512_mask_storeu_ps(dst + 5 * step, mask, y5);
}

/* The second half of the F(4x4) input transform of 16 tiles: e[i][l] = (d B)[i][l] for
 * the six patch rows i, then V[6j + k] = (B^T e)[j][k] stored as v[(6j + k) * pitch + t]
 * for the tiles t0 .. t0 + 15 that mask keeps. */
#define SB_W4_IN_STORE(e, v, t0, pitch, mask) do {                                       \
        int k_;                                                                          \
        for (k_ = 0; k_ < 6; k_++) {   /* rows: V[6j + k] = (B^T e)[j][k] */              \
            __m512 y0_, y1_, y2_, y3_, y4_, y5_;                                         \
            float *dst_ = (v) + (t0) + (ptrdiff_t)k_ * (pitch);                          \
            SB_W4_BT(e[0][k_], e[1][k_], e[2][k_], e[3][k_], e[4][k_], e[5][k_],         \
                     y0_, y1_, y2_, y3_, y4_, y5_);                                      \
            sb_w4_store6_avx512(dst_, 6 * (pitch), mask, y0_, y1_, y2_, y3_, y4_, y5_);  \
        }                                                                                \
    } while (0)

/* Column phases 0..3 of 16 tiles of a plane of 4, 8 or a multiple of 16 tiles a row, from
 * whole-register loads at column `at` of each tile row (row[r]: the first tile of tile row
 * r in the block): q[l] lane t holds value 4j + l of its tile j's row.  16 tiles or more:
 * four loads of the one tile row, lanes 0-7 from the first two, 8-15 from the others; 8
 * tiles a row: two loads a tile row, lanes 0-7 from row[0], 8-15 from row[1]; 4 tiles: one
 * load a tile row, lanes 4r + j from row[r].  One index vector serves all three (the
 * second source of a permute is indices 16 on). */
#define SB_W4_PHASES(row, tiles_w, at, q) do {                                           \
        const __m512i i0_ = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12,  \
                                              16, 20, 24, 28);                           \
        __m512 x0_, x1_, y0_, y1_;                                                       \
        int l_;                                                                          \
        if ((tiles_w) >= 16) {                                                           \
            x0_ = _mm512_loadu_ps((row)[0] + (at));                                      \
            x1_ = _mm512_loadu_ps((row)[0] + (at) + 16);                                 \
            y0_ = _mm512_loadu_ps((row)[0] + (at) + 32);                                 \
            y1_ = _mm512_loadu_ps((row)[0] + (at) + 48);                                 \
        } else if ((tiles_w) == 8) {                                                     \
            x0_ = _mm512_loadu_ps((row)[0] + (at));                                      \
            x1_ = _mm512_loadu_ps((row)[0] + (at) + 16);                                 \
            y0_ = _mm512_loadu_ps((row)[1] + (at));                                      \
            y1_ = _mm512_loadu_ps((row)[1] + (at) + 16);                                 \
        } else {                                                                         \
            x0_ = _mm512_loadu_ps((row)[0] + (at));                                      \
            x1_ = _mm512_loadu_ps((row)[1] + (at));                                      \
            y0_ = _mm512_loadu_ps((row)[2] + (at));                                      \
            y1_ = _mm512_loadu_ps((row)[3] + (at));                                      \
        }                                                                                \
        for (l_ = 0; l_ < 4; l_++)                                                       \
            (q)[l_] = sb_blend_pairs_avx512(x0_, x1_, y0_, y1_,                          \
                                            _mm512_add_epi32(i0_, _mm512_set1_epi32(l_))); \
    } while (0)

/* The tile rows a block of 16 tiles of SB_W4_PHASES spans (4 or 8 tiles a row: 4 or 2;
 * a multiple of 16: one). */
#define SB_W4_TILE_ROWS(pad, off, ntiles, t0, tiles_w, row)                              \
    sb_plane_tile_rows(pad, off, ntiles, t0, tiles_w, (tiles_w) >= 16 ? 1 : 16 / (tiles_w), row)

/* rows[i] (i < 6): the zero-padded input row 4*th - ph + i, starting at padded column
 * 0 and readable for 4 * ntiles + 80 floats.  Writes V[xi] = v[xi * pitch + t] for
 * the ntiles tiles t of the row. */
__attribute__((target("avx512f")))
static void sb_w4_in_tilerow_f32(const float *const *rows, int ntiles, float *v, ptrdiff_t pitch)
{
    const __m512i idx0 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i idx1 = _mm512_add_epi32(idx0, one);
    const __m512i idx2 = _mm512_add_epi32(idx1, one);
    const __m512i idx3 = _mm512_add_epi32(idx2, one);
    __m512 e[6][6];
    int tw0, i;
    for (tw0 = 0; tw0 < ntiles; tw0 += 16) {
        int n = ntiles - tw0 < 16 ? ntiles - tw0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        for (i = 0; i < 6; i++) {
            const float *r = rows[i] + 4 * tw0;
            __m512 a0 = _mm512_loadu_ps(r), a1 = _mm512_loadu_ps(r + 16);
            __m512 a2 = _mm512_loadu_ps(r + 32), a3 = _mm512_loadu_ps(r + 48);
            __m512 a4 = _mm512_loadu_ps(r + 64);
            /* phase l of tiles 0..7 from (a0, a1), of tiles 8..15 from (a2, a3) */
            __m512 q0 = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(a0, idx0, a1),
                                             _mm512_permutex2var_ps(a2, idx0, a3));
            __m512 q1 = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(a0, idx1, a1),
                                             _mm512_permutex2var_ps(a2, idx1, a3));
            __m512 q2 = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(a0, idx2, a1),
                                             _mm512_permutex2var_ps(a2, idx2, a3));
            __m512 q3 = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(a0, idx3, a1),
                                             _mm512_permutex2var_ps(a2, idx3, a3));
            /* values 4t + 4 and 4t + 5: phases 0 and 1 moved one tile down */
            __m512i a4i = _mm512_castps_si512(a4);
            __m512 q4 = _mm512_castsi512_ps(_mm512_alignr_epi32(a4i, _mm512_castps_si512(q0), 1));
            __m512 q5 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_alignr_epi32(a4i, a4i, 1),
                                                                _mm512_castps_si512(q1), 1));
            /* columns: e[i] = d[i] B */
            SB_W4_BT(q0, q1, q2, q3, q4, q5, e[i][0], e[i][1], e[i][2], e[i][3], e[i][4], e[i][5]);
        }
        SB_W4_IN_STORE(e, v, tw0, pitch, mask);
    }
}

/* The six A^T combinations (4 outputs) of x0..x5:  A^T = [[1, 1, 1, 1, 1, 0],
 * [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]. */
#define SB_W4_AT(x0, x1, x2, x3, x4, x5, y0, y1, y2, y3) do {                           \
        __m512 p12_ = _mm512_add_ps(x1, x2), m12_ = _mm512_sub_ps(x1, x2);           \
        __m512 p34_ = _mm512_add_ps(x3, x4), m34_ = _mm512_sub_ps(x3, x4);           \
        y0 = _mm512_add_ps(_mm512_add_ps(x0, p12_), p34_);                           \
        y1 = _mm512_add_ps(m12_, _mm512_mul_ps(_mm512_set1_ps(2.0f), m34_));          \
        y2 = _mm512_add_ps(p12_, _mm512_mul_ps(_mm512_set1_ps(4.0f), p34_));          \
        y3 = _mm512_add_ps(_mm512_add_ps(m12_, _mm512_mul_ps(_mm512_set1_ps(8.0f), m34_)), x5); \
    } while (0)

/* Output transform of one plane: M[xi] = m[xi * pitch + t] for the tiles_h * tiles_w
 * tiles of one (sample, channel), 16 tiles per register; y = A^T M A written to ypl
 * (row length w4 >= 4 * tiles_w, 4 * tiles_h rows).  Two levels of permutes put the
 * four outputs of each tile next to each other, so a run of tiles in a tile row is
 * one copy per output row. */
__attribute__((target("avx512f")))
static void sb_w4_out_plane_f32(const float *m, ptrdiff_t pitch, int tiles_h, int tiles_w,
                                float *ypl, ptrdiff_t w4)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30,
                                         15, 31);
    const __m512i lo64 = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i hi64 = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    float st[4][64] __attribute__((aligned(64)));
    int ntiles = tiles_h * tiles_w;
    int t0, i, j;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512 a[4][6];
        int L;
        for (j = 0; j < 6; j++) {   /* rows: a[.][j] = A^T M[6k + j] over k */
            const float *mj = m + (ptrdiff_t)j * pitch + t0;
            __m512 x0 = _mm512_maskz_loadu_ps(mask, mj);
            __m512 x1 = _mm512_maskz_loadu_ps(mask, mj + 6 * pitch);
            __m512 x2 = _mm512_maskz_loadu_ps(mask, mj + 12 * pitch);
            __m512 x3 = _mm512_maskz_loadu_ps(mask, mj + 18 * pitch);
            __m512 x4 = _mm512_maskz_loadu_ps(mask, mj + 24 * pitch);
            __m512 x5 = _mm512_maskz_loadu_ps(mask, mj + 30 * pitch);
            SB_W4_AT(x0, x1, x2, x3, x4, x5, a[0][j], a[1][j], a[2][j], a[3][j]);
        }
        for (i = 0; i < 4; i++) {   /* columns: y[i] = a[i] A, interleaved per tile */
            __m512 y0, y1, y2, y3;
            SB_W4_AT(a[i][0], a[i][1], a[i][2], a[i][3], a[i][4], a[i][5], y0, y1, y2, y3);
            __m512d p01l = _mm512_castps_pd(_mm512_permutex2var_ps(y0, lo, y1));
            __m512d p01h = _mm512_castps_pd(_mm512_permutex2var_ps(y0, hi, y1));
            __m512d p23l = _mm512_castps_pd(_mm512_permutex2var_ps(y2, lo, y3));
            __m512d p23h = _mm512_castps_pd(_mm512_permutex2var_ps(y2, hi, y3));
            _mm512_store_ps(st[i], _mm512_castpd_ps(_mm512_permutex2var_pd(p01l, lo64, p23l)));
            _mm512_store_ps(st[i] + 16, _mm512_castpd_ps(_mm512_permutex2var_pd(p01l, hi64, p23l)));
            _mm512_store_ps(st[i] + 32, _mm512_castpd_ps(_mm512_permutex2var_pd(p01h, lo64, p23h)));
            _mm512_store_ps(st[i] + 48, _mm512_castpd_ps(_mm512_permutex2var_pd(p01h, hi64, p23h)));
        }
        for (L = 0; L < n;) {   /* runs of tiles inside one tile row */
            int t = t0 + L, th = t / tiles_w, tw = t - th * tiles_w;
            int run = tiles_w - tw < n - L ? tiles_w - tw : n - L;
            float *row = ypl + (ptrdiff_t)(4 * th) * w4 + 4 * tw;
            for (i = 0; i < 4; i++)
                sb_copy_f32(row + i * w4, st[i] + 4 * L, 4 * run);
            L += run;
        }
    }
}



/* The F(4x4) input transform of a plane of 4 or 8 tiles a row (16x16 and 32x32 maps),
 * 16 tiles a register, each patch row's six column phases by SB_W4_PHASES (phases 4 and
 * 5: phases 0 and 1 four columns on) instead of 36 gathers: the same values, then the
 * same arithmetic, as sb_w4_in_gather_f32.  The gathers had been the costliest loop of
 * the 64² user UNet step, 7.8 % of its samples at 1 thread (perf, AMD EPYC family 26
 * model 2).  Reads up to 2 floats past the row of a tile's last patch row: pad has
 * SB_PLANE_SLACK floats after its last block. */
__attribute__((target("avx512f")))
static void sb_w4_in_rows_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                              int tiles_w, float *v, ptrdiff_t pitch)
{
    __m512 e[6][6];
    int t0, i;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        const float *row[4];
        SB_W4_TILE_ROWS(pad, off, ntiles, t0, tiles_w, row);
        for (i = 0; i < 6; i++) {   /* columns of patch row i: e[i] = d[i] B */
            __m512 q[4], s[4];
            SB_W4_PHASES(row, tiles_w, (ptrdiff_t)i * wp, q);
            SB_W4_PHASES(row, tiles_w, (ptrdiff_t)i * wp + 4, s);
            SB_W4_BT(q[0], q[1], q[2], q[3], s[0], s[1], e[i][0], e[i][1], e[i][2], e[i][3],
                     e[i][4], e[i][5]);
        }
        SB_W4_IN_STORE(e, v, t0, pitch, mask);
    }
}

/* Input transform of one zero-bordered plane (row length wp) for maps with fewer than
 * 16 tiles per row and neither 4 nor 8 (those: sb_w4_in_rows_f32): 16 consecutive tiles in
 * V's order (across tile rows) per register,
 * each of the 36 patch values gathered (pad[off[t] + i*wp + j], off[t] = 4*th*wp +
 * 4*tw), then V = B^T d B.  Writes V[xi] = v[xi * pitch + t]. */
__attribute__((target("avx512f")))
static void sb_w4_in_gather_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                float *v, ptrdiff_t pitch)
{
    __m512 e[6][6];
    int t0, i, k;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512i base = _mm512_maskz_loadu_epi32(mask, off + t0);
        for (i = 0; i < 6; i++) {   /* columns of patch row i: e[i] = d[i] B */
            __m512 d[6];
            for (k = 0; k < 6; k++)
                d[k] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask,
                    _mm512_add_epi32(base, _mm512_set1_epi32((int)(i * wp + k))), pad, 4);
            SB_W4_BT(d[0], d[1], d[2], d[3], d[4], d[5], e[i][0], e[i][1], e[i][2], e[i][3],
                     e[i][4], e[i][5]);
        }
        SB_W4_IN_STORE(e, v, t0, pitch, mask);
    }
}

/* The F(4x4) input transform of one zero-bordered plane (halo 2: row length wp = 4
 * tiles_w + 2) at the tile offsets off: by rows for 8 or 4 tiles a row, else gathered. */
__attribute__((target("avx512f")))
static void sb_w4_in_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                               float *v, ptrdiff_t pitch)
{
    const int tiles_w = (int)((wp - 2) / 4);
    if (tiles_w == 8 || tiles_w == 4)
        sb_w4_in_rows_f32(pad, wp, off, ntiles, tiles_w, v, pitch);
    else
        sb_w4_in_gather_f32(pad, wp, off, ntiles, v, pitch);
}

/* r = A q for A = [[1,0,0,0],[1,1,1,1],[1,-1,1,-1],[1,2,4,8],[1,-2,4,-8],[0,0,0,1]]. */
#define SB_W4_A(q0, q1, q2, q3, r0, r1, r2, r3, r4, r5) do {                            \
        __m512 e_ = _mm512_add_ps(q0, q2), o_ = _mm512_add_ps(q1, q3);               \
        __m512 e4_ = _mm512_add_ps(q0, _mm512_mul_ps(_mm512_set1_ps(4.0f), q2));      \
        __m512 o8_ = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(2.0f), q1),          \
                                   _mm512_mul_ps(_mm512_set1_ps(8.0f), q3));          \
        r0 = q0; r1 = _mm512_add_ps(e_, o_); r2 = _mm512_sub_ps(e_, o_);             \
        r3 = _mm512_add_ps(e4_, o8_); r4 = _mm512_sub_ps(e4_, o8_); r5 = q3;          \
    } while (0)

/* The output-gradient transform's second half for 16 tiles: from r[k][b] = (A q)[k][b],
 * Gt[6k + j] = (A r[k])[j] stored as v[(6k + j) * pitch + t] for the tiles t0 .. t0 + 15
 * that mask keeps. */
#define SB_W4_GRAD_STORE(r, v, t0, pitch, mask) do {                                     \
        int k_;                                                                          \
        for (k_ = 0; k_ < 6; k_++) {   /* columns: Gt[6k + j] = (A r[k])[j] */            \
            __m512 c0_, c1_, c2_, c3_, c4_, c5_;                                         \
            float *dst_ = (v) + (ptrdiff_t)(6 * k_) * (pitch) + (t0);                    \
            SB_W4_A(r[k_][0], r[k_][1], r[k_][2], r[k_][3], c0_, c1_, c2_, c3_, c4_, c5_); \
            sb_w4_store6_avx512(dst_, (pitch), mask, c0_, c1_, c2_, c3_, c4_, c5_);      \
        }                                                                                \
    } while (0)

/* The output-gradient transform Gt = A q A^T of one zero-padded plane (row length wp),
 * 16 tiles per register: q is the 4x4 gradient tile at pad[off[t]], off[t] =
 * 4*th*wp + 4*tw, each of its values gathered.  Writes Gt[6 i + j] = v[(6 i + j) * pitch + t]. */
__attribute__((target("avx512f")))
static void sb_w4_grad_gather_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                  float *v, ptrdiff_t pitch)
{
    int t0, a, b;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512i base = _mm512_maskz_loadu_epi32(mask, off + t0);
        __m512 r[6][4];
        for (b = 0; b < 4; b++) {   /* rows: r[.][b] = A q[.][b] */
            __m512 q[4];
            for (a = 0; a < 4; a++)
                q[a] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask,
                    _mm512_add_epi32(base, _mm512_set1_epi32((int)(a * wp + b))), pad, 4);
            SB_W4_A(q[0], q[1], q[2], q[3], r[0][b], r[1][b], r[2][b], r[3][b], r[4][b], r[5][b]);
        }
        SB_W4_GRAD_STORE(r, v, t0, pitch, mask);
    }
}

/* The same transform of a plane of 4, 8 or a multiple of 16 tiles a row (halo 0: wp = 4
 * tiles_w, the tiles cover each row exactly), each gradient row's four columns by
 * SB_W4_PHASES: the values and the arithmetic of sb_w4_grad_gather_f32 without its 16
 * gathers a block. */
__attribute__((target("avx512f")))
static void sb_w4_grad_rows_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                int tiles_w, float *v, ptrdiff_t pitch)
{
    int t0, a, b;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        const float *row[4];
        __m512 q[4][4], r[6][4];
        SB_W4_TILE_ROWS(pad, off, ntiles, t0, tiles_w, row);
        for (a = 0; a < 4; a++)   /* q[a][b]: column b of gradient row a */
            SB_W4_PHASES(row, tiles_w, (ptrdiff_t)a * wp, q[a]);
        for (b = 0; b < 4; b++)   /* rows: r[.][b] = A q[.][b] */
            SB_W4_A(q[0][b], q[1][b], q[2][b], q[3][b], r[0][b], r[1][b], r[2][b], r[3][b],
                    r[4][b], r[5][b]);
        SB_W4_GRAD_STORE(r, v, t0, pitch, mask);
    }
}

/* The output-gradient transform of one plane (halo 0: row length wp = 4 tiles_w): by rows
 * for 4, 8 or a multiple of 16 tiles a row (a block of 16 tiles then within one tile row),
 * else gathered. */
__attribute__((target("avx512f")))
static void sb_w4_grad_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                 float *v, ptrdiff_t pitch)
{
    const int tiles_w = (int)(wp / 4);
    if (tiles_w == 8 || tiles_w == 4 || tiles_w % 16 == 0)
        sb_w4_grad_rows_f32(pad, wp, off, ntiles, tiles_w, v, pitch);
    else
        sb_w4_grad_gather_f32(pad, wp, off, ntiles, v, pitch);
}

#else

#define SB_W4_TARGET

static int sb_w4_avx512_available(void) { return 0; }
static void sb_w4_in_tilerow_f32(const float *const *rows, int ntiles, float *v, ptrdiff_t pitch)
{
    (void)rows; (void)ntiles; (void)v; (void)pitch;
}
static void sb_w4_out_plane_f32(const float *m, ptrdiff_t pitch, int tiles_h, int tiles_w,
                                float *ypl, ptrdiff_t w4)
{
    (void)m; (void)pitch; (void)tiles_h; (void)tiles_w; (void)ypl; (void)w4;
}
static void sb_w4_grad_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                 float *v, ptrdiff_t pitch)
{
    (void)pad; (void)wp; (void)off; (void)ntiles; (void)v; (void)pitch;
}
static void sb_w4_in_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                               float *v, ptrdiff_t pitch)
{
    (void)pad; (void)wp; (void)off; (void)ntiles; (void)v; (void)pitch;
}

#endif

/* One channel of nb samples by tile rows th0 .. th1-1 (x: its plane in the first sample,
 * samples sn apart, H rows of W values): the six input rows of each tile row in buf's row
 * buffers (rs floats apart; from padded column pw, n_data values; the zero margins are
 * kept), buf + 6 rs the zero row for rows outside, then sb_w4_in_tilerow_f32 into v (V[xi]
 * at v + xi * pitch, the tiles in order).  Input row ih lives in buffer ih mod 6: the next
 * tile row (4 rows on) keeps the last two rows of the one before, and copies four. */
SB_W4_TARGET
static inline void sb_w4_in_rows_channel(const float *x, ptrdiff_t sn, int H, int W, int nb,
                                         int ph, int pw, int n_data, int th0, int th1,
                                         int tiles_w, float *buf, ptrdiff_t rs, float *v,
                                         ptrdiff_t pitch)
{
    const float *rows[6];
    int s, th, i;
    for (s = 0; s < nb; s++) {
        for (th = th0; th < th1; th++) {
            for (i = 0; i < 6; i++) {
                int ih = 4 * th - ph + i;
                if (ih < 0 || ih >= H) {
                    rows[i] = buf + 6 * rs;
                } else {
                    float *row = buf + (ih % 6) * rs;
                    if (th == th0 || i >= 2)   /* else copied for the tile row before */
                        sb_copy_f32(row + pw, x + (ptrdiff_t)s * sn + (ptrdiff_t)ih * W, n_data);
                    rows[i] = row;
                }
            }
            sb_w4_in_tilerow_f32(rows, tiles_w,
                                 v + (ptrdiff_t)(s * (th1 - th0) + th - th0) * tiles_w, pitch);
        }
    }
}

#endif
