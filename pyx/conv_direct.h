/* A direct 3x3 convolution (stride 1, dilation 1, one group) of a few input channels,
 * float32, AVX2 + FMA: a UNet's first layer (1-4 channels).  im2col made its columns (9
 * rows a channel, 1.2 MB for a batch of 8 at 64x64) and a GEMM read them back; here each
 * block of 8 output pixels of a row loads its C*9 shifted input vectors once (zeros
 * outside the input: masked loads at the edges) and every output channel sums them
 * against its weights.  Each output is the GEMM's sum, in its order: an FMA chain from
 * zero over k = c*9 + kh*3 + kw (the padding's zeros included), so the values are the
 * im2col path's on the AVX2 GEMM bit for bit.
 *
 * sb_c3_row_f32: output row h of one sample, every output channel (sb_c3_row_f32_avx512:
 * the same with 16-pixel blocks).  x (C, H, W) and y
 * (O, Ho, Wo) contiguous, w (O, C*9) row-major, padding ph, pw; C*9 <= SB_C3_MAX_K. */
#ifndef SANDBOX_CONV_DIRECT_H
#define SANDBOX_CONV_DIRECT_H

#include <stddef.h>

#include "avx2_lanes.h"  /* sb_store_first8 */

#define SB_C3_MAX_K 36  /* 4 input channels */

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* 1 when this CPU runs the kernel (AVX2 and FMA). */
static int sb_c3_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
}

__attribute__((target("avx2,fma")))
static void sb_c3_row_f32(const float *x, int C, int H, int W, const float *w, int O,
                          int ph, int pw, int h, int Wo, float *y, ptrdiff_t y_plane)
{
    const int K = 9 * C;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256 xs[SB_C3_MAX_K];
    float *yrow = y + (ptrdiff_t)h * Wo;
    for (int w0 = 0; w0 < Wo; w0 += 8) {
        const int nw = Wo - w0 < 8 ? Wo - w0 : 8;
        for (int c = 0; c < C; c++)
            for (int kh = 0; kh < 3; kh++) {
                const int ih = h + kh - ph;
                for (int kw = 0; kw < 3; kw++) {
                    const int k = 9 * c + 3 * kh + kw, iw = w0 + kw - pw;
                    if (ih < 0 || ih >= H) {
                        xs[k] = _mm256_setzero_ps();
                        continue;
                    }
                    const float *row = x + ((ptrdiff_t)c * H + ih) * W;
                    if (iw >= 0 && iw + 8 <= W && nw == 8) {
                        xs[k] = _mm256_loadu_ps(row + iw);
                    } else {  /* lanes inside the row (and the block) only: 0 elsewhere */
                        const __m256i col = _mm256_add_epi32(lane, _mm256_set1_epi32(iw));
                        const __m256i in = _mm256_andnot_si256(
                            _mm256_cmpgt_epi32(_mm256_setzero_si256(), col),
                            _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(W), col),
                                             _mm256_cmpgt_epi32(_mm256_set1_epi32(nw), lane)));
                        xs[k] = _mm256_maskload_ps(row + iw, in);
                    }
                }
            }
        int o0 = 0;
        for (; o0 + 8 <= O; o0 += 8) {  /* 8 output channels: 8 accumulators in registers */
            const float *wo = w + (ptrdiff_t)o0 * K;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
                   a6 = a0, a7 = a0;
            for (int k = 0; k < K; k++) {
                const __m256 v = xs[k];
#define SB_C3_FMA(a, o) a = _mm256_fmadd_ps(_mm256_broadcast_ss(wo + (o) * K + k), v, a)
                SB_C3_FMA(a0, 0); SB_C3_FMA(a1, 1); SB_C3_FMA(a2, 2); SB_C3_FMA(a3, 3);
                SB_C3_FMA(a4, 4); SB_C3_FMA(a5, 5); SB_C3_FMA(a6, 6); SB_C3_FMA(a7, 7);
#undef SB_C3_FMA
            }
            float *yo = yrow + o0 * y_plane + w0;
            sb_store_first8(yo, a0, nw);
            sb_store_first8(yo + y_plane, a1, nw);
            sb_store_first8(yo + 2 * y_plane, a2, nw);
            sb_store_first8(yo + 3 * y_plane, a3, nw);
            sb_store_first8(yo + 4 * y_plane, a4, nw);
            sb_store_first8(yo + 5 * y_plane, a5, nw);
            sb_store_first8(yo + 6 * y_plane, a6, nw);
            sb_store_first8(yo + 7 * y_plane, a7, nw);
        }
        for (; o0 < O; o0++) {  /* the rest one at a time: the same chain */
            __m256 acc = _mm256_setzero_ps();
            for (int k = 0; k < K; k++)
                acc = _mm256_fmadd_ps(_mm256_broadcast_ss(w + (ptrdiff_t)o0 * K + k), xs[k], acc);
            sb_store_first8(yrow + o0 * y_plane + w0, acc, nw);
        }
    }
}
/* 1 when this CPU runs sb_c3_row_f32_avx512 (AVX-512F). */
static int sb_c3_avx512_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
}

