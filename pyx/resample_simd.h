/* Vector forms of the resize's passes (pyx/_resample.pyx), bitwise the scalar loops'
 * values: AVX-512F and AVX2 forms of the float32 passes, and the outer-axis loop compiled
 * for AVX2 and the baseline.
 *
 * sb_rs16_gather_f32: the last-axis pass (apply_last) on 16 rows at once.
 * The scalar loop reads each output's taps from one row at a time: per output a table
 * look-up, a short variable-length loop and scalar loads (about 1.3 ns an output on the
 * Zen 5 machine this was written on, for a 16 -> 32 bicubic pass).  Here a block of 16
 * rows is transposed into a scratch T (column j of the block is T[16 j .. 16 j + 15]),
 * so that each output of all 16 rows is one vector: the weighted sum of its taps'
 * columns.  Sixteen outputs are transposed back into the 16 rows.
 *
 * Each output is formed as the scalar loop forms it, acc = 0, then acc = acc + w * x
 * tap by tap (a multiply and an add, never fused: the module is built with
 * -ffp-contract=off), so the values are bitwise those of the scalar loop.
 *
 * sb_rs16_combine_rows_f32: _combine_rows (whole rows weighted and summed, the passes
 * along an outer axis), 16 floats a vector where the baseline build's loop runs 4,
 * in _combine_rows's order of operations.
 *
 * sb_rs8_gather_f32: the last-axis pass on 8 rows at once with AVX2, for the CPUs
 * without AVX-512. */
#ifndef SANDBOX_RESAMPLE_SIMD_H
#define SANDBOX_RESAMPLE_SIMD_H

#include <stddef.h>
#include "simd_clones.h"

/* _combine_rows of pyx/_resample.pyx (its order of operations: the first two taps, pairs
 * of taps added to dst, a last odd one) as a C loop compiled twice (SB_CLONES: AVX2 and
 * the baseline, chosen by the CPU), so that a CPU without AVX-512 sums 8 floats a
 * vector, not the baseline build's 4; the same values on every clone. */
#define SB_RS_COMBINE_ROWS(T, S)                                                            \
SB_CLONES static void sb_rs_combine_rows_##S(T *restrict dst, const T *restrict src,        \
        ptrdiff_t stride, const T *restrict wk, ptrdiff_t n, ptrdiff_t q_len)               \
{                                                                                           \
    ptrdiff_t q, k;                                                                         \
    if (n == 0) {                                                                           \
        for (q = 0; q < q_len; q++) dst[q] = 0;                                             \
        return;                                                                             \
    }                                                                                       \
    if (n == 1) {                                                                           \
        const T w0 = wk[0];                                                                 \
        for (q = 0; q < q_len; q++) dst[q] = w0 * src[q];                                   \
        return;                                                                             \
    }                                                                                       \
    {                                                                                       \
        const T w0 = wk[0], w1 = wk[1];                                                     \
        const T *r0 = src, *r1 = src + stride;                                              \
        for (q = 0; q < q_len; q++) dst[q] = w0 * r0[q] + w1 * r1[q];                       \
    }                                                                                       \
    for (k = 2; k + 1 < n; k += 2) {                                                        \
        const T w0 = wk[k], w1 = wk[k + 1];                                                 \
        const T *r0 = src + k * stride, *r1 = r0 + stride;                                  \
        for (q = 0; q < q_len; q++) dst[q] = dst[q] + (w0 * r0[q] + w1 * r1[q]);            \
    }                                                                                       \
    if (k < n) {                                                                            \
        const T w0 = wk[k];                                                                 \
        const T *r0 = src + k * stride;                                                     \
        for (q = 0; q < q_len; q++) dst[q] = dst[q] + w0 * r0[q];                           \
    }                                                                                       \
}

SB_RS_COMBINE_ROWS(float, f)
SB_RS_COMBINE_ROWS(double, d)

/* Longest input row the 16-row pass takes (its scratch: 16 * this floats a thread). */
#define SB_RS16_MAX_LEN 256

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#include "avx2_lanes.h"  /* sb_store_first8 */
#define SB_RS16_AVX512 __attribute__((target("avx512f")))

/* r[i] (row i of a 16 x 16 block) -> r[j] (column j): unpacks of 32- and 64-bit pairs,
 * then two rounds of 128-bit lane shuffles. */
