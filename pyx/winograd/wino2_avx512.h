/* Winograd F(2x2, 3x3) input transform of one zero-padded plane, float32, AVX-512.
 *
 * F(2x2) runs on small maps (16x16 and below: 8 or fewer tiles per row), where a
 * register per tile row would stay mostly empty.  Here one register holds one patch
 * value of 16 consecutive tiles in V's order (t = th * tiles_w + tw, across tile
 * rows), from the padded plane: permuted out of whole-register row loads where a row
 * holds 4 or 8 tiles, else gathered (16 gathers give the 4x4 patches of 16 tiles); V =
 * B^T d B is then 32 whole-register additions, stored as 16 runs.
 * B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]] (_winograd.pyx).
 */
#ifndef SANDBOX_WINO2_AVX512_H
#define SANDBOX_WINO2_AVX512_H

#include <stddef.h>
#include <string.h>

#include "wino_planes.h"  /* sb_copy_f32 */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

static int sb_w2_avx512_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
}

/* The second half of the F(2x2) input transform of 16 tiles: from r[i][j] = (B^T d)[i][j],
 * V[4i + k] = (r[i] B)[k] stored as v[(4i + k) * pitch + t] for the tiles t0 .. t0 + 15
 * that mask keeps. */
#define SB_W2_IN_STORE(r, v, t0, pitch, mask) do {                                       \
        int i_;                                                                          \
        for (i_ = 0; i_ < 4; i_++) {   /* columns: V[4i + k] = (r[i] B)[k] */             \
            float *dst_ = (v) + (ptrdiff_t)(4 * i_) * (pitch) + (t0);                    \
            _mm512_mask_storeu_ps(dst_, mask, _mm512_sub_ps(r[i_][0], r[i_][2]));        \
            _mm512_mask_storeu_ps(dst_ + (pitch), mask, _mm512_add_ps(r[i_][1], r[i_][2])); \
            _mm512_mask_storeu_ps(dst_ + 2 * (pitch), mask, _mm512_sub_ps(r[i_][2], r[i_][1])); \
            _mm512_mask_storeu_ps(dst_ + 3 * (pitch), mask, _mm512_sub_ps(r[i_][1], r[i_][3])); \
        }                                                                                \
    } while (0)

/* pad: the plane with its zero border, row length wp; tile (th, tw) reads the 4x4
 * patch at pad[2*th*wp + 2*tw].  off[t] = 2*th*wp + 2*tw for the tiles t < ntiles.
 * Writes V[xi] = v[xi * pitch + t]. */
__attribute__((target("avx512f")))
static void sb_w2_in_gather_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                float *v, ptrdiff_t pitch)
{
    int t0, j;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512i base = _mm512_maskz_loadu_epi32(mask, off + t0);
        __m512 r[4][4];
        for (j = 0; j < 4; j++) {   /* rows: r[.][j] = B^T d[.][j] */
            __m512 d0, d1, d2, d3;
            __m512i col = _mm512_add_epi32(base, _mm512_set1_epi32(j));
            __m512i step = _mm512_set1_epi32((int)wp);
            d0 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, col, pad, 4);
            col = _mm512_add_epi32(col, step);
            d1 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, col, pad, 4);
            col = _mm512_add_epi32(col, step);
            d2 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, col, pad, 4);
            col = _mm512_add_epi32(col, step);
            d3 = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, col, pad, 4);
            r[0][j] = _mm512_sub_ps(d0, d2);
            r[1][j] = _mm512_add_ps(d1, d2);
            r[2][j] = _mm512_sub_ps(d2, d1);
            r[3][j] = _mm512_sub_ps(d1, d3);
        }
        SB_W2_IN_STORE(r, v, t0, pitch, mask);
    }
}

/* The same transform of a plane of 4 or 8 tiles a row (8x8 and 16x16 maps; wp = 2
 * tiles_w + 2), 16 tiles (4 or 2 tile rows) a register: column j of patch row i of each
 * tile (value 2*tw + j of its row) from whole-register loads of the tile rows by
 * two-source permutes, not gathers: 8 tiles a row, two loads a tile row (lanes 0-7 from
 * the first, 8-15 the second); 4 tiles, one (lanes 4r + tw from tile row r).  The same
 * values and arithmetic as sb_w2_in_gather_f32: the same bits.  Reads up to 14 floats
 * past the row of a tile's last patch row: pad has SB_PLANE_SLACK floats after its last
 * block. */
