/* Winograd F(4x4, 3x3) input transform of one tile row, float32, AVX-512.
 *
 * The portable transform in _winograd4.pyx runs a dozen short loops per tile row
 * (16 tiles on a 64-pixel row), and most of its time goes to loop overhead and a
 * scalar phase split.  Here one zmm register holds one patch value for 16 tiles:
 * per input row, four loads and four two-source permutes give the column phases
 * (value 4*t + l of the row for tile t), two lane shifts the values 4*t + 4 and
 * 4*t + 5, and V = B^T d B is then 6 + 6 six-term combinations of whole
 * registers, stored as 36 runs of 16 tiles (masked at the end of the row).
 * Same matrices as _winograd4.pyx:  B^T = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0],
 * [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]].
 */
#ifndef SANDBOX_WINO4_AVX512_H
#define SANDBOX_WINO4_AVX512_H

#include <stddef.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

static int sb_w4_avx512_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
}

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
    int tw0, i, k;
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
        for (k = 0; k < 6; k++) {   /* rows: V[6 * j + k] = (B^T e)[j][k] */
            __m512 y0, y1, y2, y3, y4, y5;
            SB_W4_BT(e[0][k], e[1][k], e[2][k], e[3][k], e[4][k], e[5][k], y0, y1, y2, y3, y4, y5);
            float *dst = v + tw0 + k * pitch;
            _mm512_mask_storeu_ps(dst, mask, y0);
            _mm512_mask_storeu_ps(dst + 6 * pitch, mask, y1);
            _mm512_mask_storeu_ps(dst + 12 * pitch, mask, y2);
            _mm512_mask_storeu_ps(dst + 18 * pitch, mask, y3);
            _mm512_mask_storeu_ps(dst + 24 * pitch, mask, y4);
            _mm512_mask_storeu_ps(dst + 30 * pitch, mask, y5);
        }
    }
}

#else

static int sb_w4_avx512_available(void) { return 0; }
static void sb_w4_in_tilerow_f32(const float *const *rows, int ntiles, float *v, ptrdiff_t pitch)
{
    (void)rows; (void)ntiles; (void)v; (void)pitch;
}

#endif
#endif