/* sb_c3_row_f32 with 16 output pixels a block (AVX-512F): the same FMA chain for every
 * output, so the same bits as the AVX2 form and as the im2col product on either GEMM.
 * Masked loads give the zeros outside the input (a masked-off lane is never read), and
 * masked stores the last block's pixels. */
__attribute__((target("avx512f")))
static void sb_c3_row_f32_avx512(const float *x, int C, int H, int W, const float *w, int O,
                                 int ph, int pw, int h, int Wo, float *y, ptrdiff_t y_plane)
{
    const int K = 9 * C;
    __m512 xs[SB_C3_MAX_K];
    float *yrow = y + (ptrdiff_t)h * Wo;
    for (int w0 = 0; w0 < Wo; w0 += 16) {
        const int nw = Wo - w0 < 16 ? Wo - w0 : 16;
        const __mmask16 out = (__mmask16)((1u << nw) - 1u);
        for (int c = 0; c < C; c++)
            for (int kh = 0; kh < 3; kh++) {
                const int ih = h + kh - ph;
                for (int kw = 0; kw < 3; kw++) {
                    const int k = 9 * c + 3 * kh + kw, iw = w0 + kw - pw;
                    if (ih < 0 || ih >= H) {
                        xs[k] = _mm512_setzero_ps();
                        continue;
                    }
                    const float *row = x + ((ptrdiff_t)c * H + ih) * W;
                    if (iw >= 0 && iw + 16 <= W && nw == 16) {
                        xs[k] = _mm512_loadu_ps(row + iw);
                    } else {  /* lanes j with 0 <= iw + j < W and j < nw only */
                        const int lo = iw < 0 ? -iw : 0;
                        const int hi = W - iw < nw ? W - iw : nw;
                        const __mmask16 in = hi > lo
                            ? (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)) : 0;
                        xs[k] = _mm512_maskz_loadu_ps(in, row + iw);
                    }
                }
            }
        int o0 = 0;
        for (; o0 + 8 <= O; o0 += 8) {  /* 8 output channels: 8 accumulators in registers */
            const float *wo = w + (ptrdiff_t)o0 * K;
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
                   a6 = a0, a7 = a0;
            for (int k = 0; k < K; k++) {
                const __m512 v = xs[k];
#define SB_C3_FMA(a, o) a = _mm512_fmadd_ps(_mm512_set1_ps(wo[(o) * K + k]), v, a)
                SB_C3_FMA(a0, 0); SB_C3_FMA(a1, 1); SB_C3_FMA(a2, 2); SB_C3_FMA(a3, 3);
                SB_C3_FMA(a4, 4); SB_C3_FMA(a5, 5); SB_C3_FMA(a6, 6); SB_C3_FMA(a7, 7);
#undef SB_C3_FMA
            }
            float *yo = yrow + o0 * y_plane + w0;
            _mm512_mask_storeu_ps(yo, out, a0);
            _mm512_mask_storeu_ps(yo + y_plane, out, a1);
            _mm512_mask_storeu_ps(yo + 2 * y_plane, out, a2);
            _mm512_mask_storeu_ps(yo + 3 * y_plane, out, a3);
            _mm512_mask_storeu_ps(yo + 4 * y_plane, out, a4);
            _mm512_mask_storeu_ps(yo + 5 * y_plane, out, a5);
            _mm512_mask_storeu_ps(yo + 6 * y_plane, out, a6);
            _mm512_mask_storeu_ps(yo + 7 * y_plane, out, a7);
        }
        for (; o0 < O; o0++) {  /* the rest one at a time: the same chain */
            __m512 acc = _mm512_setzero_ps();
            for (int k = 0; k < K; k++)
                acc = _mm512_fmadd_ps(_mm512_set1_ps(w[(ptrdiff_t)o0 * K + k]), xs[k], acc);
            _mm512_mask_storeu_ps(yrow + o0 * y_plane + w0, out, acc);
        }
    }
}
#else
static int sb_c3_available(void) { return 0; }
static int sb_c3_avx512_available(void) { return 0; }
static void sb_c3_row_f32_avx512(const float *x, int C, int H, int W, const float *w, int O,
                                 int ph, int pw, int h, int Wo, float *y, ptrdiff_t y_plane)
{
    (void)x; (void)C; (void)H; (void)W; (void)w; (void)O; (void)ph; (void)pw; (void)h;
    (void)Wo; (void)y; (void)y_plane;
}
static void sb_c3_row_f32(const float *x, int C, int H, int W, const float *w, int O,
                          int ph, int pw, int h, int Wo, float *y, ptrdiff_t y_plane)
{
    (void)x; (void)C; (void)H; (void)W; (void)w; (void)O; (void)ph; (void)pw; (void)h;
    (void)Wo; (void)y; (void)y_plane;
}
#endif
#endif