__attribute__((target("avx512f")))
static void sb_w2_in_rows_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                              int tiles_w, float *v, ptrdiff_t pitch)
{
    const __m512i idx = tiles_w == 8
        ? _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14)
        : _mm512_setr_epi32(0, 2, 4, 6, 16, 18, 20, 22, 0, 2, 4, 6, 16, 18, 20, 22);
    int t0, i, j;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        const float *row[4];
        __m512 d[4][4], r[4][4];
        sb_plane_tile_rows(pad, off, ntiles, t0, tiles_w, 16 / tiles_w, row);
        for (i = 0; i < 4; i++) {   /* d[i][j]: column j of patch row i */
            const ptrdiff_t at = (ptrdiff_t)i * wp;
            const __m512 x0 = _mm512_loadu_ps(row[0] + at);
            const __m512 x1 = _mm512_loadu_ps(tiles_w == 8 ? row[0] + at + 16 : row[1] + at);
            const __m512 y0 = _mm512_loadu_ps(tiles_w == 8 ? row[1] + at : row[2] + at);
            const __m512 y1 = _mm512_loadu_ps(tiles_w == 8 ? row[1] + at + 16 : row[3] + at);
            for (j = 0; j < 4; j++)
                d[i][j] = sb_blend_pairs_avx512(x0, x1, y0, y1,
                                                _mm512_add_epi32(idx, _mm512_set1_epi32(j)));
        }
        for (j = 0; j < 4; j++) {   /* rows: r[.][j] = B^T d[.][j] */
            r[0][j] = _mm512_sub_ps(d[0][j], d[2][j]);
            r[1][j] = _mm512_add_ps(d[1][j], d[2][j]);
            r[2][j] = _mm512_sub_ps(d[2][j], d[1][j]);
            r[3][j] = _mm512_sub_ps(d[1][j], d[3][j]);
        }
        SB_W2_IN_STORE(r, v, t0, pitch, mask);
    }
}

/* The F(2x2) input transform of one zero-bordered plane (halo 2: wp = 2 tiles_w + 2):
 * by rows for 8 or 4 tiles a row, else gathered. */
__attribute__((target("avx512f")))
static void sb_w2_in_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                               float *v, ptrdiff_t pitch)
{
    const int tiles_w = (int)((wp - 2) / 2);
    if (tiles_w == 8 || tiles_w == 4)
        sb_w2_in_rows_f32(pad, wp, off, ntiles, tiles_w, v, pitch);
    else
        sb_w2_in_gather_f32(pad, wp, off, ntiles, v, pitch);
}

/* The output transform of one plane: M[xi] = m[xi * pitch + t] for the ntiles =
 * tiles_h * tiles_w tiles of one (sample, channel), 16 tiles per register;
 * y = A^T M A with A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], written to ypl (row length
 * w2 >= 2 * tiles_w, 2 * tiles_h rows).  The two outputs of a tile row are
 * interleaved by permutes, so each run of tiles within a tile row is one copy. */
__attribute__((target("avx512f")))
static void sb_w2_out_plane_f32(const float *m, ptrdiff_t pitch, int tiles_h, int tiles_w,
                                float *ypl, ptrdiff_t w2)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30,
                                         15, 31);
    float st[2][32] __attribute__((aligned(64)));
    int ntiles = tiles_h * tiles_w;
    int t0, k;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512 a0[4], a1[4], y0a, y0b, y1a, y1b;
        int L;
        for (k = 0; k < 4; k++) {   /* rows: a = A^T M over the first point index */
            __m512 m0 = _mm512_maskz_loadu_ps(mask, m + (ptrdiff_t)k * pitch + t0);
            __m512 m1 = _mm512_maskz_loadu_ps(mask, m + (ptrdiff_t)(4 + k) * pitch + t0);
            __m512 m2 = _mm512_maskz_loadu_ps(mask, m + (ptrdiff_t)(8 + k) * pitch + t0);
            __m512 m3 = _mm512_maskz_loadu_ps(mask, m + (ptrdiff_t)(12 + k) * pitch + t0);
            a0[k] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
            a1[k] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
        }
        /* columns: y[i] = a[i] A */
        y0a = _mm512_add_ps(_mm512_add_ps(a0[0], a0[1]), a0[2]);
        y0b = _mm512_sub_ps(_mm512_sub_ps(a0[1], a0[2]), a0[3]);
        y1a = _mm512_add_ps(_mm512_add_ps(a1[0], a1[1]), a1[2]);
        y1b = _mm512_sub_ps(_mm512_sub_ps(a1[1], a1[2]), a1[3]);
        _mm512_store_ps(st[0], _mm512_permutex2var_ps(y0a, lo, y0b));
        _mm512_store_ps(st[0] + 16, _mm512_permutex2var_ps(y0a, hi, y0b));
        _mm512_store_ps(st[1], _mm512_permutex2var_ps(y1a, lo, y1b));
        _mm512_store_ps(st[1] + 16, _mm512_permutex2var_ps(y1a, hi, y1b));
        for (L = 0; L < n;) {   /* runs of tiles inside one tile row */
            int t = t0 + L, th = t / tiles_w, tw = t - th * tiles_w;
            int run = tiles_w - tw < n - L ? tiles_w - tw : n - L;
            float *row = ypl + (ptrdiff_t)(2 * th) * w2 + 2 * tw;
            sb_copy_f32(row, st[0] + 2 * L, 2 * run);
            sb_copy_f32(row + w2, st[1] + 2 * L, 2 * run);
            L += run;
        }
    }
}

