/* The nearest push's offsets (pyx/_grid_sample.pyx, `_nearest_push`): for each point the
 * flat offset (z H + y) W + x of its one tap in its sample's channel plane, -1 when the
 * tap lies outside (nothing to push), -2 for a point reflected more than once (the
 * caller computes those with the general rules).  Float32, 16 points a vector on AVX-512
 * (the coordinate rules of grid_simd2d.h / grid_simd3d.h), 8 on AVX2 (grid_avx2.h's
 * sb_gs_near_offsets_f_avx2).
 *
 * A nearest point has one tap, so each input value receives the gradients of the
 * points that pick it in point order whatever way the work is cut: the push can run
 * one task per (sample, channel) and give the bits of the slab-sorted push. */
#ifndef SANDBOX_GRID_NEAREST_H
#define SANDBOX_GRID_NEAREST_H
#include "grid_simd3d.h"
#include "grid_avx2.h"  /* the AVX2 path's offsets */

#ifdef SB_GS_X86
/* Lanes in `in`: their offset; other lanes -1, or -2 where `far`. */
SB_AVX512 static inline void sb_gs_store_offsets16(__m512i off, __mmask16 in, __mmask16 far,
        Py_ssize_t r, Py_ssize_t* offs) {
    const __m512i v = _mm512_mask_mov_epi32(
        _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), far, _mm512_set1_epi32(-2)), in, off);
    int32_t a[16];
    _mm512_storeu_si512((void*)a, v);
    for (Py_ssize_t q = 0; q < r; q++) offs[q] = a[q];
}

/* The offsets of n 2-D points; returns whether any point got -2. */
SB_AVX512 static int sb_gs2d_near_offsets_f_avx512(const float* g, Py_ssize_t n,
        const sb_gs2d_k16* k, Py_ssize_t* offs) {
    __mmask16 any_far = 0;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        __m512i off;
        __mmask16 far;
        const __mmask16 in = sb_gs2d_nearest_tap16(k, g + 2 * j, r, &off, &far);
        far &= sb_gs_lanes(r);
        any_far |= far;
        sb_gs_store_offsets16(off, in, far, r, offs + j);
    }
    return any_far != 0;
}

/* The offsets of n 3-D points; returns whether any point got -2. */
SB_AVX512 static int sb_gs3d_near_offsets_f_avx512(const float* g, Py_ssize_t n,
        const sb_gs3d_k16* q, Py_ssize_t* offs) {
    const sb_gs2d_k16* k = &q->k;
    __mmask16 any_far = 0;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        __m512 ux, uy, uz, dx, dy, dz;
        __mmask16 far;
        sb_gs3d_coords16(q, g + 3 * j, r, &ux, &uy, &uz, &dx, &dy, &dz, &far);
        const __m512 fx = sb_gs2d_round16(ux, 1), fy = sb_gs2d_round16(uy, 1);
        const __m512 fz = sb_gs2d_round16(uz, 1);
        const __mmask16 in = sb_gs2d_in16(k, fx, k->fw) & sb_gs2d_in16(k, fy, k->fh)
                             & sb_gs2d_in16(k, fz, q->fd) & (__mmask16)~far & sb_gs_lanes(r);
        far &= sb_gs_lanes(r);
        any_far |= far;
        sb_gs_store_offsets16(sb_gs3d_off16(q, fx, fy, fz, in), in, far, r, offs + j);
    }
    return any_far != 0;
}
#endif

/* sb_gs_near_push_*: the push of C channel planes of one sample (gx planes S apart, gy
 * planes P apart) on the points' offsets offs[0..P), for the offsets in [lo, hi) only:
 * gx[c][offs[p]] += gy[c][p] (a negative offset, outside, is never in range).  Point by
 * point and, for each point, over up to SB_GS_NEAR_GROUP channels side by side:
 * neighbouring points often pick the same value, and within one plane each
 * read-modify-write then waits for the previous one's store; the planes' chains are
 * independent, so running several at once hides that latency (batch 8, 4 channels of
 * 128^2, 2 threads, AMD EPYC family 23: see docs/benchmarks.md).  Each value still sums
 * its points in point order, so cutting the planes into ranges of values, one a
 * thread, gives the bits of one whole push; a cut of the channels instead would leave
 * each thread fewer chains to overlap. */
#define SB_GS_NEAR_GROUP 8
#define SB_GS_NEAR_PUSH(T, S_)                                                              \
static void sb_gs_near_push_##S_(const T* restrict gy, T* restrict gx,                      \
        const Py_ssize_t* restrict offs, Py_ssize_t C, Py_ssize_t P, Py_ssize_t S,          \
        Py_ssize_t lo, Py_ssize_t hi) {                                                     \
    const size_t span = (size_t)(hi - lo);                                                  \
    for (Py_ssize_t c0 = 0; c0 < C; c0 += SB_GS_NEAR_GROUP) {                               \
        const Py_ssize_t m = C - c0 < SB_GS_NEAR_GROUP ? C - c0 : SB_GS_NEAR_GROUP;         \
        const T* restrict g = gy + c0 * P;                                                  \
        T* restrict x = gx + c0 * S;                                                        \
        for (Py_ssize_t p = 0; p < P; p++) {                                                \
            const Py_ssize_t o = offs[p];                                                   \
            if ((size_t)(o - lo) >= span) continue;  /* lo <= o < hi, one compare */        \
            for (Py_ssize_t c = 0; c < m; c++) x[c * S + o] = x[c * S + o] + g[c * P + p];  \
        }                                                                                   \
    }                                                                                       \
}
SB_GS_NEAR_PUSH(float, f)
SB_GS_NEAR_PUSH(double, d)

/* Dispatch: 0 (nothing done) unless isa == 2 (AVX-512) or 1 (AVX2) on an x86-64 build,
 * else 1 + whether any point got -2 (so the caller scans for them only then).
 * scale, span: x, y(, z). */
static int sb_gs_near_offsets_f(int isa, int nd, const float* g, Py_ssize_t n, Py_ssize_t D,
        Py_ssize_t H, Py_ssize_t W, int pad, const float* scale, float shift, float lo,
        const float* span, Py_ssize_t* offs) {
    SB_GS2D_IF_X86(
    if (isa == 1) {
        const sb_gs_k8 k = sb_gs_k8_make(D, H, W, scale, shift, pad, lo, span, nd);
        return 1 + sb_gs_near_offsets_f_avx2(nd, g, n, &k, offs);
    }
    if (isa == 2 && nd == 2) {
        const sb_gs2d_k16 k = sb_gs2d_k16_make(H, W, scale[0], scale[1], shift, pad, lo,
                                               span[0], span[1]);
        return 1 + sb_gs2d_near_offsets_f_avx512(g, n, &k, offs);
    }
    if (isa == 2 && nd == 3) {
        const sb_gs3d_k16 q = sb_gs3d_k16_make(D, H, W, scale, shift, pad, lo, span);
        return 1 + sb_gs3d_near_offsets_f_avx512(g, n, &q, offs);
    })
    return 0;
}
#endif
