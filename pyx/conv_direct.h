/* A direct 3x3 convolution (stride 1, dilation 1, one group) of a few input channels,
 * float32, AVX2 + FMA: a UNet's first layer (1-4 channels).  im2col made its columns (9
 * rows a channel, 1.2 MB for a batch of 8 at 64x64) and a GEMM read them back; here each
 * block of 8 output pixels of a row loads its C*9 shifted input vectors once (zeros
 * outside the input: masked loads at the edges) and every output channel sums them
 * against its weights.  Each output is the GEMM's sum, in its order: an FMA chain from
 * zero over k = c*9 + kh*3 + kw (the padding's zeros included), so the values are the
 * im2col path's on the AVX2 GEMM bit for bit.
 *
 * sb_c3_row_f32: output row h of one sample, every output channel, 16 at a time along
 * the row (sb_c3_row_f32_avx512: the same with 16-pixel blocks).  x (C, H, W) and y
 * (O, Ho, Wo) contiguous, w (O, C*9) row-major, padding ph, pw; C*9 <= SB_C3_MAX_K. */
#ifndef SANDBOX_CONV_DIRECT_H
#define SANDBOX_CONV_DIRECT_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "avx2_lanes.h"  /* sb_store_first8 */

#define SB_C3_MAX_K 36  /* 4 input channels */

/* The weight gradient from the tasks' parts (sb_c3_wgrad_f32: each task the sums of its
 * rows, part[u * n + e] for weight e of n): dw[e] = the parts added in task order in
 * double, rounded once.  The tasks are fixed by the shapes, so the result does not depend
 * on the thread count (the weights are shared among num_threads threads). */