SB_RS16_AVX512 static inline void sb_rs16_transpose(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

static inline __mmask16 sb_rs16_lanes(ptrdiff_t n)
{
    return (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1u);
}

/* dst[r, o] = sum_{k < ntap[o]} w[o * kmax + k] * src[r, start[o] + k] for the 16 rows
 * r of the block (rows sstride and dstride apart), inputs of length len <=
 * SB_RS16_MAX_LEN, lo_len outputs; scratch: 16 * len floats, 64-byte aligned. */
SB_RS16_AVX512 static void sb_rs16_gather_f32(float *dst, ptrdiff_t dstride, const float *src,
        ptrdiff_t sstride, ptrdiff_t len, ptrdiff_t lo_len, const ptrdiff_t *start,
        const ptrdiff_t *ntap, const float *w, ptrdiff_t kmax, float *scratch)
{
    __m512 r[16];
    for (ptrdiff_t j0 = 0; j0 < len; j0 += 16) {  /* the block's columns into scratch */
        const ptrdiff_t nj = len - j0 < 16 ? len - j0 : 16;
        const __mmask16 m = sb_rs16_lanes(nj);
        for (int i = 0; i < 16; i++) r[i] = _mm512_maskz_loadu_ps(m, src + i * sstride + j0);
        sb_rs16_transpose(r);
        for (ptrdiff_t j = 0; j < nj; j++) _mm512_store_ps(scratch + 16 * (j0 + j), r[j]);
    }
    for (ptrdiff_t o0 = 0; o0 < lo_len; o0 += 16) {  /* 16 outputs of the 16 rows */
        const ptrdiff_t no = lo_len - o0 < 16 ? lo_len - o0 : 16;
        for (ptrdiff_t q = 0; q < 16; q++) {
            __m512 acc = _mm512_setzero_ps();
            if (q < no) {
                const ptrdiff_t o = o0 + q, n = ntap[o];
                const float *col = scratch + 16 * start[o];
                const float *wo = w + o * kmax;
                for (ptrdiff_t k = 0; k < n; k++)
                    acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(wo[k]),
                                                           _mm512_load_ps(col + 16 * k)));
            }
            r[q] = acc;
        }
        sb_rs16_transpose(r);  /* r[i]: row i's outputs o0 .. o0 + 15 */
        const __mmask16 m = sb_rs16_lanes(no);
        for (int i = 0; i < 16; i++) _mm512_mask_storeu_ps(dst + i * dstride + o0, m, r[i]);
    }
}

/* dst[q] = sum_k wk[k] * src[k * stride + q] for q < q_len: the first two taps, then
 * pairs of taps added to dst, then a last odd one (as _combine_rows). */
SB_RS16_AVX512 static void sb_rs16_combine_rows_f32(float *dst, const float *src,
        ptrdiff_t stride, const float *wk, ptrdiff_t n, ptrdiff_t q_len)
{
    for (ptrdiff_t q = 0; q < q_len; q += 16) {
        const __mmask16 m = sb_rs16_lanes(q_len - q);
        __m512 acc;
        ptrdiff_t k;
        if (n == 0) {
            acc = _mm512_setzero_ps();
        } else if (n == 1) {
            acc = _mm512_mul_ps(_mm512_set1_ps(wk[0]), _mm512_maskz_loadu_ps(m, src + q));
        } else {
            acc = _mm512_add_ps(
                _mm512_mul_ps(_mm512_set1_ps(wk[0]), _mm512_maskz_loadu_ps(m, src + q)),
                _mm512_mul_ps(_mm512_set1_ps(wk[1]), _mm512_maskz_loadu_ps(m, src + stride + q)));
            for (k = 2; k + 1 < n; k += 2) {
                const float *r0 = src + k * stride + q;
                acc = _mm512_add_ps(acc, _mm512_add_ps(
                    _mm512_mul_ps(_mm512_set1_ps(wk[k]), _mm512_maskz_loadu_ps(m, r0)),
                    _mm512_mul_ps(_mm512_set1_ps(wk[k + 1]),
                                  _mm512_maskz_loadu_ps(m, r0 + stride))));
            }
            if (k < n)
                acc = _mm512_add_ps(acc, _mm512_mul_ps(
                    _mm512_set1_ps(wk[k]), _mm512_maskz_loadu_ps(m, src + k * stride + q)));
        }
        _mm512_mask_storeu_ps(dst + q, m, acc);
    }
}

