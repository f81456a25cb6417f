/* Winograd F(2x2, 3x3) input transform of one zero-padded plane, float32, AVX-512.
 *
 * F(2x2) runs on small maps (16x16 and below: 8 or fewer tiles per row), where a
 * register per tile row would stay mostly empty.  Here one register holds one patch
 * value of 16 consecutive tiles in V's order (t = th * tiles_w + tw, across tile
 * rows), gathered from the padded plane: 16 gathers give the 4x4 patches of 16
 * tiles, and V = B^T d B is 32 whole-register additions, stored as 16 runs.
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

/* pad: the plane with its zero border, row length wp; tile (th, tw) reads the 4x4
 * patch at pad[2*th*wp + 2*tw].  off[t] = 2*th*wp + 2*tw for the tiles t < ntiles.
 * Writes V[xi] = v[xi * pitch + t]. */
__attribute__((target("avx512f")))
static void sb_w2_in_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                               float *v, ptrdiff_t pitch)
{
    int t0, i, j;
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
        for (i = 0; i < 4; i++) {   /* columns: V[4i + k] = (r[i] B)[k] */
            float *dst = v + (ptrdiff_t)(4 * i) * pitch + t0;
            _mm512_mask_storeu_ps(dst, mask, _mm512_sub_ps(r[i][0], r[i][2]));
            _mm512_mask_storeu_ps(dst + pitch, mask, _mm512_add_ps(r[i][1], r[i][2]));
            _mm512_mask_storeu_ps(dst + 2 * pitch, mask, _mm512_sub_ps(r[i][2], r[i][1]));
            _mm512_mask_storeu_ps(dst + 3 * pitch, mask, _mm512_sub_ps(r[i][1], r[i][3]));
        }
    }
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

/* The output-gradient transform Gt = A q A^T of one zero-padded plane, 16 tiles per
 * register: q is the 2x2 gradient tile at pad[2*th*wp + 2*tw] (off[t] as for the input
 * transform), A = [[1, 0], [1, 1], [1, -1], [0, -1]].  Writes Gt[xi] = v[xi * pitch + t]. */
__attribute__((target("avx512f")))
static void sb_w2_grad_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                                 float *v, ptrdiff_t pitch)
{
    int t0, k;
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
        __m512 r[4][2];   /* rows: r = A q */
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