/* The output-gradient transform's second half for 16 tiles: from the 2x2 gradient tiles'
 * values q[a][b] (row a, column b), r = A q, then Gt[4k + j] = (r[k] A^T)[j] stored as
 * v[(4k + j) * pitch + t] for the tiles t0 .. t0 + 15 that mask keeps;
 * A = [[1, 0], [1, 1], [1, -1], [0, -1]]. */
__attribute__((target("avx512f")))
static inline void sb_w2_grad_store(__m512 q00, __m512 q01, __m512 q10, __m512 q11, float *v,
                                    int t0, ptrdiff_t pitch, __mmask16 mask)
{
    const __m512 z = _mm512_setzero_ps();
    __m512 r[4][2];   /* rows: r = A q */
    int k;
    r[0][0] = q00;                     r[0][1] = q01;
    r[1][0] = _mm512_add_ps(q00, q10); r[1][1] = _mm512_add_ps(q01, q11);
    r[2][0] = _mm512_sub_ps(q00, q10); r[2][1] = _mm512_sub_ps(q01, q11);
    r[3][0] = _mm512_sub_ps(z, q10);   r[3][1] = _mm512_sub_ps(z, q11);
    for (k = 0; k < 4; k++) {   /* columns: Gt[4k + j] = (r[k] A^T)[j] */
        float *dst = v + (ptrdiff_t)(4 * k) * pitch + t0;
        _mm512_mask_storeu_ps(dst, mask, r[k][0]);
        _mm512_mask_storeu_ps(dst + pitch, mask, _mm512_add_ps(r[k][0], r[k][1]));
        _mm512_mask_storeu_ps(dst + 2 * pitch, mask, _mm512_sub_ps(r[k][0], r[k][1]));
        _mm512_mask_storeu_ps(dst + 3 * pitch, mask, _mm512_sub_ps(z, r[k][1]));
    }
}

/* The output-gradient transform Gt = A q A^T of one zero-padded plane, 16 tiles per
 * register: q is the 2x2 gradient tile at pad[2*th*wp + 2*tw] (off[t] as for the input
 * transform), each value gathered.  Writes Gt[xi] = v[xi * pitch + t]. */
__attribute__((target("avx512f")))
static void sb_w2_grad_gather_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                  float *v, ptrdiff_t pitch)
{
    int t0;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        __m512i base = _mm512_maskz_loadu_epi32(mask, off + t0);
        __m512i below = _mm512_add_epi32(base, _mm512_set1_epi32((int)wp));
        __m512i one = _mm512_set1_epi32(1);
        __m512 z = _mm512_setzero_ps();
        __m512 q00 = _mm512_mask_i32gather_ps(z, mask, base, pad, 4);
        __m512 q01 = _mm512_mask_i32gather_ps(z, mask, _mm512_add_epi32(base, one), pad, 4);
        __m512 q10 = _mm512_mask_i32gather_ps(z, mask, below, pad, 4);
        __m512 q11 = _mm512_mask_i32gather_ps(z, mask, _mm512_add_epi32(below, one), pad, 4);
        sb_w2_grad_store(q00, q01, q10, q11, v, t0, pitch, mask);
    }
}

/* The same transform of a plane of 2, 4, 8 or a multiple of 16 tiles a row (halo 0: wp = 2
 * tiles_w, the tiles cover each row exactly), 16 tiles a register from whole-register
 * loads and two-source permutes instead of 4 gathers: 16 or more tiles a row, one tile
 * row's 32 values a gradient row; 8, two tile rows' 16 each; 4, four tile rows' (lanes 4r
 * + j, a pair of rows a permute, the pairs blended); 2, the 4x4 planes of 4 samples, 16
 * values each (lanes 4s + 2 th + tw).  The same values and arithmetic as the gathered
 * form.  Reads only the plane. */