static void sb_c3_sum_parts(const float *part, ptrdiff_t tasks, ptrdiff_t n, float *dw,
                            int num_threads)
{
    ptrdiff_t e, u;
    #pragma omp parallel for schedule(static) num_threads(num_threads) private(u)
    for (e = 0; e < n; e++) {
        double total = 0;
        for (u = 0; u < tasks; u++)
            total = total + part[u * n + e];
        dw[e] = (float)total;
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* The C*9 shifted input vectors of output row h's block of pixels [w0, w0 + nw), into
 * xs[k] for k = 9c + 3kh + kw: a plain load inside the input, EDGE(row, iw, W, nw) at the
 * row's ends (the lanes outside the row or the block 0, never read), ZERO() on the
 * padding's rows.  LANES is the vector width; the caller has x, C, H, W, h, ph, pw, w0,
 * nw and xs. */
#define SB_C3_SHIFTED(LANES, ZERO, LOAD, EDGE)                                             \
    for (int c = 0; c < C; c++)                                                            \
        for (int kh = 0; kh < 3; kh++) {                                                   \
            const int ih = h + kh - ph;                                                    \
            for (int kw = 0; kw < 3; kw++) {                                               \
                const int k = 9 * c + 3 * kh + kw, iw = w0 + kw - pw;                      \
                if (ih < 0 || ih >= H) {                                                   \
                    xs[k] = ZERO();                                                        \
                    continue;                                                              \
                }                                                                          \
                const float *row = x + ((ptrdiff_t)c * H + ih) * W;                        \
                xs[k] = iw >= 0 && iw + LANES <= W && nw == LANES ? LOAD(row + iw)         \
                                                                  : EDGE(row, iw, W, nw); \
            }                                                                              \
        }

/* Output channels o0 .. o0 + 7 of one block of pixels, from its shifted inputs xs[0..K),
 * in 8 accumulators: each the FMA chain over k from zero (the im2col product's order).  V
 * is the vector type; ZERO(), FMA(a, b, c) = a * b + c, SPLAT(p) (the float at p in every
 * lane) and STORE(dst, v) (the block's pixels of v at dst) that width's operations; the
 * caller has w, K, o0, yrow, y_plane, w0 and xs. */
#define SB_C3_EIGHT(V, ZERO, FMA, SPLAT, STORE)                                           \
    {                                                                                      \
        const float *wo = w + (ptrdiff_t)o0 * K;                                           \
        V a0 = ZERO(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;      \
        for (int k = 0; k < K; k++) {                                                      \
            const V v = xs[k];                                                             \
            a0 = FMA(SPLAT(wo + k), v, a0);         a1 = FMA(SPLAT(wo + K + k), v, a1);     \
            a2 = FMA(SPLAT(wo + 2 * K + k), v, a2); a3 = FMA(SPLAT(wo + 3 * K + k), v, a3); \
            a4 = FMA(SPLAT(wo + 4 * K + k), v, a4); a5 = FMA(SPLAT(wo + 5 * K + k), v, a5); \
            a6 = FMA(SPLAT(wo + 6 * K + k), v, a6); a7 = FMA(SPLAT(wo + 7 * K + k), v, a7); \
        }                                                                                  \
        float *yo = yrow + o0 * y_plane + w0;                                              \
        STORE(yo, a0); STORE(yo + y_plane, a1); STORE(yo + 2 * y_plane, a2);               \
        STORE(yo + 3 * y_plane, a3); STORE(yo + 4 * y_plane, a4);                          \
        STORE(yo + 5 * y_plane, a5); STORE(yo + 6 * y_plane, a6);                          \
        STORE(yo + 7 * y_plane, a7);                                                       \
    }

/* Output channels o0 .. O - 1 (fewer than 8) of one block, one at a time: the same chain. */
#define SB_C3_REST(V, ZERO, FMA, SPLAT, STORE)                                            \
    for (int o = o0; o < O; o++) {                                                         \
        V acc = ZERO();                                                                    \
        for (int k = 0; k < K; k++)                                                        \
            acc = FMA(SPLAT(w + (ptrdiff_t)o * K + k), xs[k], acc);                        \
        STORE(yrow + o * y_plane + w0, acc);                                               \
    }

/* One output row, SB_C3_GROUP output channels at a time along the whole row (the shifted
 * inputs loaded again for each group), then the rest (fewer than 8) block by block.
 * Writing a few planes at a time, not every plane for each block of pixels, keeps the
 * stores in a few streams: with all of them a block, 1 input channel -> 24 or more output
 * channels ran at half the speed per channel of 16 (too few FMAs a store to hide them);
 * groups of 8 loaded the inputs too often for 2-3 input channels.  BLOCK opens a block of
 * nw <= LANES pixels at w0 (its masks), SHIFTED loads its inputs into xs, EIGHT and REST
 * as above. */
#define SB_C3_GROUP 16
#define SB_C3_ROW(LANES, BLOCK, SHIFTED, EIGHT, REST)                                      \
    {                                                                                      \
        const int full = O - O % 8, group = SB_C3_GROUP;                                   \
        for (int g0 = 0; g0 < full; g0 += group) {                                         \
            const int g1 = g0 + group < full ? g0 + group : full;                          \
            for (int w0 = 0; w0 < Wo; w0 += LANES) {                                       \
                BLOCK SHIFTED                                                              \
                for (int o0 = g0; o0 < g1; o0 += 8)                                        \
                    EIGHT                                                                  \
            }                                                                              \
        }                                                                                  \
        if (full < O)                                                                      \
            for (int w0 = 0; w0 < Wo; w0 += LANES) {                                       \
                const int o0 = full;                                                       \
                BLOCK SHIFTED REST                                                         \
            }                                                                              \
    }

/* 1 when this CPU runs the kernel (AVX2 and FMA). */
static int sb_c3_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
}

/* row[iw + j] for the lanes j < nw with 0 <= iw + j < W, 0 in the others (never read). */
__attribute__((target("avx2,fma")))
static inline __m256 sb_c3_edge8(const float *row, int iw, int W, int nw)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i col = _mm256_add_epi32(lane, _mm256_set1_epi32(iw));
    const __m256i in = _mm256_andnot_si256(
        _mm256_cmpgt_epi32(_mm256_setzero_si256(), col),
        _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(W), col),
                         _mm256_cmpgt_epi32(_mm256_set1_epi32(nw), lane)));
    return _mm256_maskload_ps(row + iw, in);
}

/* sb_c3_edge8's 16 lanes: a masked load reads none of the lanes it leaves 0. */
__attribute__((target("avx512f")))
static inline __m512 sb_c3_edge16(const float *row, int iw, int W, int nw)
{
    const int lo = iw < 0 ? -iw : 0;
    const int hi = W - iw < nw ? W - iw : nw;
    const __mmask16 in = hi > lo ? (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u)) : 0;
    return _mm512_maskz_loadu_ps(in, row + iw);
}

