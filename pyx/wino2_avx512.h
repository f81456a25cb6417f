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

#else

static int sb_w2_avx512_available(void) { return 0; }
static void sb_w2_in_plane_f32(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                               float *v, ptrdiff_t pitch)
{
    (void)pad; (void)wp; (void)off; (void)ntiles; (void)v; (void)pitch;
}

#endif
#endif