__attribute__((target("avx512f")))
static void sb_w2_grad_rows_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                int tiles_w, float *v, ptrdiff_t pitch)
{
    /* column b of gradient row a: index 2j + b of a pair of sources (the second 16 on) */
    const __m512i wide = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i four = _mm512_setr_epi32(0, 2, 4, 6, 16, 18, 20, 22, 0, 2, 4, 6, 16, 18,
                                           20, 22);
    const __m512i two = _mm512_setr_epi32(0, 2, 8, 10, 16, 18, 24, 26, 0, 2, 8, 10, 16, 18,
                                          24, 26);
    /* loads a block: one tile row (16 tiles or more), two, or four (tile rows, or for 2
     * tiles a row pairs of them: 4x4 planes when a map is 4x4) */
    const int step = tiles_w == 2 ? 4 : tiles_w, count = tiles_w >= 16 ? 1 : tiles_w == 8 ? 2 : 4;
    int t0, a, b;
    for (t0 = 0; t0 < ntiles; t0 += 16) {
        int n = ntiles - t0 < 16 ? ntiles - t0 : 16;
        __mmask16 mask = (__mmask16)((1u << n) - 1u);
        const float *row[4];
        __m512 q[2][2];
        sb_plane_tile_rows(pad, off, ntiles, t0, step, count, row);
        for (a = 0; a < 2; a++) {
            const ptrdiff_t at = tiles_w == 2 ? 0 : a * wp;  /* 2: both rows in each load */
            if (tiles_w >= 8) {   /* one permute of a row's 32 values or two rows' 16 */
                const __m512 x0 = _mm512_loadu_ps(row[0] + at);
                const __m512 x1 = _mm512_loadu_ps(tiles_w >= 16 ? row[0] + at + 16
                                                                 : row[1] + at);
                for (b = 0; b < 2; b++)
                    q[a][b] = _mm512_permutex2var_ps(
                        x0, _mm512_add_epi32(wide, _mm512_set1_epi32(b)), x1);
            } else {   /* four loads, two permutes blended */
                const __m512 x0 = _mm512_loadu_ps(row[0] + at), x1 = _mm512_loadu_ps(row[1] + at);
                const __m512 y0 = _mm512_loadu_ps(row[2] + at), y1 = _mm512_loadu_ps(row[3] + at);
                const __m512i base = tiles_w == 4 ? four
                                                  : _mm512_add_epi32(two, _mm512_set1_epi32(4 * a));
                for (b = 0; b < 2; b++)
                    q[a][b] = sb_blend_pairs_avx512(x0, x1, y0, y1,
                                                    _mm512_add_epi32(base, _mm512_set1_epi32(b)));
            }
        }
        sb_w2_grad_store(q[0][0], q[0][1], q[1][0], q[1][1], v, t0, pitch, mask);
    }
}

/* The F(2x2) output-gradient transform of one plane (halo 0: wp = 2 tiles_w): by rows for
 * 2, 4, 8 or a multiple of 16 tiles a row, else gathered. */
__attribute__((target("avx512f")))
static void sb_w2_grad_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                 float *v, ptrdiff_t pitch)
{
    const int tiles_w = (int)(wp / 2);
    if (tiles_w == 2 || tiles_w == 4 || tiles_w == 8 || tiles_w % 16 == 0)
        sb_w2_grad_rows_f32(pad, wp, off, ntiles, tiles_w, v, pitch);
    else
        sb_w2_grad_gather_f32(pad, wp, off, ntiles, v, pitch);
}

#else

static int sb_w2_avx512_available(void) { return 0; }
static void sb_w2_in_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                               float *v, ptrdiff_t pitch)
{
    (void)pad; (void)wp; (void)off; (void)ntiles; (void)v; (void)pitch;
}
static void sb_w2_out_plane_f32(const float *m, ptrdiff_t pitch, int tiles_h, int tiles_w,
                                float *ypl, ptrdiff_t w2)
{
    (void)m; (void)pitch; (void)tiles_h; (void)tiles_w; (void)ypl; (void)w2;
}
static void sb_w2_grad_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                 float *v, ptrdiff_t pitch)
{
    (void)pad; (void)wp; (void)off; (void)ntiles; (void)v; (void)pitch;
}

#endif
#endif