__attribute__((target("avx2,fma")))
static void sb_c3_row_f32(const float *x, int C, int H, int W, const float *w, int O,
                          int ph, int pw, int h, int Wo, float *y, ptrdiff_t y_plane)
{
    const int K = 9 * C;
    __m256 xs[SB_C3_MAX_K];
    float *yrow = y + (ptrdiff_t)h * Wo;
#define SB_C3_STORE(dst, v) sb_store_first8(dst, v, nw)
    SB_C3_ROW(8, const int nw = Wo - w0 < 8 ? Wo - w0 : 8;,
              SB_C3_SHIFTED(8, _mm256_setzero_ps, _mm256_loadu_ps, sb_c3_edge8),
              SB_C3_EIGHT(__m256, _mm256_setzero_ps, _mm256_fmadd_ps, _mm256_broadcast_ss,
                          SB_C3_STORE),
              SB_C3_REST(__m256, _mm256_setzero_ps, _mm256_fmadd_ps, _mm256_broadcast_ss,
                         SB_C3_STORE))
#undef SB_C3_STORE
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
#define SB_C3_SPLAT(p) _mm512_set1_ps(*(p))
#define SB_C3_STORE(dst, v) _mm512_mask_storeu_ps(dst, out, v)
    SB_C3_ROW(16, const int nw = Wo - w0 < 16 ? Wo - w0 : 16;
                  const __mmask16 out = (__mmask16)((1u << nw) - 1u);,
              SB_C3_SHIFTED(16, _mm512_setzero_ps, _mm512_loadu_ps, sb_c3_edge16),
              SB_C3_EIGHT(__m512, _mm512_setzero_ps, _mm512_fmadd_ps, SB_C3_SPLAT, SB_C3_STORE),
              SB_C3_REST(__m512, _mm512_setzero_ps, _mm512_fmadd_ps, SB_C3_SPLAT, SB_C3_STORE))
#undef SB_C3_STORE
#undef SB_C3_SPLAT
}
/* -- the weight gradient ---------------------------------------------------------------
 * dW[o, k] = sum over samples and output pixels of g[o, h, w] * x[c, h + kh - ph, w + kw - pw]
 * (k = 9c + 3kh + kw; zero outside x, multiplied in as im2col's columns would be).
 * sb_c3_wgrad_f32 / _avx512: one task, output rows [h0, h1) of one sample, into part
 * (O x 9C).  The task's input rows of each channel are first copied, with the
 * padding's zeros, into small tiles (sb_c3_pad_tile), so that every shifted vector is a
 * plain load; then for each output channel (a pair of them on AVX-512) and each input
 * channel nine vector accumulators (eighteen) run over the task's pixels, 8 (16) lanes
 * each (the output gradient's rows are read from memory once and from cache for the
 * other input channels), and each is summed by a fixed tree.  Every sum depends on the task's rows alone, never on the
 * thread that runs it; the caller adds the tasks' parts in task order.  Returns -1 when
 * the tile cannot be allocated (part then unwritten), else 0. */

/* x[c, h0 - ph + r, j - pw] at tile[r * ld + j] for r < h1 - h0 + 2, j < ld (0 outside x);
 * ld = Wo + 2 + lanes, so that a block's vectors never read past a row. */
static void sb_c3_pad_tile(const float *xc, int H, int W, int ph, int pw, int h0, int h1,
                           int ld, float *tile)
{
    for (int r = 0; r < h1 - h0 + 2; r++) {
        float *dst = tile + (ptrdiff_t)r * ld;
        const int ih = h0 - ph + r;
        /* columns j = iw + pw: [0, lo) zeros, [lo, hi) the row, [hi, ld) zeros */
        const int lo = pw < 0 ? 0 : (pw < ld ? pw : ld);
        const int first = pw < 0 ? -pw : 0;  /* the row's first column that lands in the tile */
        int hi = W + pw < ld ? W + pw : ld;
        if (hi < lo) hi = lo;
        if (ih < 0 || ih >= H || first >= W) {
            memset(dst, 0, sizeof(float) * (size_t)ld);
            continue;
        }
        memset(dst, 0, sizeof(float) * (size_t)lo);
        memcpy(dst + lo, xc + (ptrdiff_t)ih * W + first, sizeof(float) * (size_t)(hi - lo));
        memset(dst + hi, 0, sizeof(float) * (size_t)(ld - hi));
    }
}