/* sb_rs8_gather_f32: sb_rs16_gather_f32 for a CPU without AVX-512: blocks of 8 rows,
 * 8x8 transposes of AVX2 vectors (the same operations per output, so the same values;
 * "avx2" enables no fused multiply-add). */
#define SB_RS8_AVX2 __attribute__((target("avx2")))

SB_RS8_AVX2 static inline void sb_rs8_transpose(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* The lanes [0, n) of an AVX2 mask (n <= 8). */
SB_RS8_AVX2 static inline __m256i sb_rs8_lanes(ptrdiff_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* As sb_rs16_gather_f32 for the 8 rows of a block; scratch: 8 * len floats, 32-byte
 * aligned. */
SB_RS8_AVX2 static void sb_rs8_gather_f32(float *dst, ptrdiff_t dstride, const float *src,
        ptrdiff_t sstride, ptrdiff_t len, ptrdiff_t lo_len, const ptrdiff_t *start,
        const ptrdiff_t *ntap, const float *w, ptrdiff_t kmax, float *scratch)
{
    __m256 r[8];
    for (ptrdiff_t j0 = 0; j0 < len; j0 += 8) {
        const ptrdiff_t nj = len - j0 < 8 ? len - j0 : 8;
        const __m256i m = sb_rs8_lanes(nj);
        for (int i = 0; i < 8; i++)  /* (AVX2's masked moves are slow: only for a tail) */
            r[i] = nj == 8 ? _mm256_loadu_ps(src + i * sstride + j0)
                           : _mm256_maskload_ps(src + i * sstride + j0, m);
        sb_rs8_transpose(r);
        for (ptrdiff_t j = 0; j < nj; j++) _mm256_store_ps(scratch + 8 * (j0 + j), r[j]);
    }
    for (ptrdiff_t o0 = 0; o0 < lo_len; o0 += 8) {
        const ptrdiff_t no = lo_len - o0 < 8 ? lo_len - o0 : 8;
        for (ptrdiff_t q = 0; q < 8; q++) {
            __m256 acc = _mm256_setzero_ps();
            if (q < no) {
                const ptrdiff_t o = o0 + q, n = ntap[o];
                const float *col = scratch + 8 * start[o];
                const float *wo = w + o * kmax;
                for (ptrdiff_t k = 0; k < n; k++)
                    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(wo[k]),
                                                           _mm256_load_ps(col + 8 * k)));
            }
            r[q] = acc;
        }
        sb_rs8_transpose(r);
        for (int i = 0; i < 8; i++)  /* plain stores: AVX2's masked store is slow on Zen */
            sb_store_first8(dst + i * dstride + o0, r[i], (int)no);
    }
}

/* 2 when this CPU runs the AVX-512F passes, 1 when it runs the AVX2 one, else 0. */
static inline int sb_rs_isa_available(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 2;
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}
#else
static inline void sb_rs16_gather_f32(float *dst, ptrdiff_t dstride, const float *src,
        ptrdiff_t sstride, ptrdiff_t len, ptrdiff_t lo_len, const ptrdiff_t *start,
        const ptrdiff_t *ntap, const float *w, ptrdiff_t kmax, float *scratch)
{
    (void)dst; (void)dstride; (void)src; (void)sstride; (void)len; (void)lo_len;
    (void)start; (void)ntap; (void)w; (void)kmax; (void)scratch;
}
static inline void sb_rs8_gather_f32(float *dst, ptrdiff_t dstride, const float *src,
        ptrdiff_t sstride, ptrdiff_t len, ptrdiff_t lo_len, const ptrdiff_t *start,
        const ptrdiff_t *ntap, const float *w, ptrdiff_t kmax, float *scratch)
{
    (void)dst; (void)dstride; (void)src; (void)sstride; (void)len; (void)lo_len;
    (void)start; (void)ntap; (void)w; (void)kmax; (void)scratch;
}
static inline void sb_rs16_combine_rows_f32(float *dst, const float *src, ptrdiff_t stride,
        const float *wk, ptrdiff_t n, ptrdiff_t q_len)
{
    (void)dst; (void)src; (void)stride; (void)wk; (void)n; (void)q_len;
}
static inline int sb_rs_isa_available(void) { return 0; }
#endif

#endif