/* 8 lanes summed by a fixed tree: (l + l+4), then (l + l+2), then (l + l+1). */
__attribute__((target("avx2,fma")))
static inline float sb_c3_sum8(__m256 v)
{
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

__attribute__((target("avx2,fma")))
static int sb_c3_wgrad_f32(const float *x, int C, int H, int W, const float *g, int O,
                           int ph, int pw, int h0, int h1, int Wo, ptrdiff_t g_plane,
                           float *part)
{
    const int K = 9 * C, ld = Wo + 2 + 8;
    const ptrdiff_t tile_size = (ptrdiff_t)(h1 - h0 + 2) * ld;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    float *tiles = (float *)malloc(sizeof(float) * (size_t)(C * tile_size));
    if (tiles == NULL) return -1;
    for (int c = 0; c < C; c++)
        sb_c3_pad_tile(x + (ptrdiff_t)c * H * W, H, W, ph, pw, h0, h1, ld, tiles + c * tile_size);
    for (int o = 0; o < O; o++) {
        const float *go = g + (ptrdiff_t)o * g_plane;
        for (int c = 0; c < C; c++) {  /* the task's rows of g[o] stay in cache for every c */
            const float *tile = tiles + c * tile_size;
            /* nine named accumulators: an array of them was kept in memory by gcc */
            __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0,
                   s6 = s0, s7 = s0, s8 = s0;
            for (int h = h0; h < h1; h++) {
                const float *t0 = tile + (ptrdiff_t)(h - h0) * ld, *t1 = t0 + ld, *t2 = t1 + ld;
                const float *gr = go + (ptrdiff_t)h * Wo;
                for (int w0 = 0; w0 < Wo; w0 += 8) {
                    const int nw = Wo - w0 < 8 ? Wo - w0 : 8;
                    const __m256 gv = nw == 8 ? _mm256_loadu_ps(gr + w0)
                        : _mm256_maskload_ps(gr + w0,
                                             _mm256_cmpgt_epi32(_mm256_set1_epi32(nw), lane));
#define SB_C3_TAP(s, t, kw) s = _mm256_fmadd_ps(gv, _mm256_loadu_ps(t + w0 + kw), s)
                    SB_C3_TAP(s0, t0, 0); SB_C3_TAP(s1, t0, 1); SB_C3_TAP(s2, t0, 2);
                    SB_C3_TAP(s3, t1, 0); SB_C3_TAP(s4, t1, 1); SB_C3_TAP(s5, t1, 2);
                    SB_C3_TAP(s6, t2, 0); SB_C3_TAP(s7, t2, 1); SB_C3_TAP(s8, t2, 2);
#undef SB_C3_TAP
                }
            }
            float *out = part + (ptrdiff_t)o * K + 9 * c;
            out[0] = sb_c3_sum8(s0); out[1] = sb_c3_sum8(s1); out[2] = sb_c3_sum8(s2);
            out[3] = sb_c3_sum8(s3); out[4] = sb_c3_sum8(s4); out[5] = sb_c3_sum8(s5);
            out[6] = sb_c3_sum8(s6); out[7] = sb_c3_sum8(s7); out[8] = sb_c3_sum8(s8);
        }
    }
    free(tiles);
    return 0;
}

/* 16 lanes summed by a fixed tree: (l + l+8), then sb_c3_sum8's. */
__attribute__((target("avx512f,avx2,fma")))
static inline float sb_c3_sum16(__m512 v)
{
    return sb_c3_sum8(_mm256_add_ps(_mm512_castps512_ps256(v),
                                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

__attribute__((target("avx512f,avx2,fma")))
static int sb_c3_wgrad_f32_avx512(const float *x, int C, int H, int W, const float *g, int O,
                                  int ph, int pw, int h0, int h1, int Wo, ptrdiff_t g_plane,
                                  float *part)
{
    const int K = 9 * C, ld = Wo + 2 + 16;
    const ptrdiff_t tile_size = (ptrdiff_t)(h1 - h0 + 2) * ld;
    float *tiles = (float *)malloc(sizeof(float) * (size_t)(C * tile_size));
    if (tiles == NULL) return -1;
    for (int c = 0; c < C; c++)
        sb_c3_pad_tile(x + (ptrdiff_t)c * H * W, H, W, ph, pw, h0, h1, ld, tiles + c * tile_size);
    for (int o = 0; o < O; o += 2) {
        const int pair = o + 1 < O;  /* a second output channel in the same pass */
        const float *g0 = g + (ptrdiff_t)o * g_plane, *g1 = pair ? g0 + g_plane : g0;
        for (int c = 0; c < C; c++) {  /* the task's rows of g[o], g[o+1] stay in cache */
            const float *tile = tiles + c * tile_size;
            /* eighteen named accumulators: arrays of them were kept in memory by gcc */
            __m512 p0 = _mm512_setzero_ps(), p1 = p0, p2 = p0, p3 = p0, p4 = p0, p5 = p0,
                   p6 = p0, p7 = p0, p8 = p0;
            __m512 q0 = p0, q1 = p0, q2 = p0, q3 = p0, q4 = p0, q5 = p0, q6 = p0, q7 = p0,
                   q8 = p0;
            for (int h = h0; h < h1; h++) {
                const float *t0 = tile + (ptrdiff_t)(h - h0) * ld, *t1 = t0 + ld, *t2 = t1 + ld;
                const float *gr0 = g0 + (ptrdiff_t)h * Wo, *gr1 = g1 + (ptrdiff_t)h * Wo;
                for (int w0 = 0; w0 < Wo; w0 += 16) {
                    const int nw = Wo - w0 < 16 ? Wo - w0 : 16;
                    const __mmask16 valid = (__mmask16)((1u << nw) - 1u);
                    const __m512 gv0 = _mm512_maskz_loadu_ps(valid, gr0 + w0);
                    const __m512 gv1 = _mm512_maskz_loadu_ps(valid, gr1 + w0);
#define SB_C3_TAP(p, q, t, kw) { const __m512 xv = _mm512_loadu_ps(t + w0 + kw);         \
                                 p = _mm512_fmadd_ps(gv0, xv, p);                          \
                                 q = _mm512_fmadd_ps(gv1, xv, q); }
                    SB_C3_TAP(p0, q0, t0, 0) SB_C3_TAP(p1, q1, t0, 1) SB_C3_TAP(p2, q2, t0, 2)
                    SB_C3_TAP(p3, q3, t1, 0) SB_C3_TAP(p4, q4, t1, 1) SB_C3_TAP(p5, q5, t1, 2)
                    SB_C3_TAP(p6, q6, t2, 0) SB_C3_TAP(p7, q7, t2, 1) SB_C3_TAP(p8, q8, t2, 2)
#undef SB_C3_TAP
                }
            }
            float *out = part + (ptrdiff_t)o * K + 9 * c;
            out[0] = sb_c3_sum16(p0); out[1] = sb_c3_sum16(p1); out[2] = sb_c3_sum16(p2);
            out[3] = sb_c3_sum16(p3); out[4] = sb_c3_sum16(p4); out[5] = sb_c3_sum16(p5);
            out[6] = sb_c3_sum16(p6); out[7] = sb_c3_sum16(p7); out[8] = sb_c3_sum16(p8);
            if (pair) {
                out += K;
                out[0] = sb_c3_sum16(q0); out[1] = sb_c3_sum16(q1); out[2] = sb_c3_sum16(q2);
                out[3] = sb_c3_sum16(q3); out[4] = sb_c3_sum16(q4); out[5] = sb_c3_sum16(q5);
                out[6] = sb_c3_sum16(q6); out[7] = sb_c3_sum16(q7); out[8] = sb_c3_sum16(q8);
            }
        }
    }
    free(tiles);
    return 0;
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
static int sb_c3_wgrad_f32(const float *x, int C, int H, int W, const float *g, int O,
                           int ph, int pw, int h0, int h1, int Wo, ptrdiff_t g_plane,
                           float *part)
{
    (void)x; (void)C; (void)H; (void)W; (void)g; (void)O; (void)ph; (void)pw; (void)h0;
    (void)h1; (void)Wo; (void)g_plane; (void)part;
    return -1;
}
static int sb_c3_wgrad_f32_avx512(const float *x, int C, int H, int W, const float *g, int O,
                                  int ph, int pw, int h0, int h1, int Wo, ptrdiff_t g_plane,
                                  float *part)
{
    return sb_c3_wgrad_f32(x, C, H, W, g, O, ph, pw, h0, h1, Wo, g_plane, part);
}
#endif
#endif
