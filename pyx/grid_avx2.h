/* The coordinate rules of grid sampling on 8 lanes with AVX2 intrinsics (float32), for
 * the isa >= 1 paths of pyx/_grid_sample.pyx: the rules of grid_block2d.h's and
 * grid_block3d.h's loops (_coord/_reflect in the .pyx), the same operations in the same
 * order lane by lane, so the values are the loops' bit for bit ("avx2" enables no fused
 * multiply-add).  The compiler leaves those loops scalar or nearly so (the 2-D pass:
 * 49.5 us for the 16,384 points of a 128^2 grid on a Zen 5 machine, 3x the nearest
 * forward's loads; the 3-D pass, with its stride-3 grid: 44 % of a nearest forward of
 * a 32^3 grid on the AMD EPYC family 23 machine).
 *
 * sb_gs_k8:            the constants, per axis (x, y, z) and shared.
 * sb_gs_axis8:         one axis: the padded coordinate u, d u / d g, and `far`.
 * sb_gs2d_coords8_avx2, sb_gs3d_coords8_avx2: the grid values of r <= 8 points, split
 *                      by axis (x, y(, z) interleaved in memory), through sb_gs_axis8.
 * sb_gs2d_nearest_tap8, sb_gs3d_nearest_tap8: their nearest taps' offsets and inside masks.
 * sb_gs_nearest_f_avx2: the nearest forward of a block (sb_gs_nearest_loads8: its loads).
 * sb_gs_near_offsets_f_avx2: the nearest push's offsets (grid_nearest.h).
 * sb_gs_keys_f_avx2: the slab push's keys (grid_simd2d.h, grid_simd3d.h). */
#ifndef SANDBOX_GRID_AVX2_H
#define SANDBOX_GRID_AVX2_H
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "avx2_lanes.h"    /* sb_store_first8 */
#include "grid_block3d.h"  /* SB_GS_BLOCK */
#define SB_GS_AVX2_RULES 1
#define SB_GS2D_AVX2 __attribute__((target("avx2")))

SB_GS2D_AVX2 static inline __m256 sb_gs2d_sel8(__m256 mask, __m256 a, __m256 b) {
    return _mm256_blendv_ps(b, a, mask);  /* mask ? a : b, lane by lane */
}

/* One axis: its scale, reflection span and twice it, the last index (the clip bound)
 * and the size. */
typedef struct {
    __m256 s, sp, sp2, hi, size;
} sb_gs_ax8;

typedef struct {
    __m256 one, zero, mone, sh, lo;
    sb_gs_ax8 x, y, z;
    __m256i vw, vh, lane;
    int pad;
} sb_gs_k8;

SB_GS2D_AVX2 static inline sb_gs_ax8 sb_gs_ax8_make(Py_ssize_t size, float scale, float span) {
    sb_gs_ax8 a;
    a.s = _mm256_set1_ps(scale);
    a.sp = _mm256_set1_ps(span);
    a.sp2 = _mm256_set1_ps(2 * span);
    a.hi = _mm256_set1_ps((float)(size - 1));
    a.size = _mm256_set1_ps((float)size);
    return a;
}

/* scale, span: x, y, z (2-D: D = 1, and z is not read). */
SB_GS2D_AVX2 static inline sb_gs_k8 sb_gs_k8_make(Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
        const float* scale, float shift, int pad, float lo, const float* span, int nd) {
    sb_gs_k8 k;
    k.one = _mm256_set1_ps(1.0f);
    k.zero = _mm256_setzero_ps();
    k.mone = _mm256_set1_ps(-1.0f);
    k.sh = _mm256_set1_ps(shift);
    k.lo = _mm256_set1_ps(lo);
    k.x = sb_gs_ax8_make(W, scale[0], span[0]);
    k.y = sb_gs_ax8_make(H, scale[1], span[1]);
    k.z = nd == 3 ? sb_gs_ax8_make(D, scale[2], span[2]) : k.y;
    k.vw = _mm256_set1_epi32((int)W);
    k.vh = _mm256_set1_epi32((int)H);
    k.lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    k.pad = pad;
    return k;
}

/* The first r (<= 8) lanes set, as an int32 mask vector. */
SB_GS2D_AVX2 static inline __m256i sb_gs2d_lanes8(const sb_gs_k8* k, Py_ssize_t r) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), k->lane);
}

/* The first r (<= 8) lanes of v to p (m: sb_gs2d_lanes8(k, r), unused: plain partial
 * stores, avx2_lanes.h, as masked stores are slow on AMD's Zen). */
SB_GS2D_AVX2 static inline void sb_gs2d_store8(float* p, Py_ssize_t r, __m256i m, __m256 v) {
    (void)m;
    sb_store_first8(p, v, (int)r);
}

/* ok[0..r) <- the lanes of mask m (1 or 0), one byte each. */
SB_GS2D_AVX2 static inline void sb_gs2d_ok8(unsigned char* ok, Py_ssize_t r, __m256 m) {
    const int bits = _mm256_movemask_ps(m);
    for (Py_ssize_t q = 0; q < r; q++) ok[q] = (unsigned char)((bits >> q) & 1);
}

/* 0 <= f < size, lane by lane, as a mask vector. */
SB_GS2D_AVX2 static inline __m256 sb_gs2d_in8(const sb_gs_k8* k, __m256 f, __m256 size) {
    return _mm256_and_ps(_mm256_cmp_ps(f, k->zero, _CMP_GE_OQ), _mm256_cmp_ps(f, size, _CMP_LT_OQ));
}

/* ok[0..r) <- 1 but for the lanes of `far` (points reflected more than once: 0); returns
 * whether there are none. */
SB_GS2D_AVX2 static inline int sb_gs_ok_far8(unsigned char* ok, Py_ssize_t r, __m256 far) {
    const int bits = _mm256_movemask_ps(far) & ~(0xff << r);
    if (bits == 0 && r == 8) {
        memset(ok, 1, 8);
        return 1;
    }
    for (Py_ssize_t q = 0; q < r; q++) ok[q] = (unsigned char)!((bits >> q) & 1);
    return bits == 0;
}

/* The loads of a nearest block of n points: out[c P + j] = x[c S + off[j]] where the lane
 * of in[j / 8] is set, else +0 (a bitwise and, so an inf or NaN at offset 0 does not
 * leak).  8 points at a time, their offsets read once for every channel and each
 * channel's 8 values gathered by plain loads into one vector, one store. */
SB_GS2D_AVX2 static inline void sb_gs_nearest_loads8(const float* x, Py_ssize_t C, Py_ssize_t S,
        float* out, Py_ssize_t P, Py_ssize_t n, const int32_t* off, const __m256* in) {
    const Py_ssize_t n8 = n & ~(Py_ssize_t)7;
    for (Py_ssize_t j = 0; j < n8; j += 8) {
        const int32_t* o = off + j;
        const Py_ssize_t o0 = o[0], o1 = o[1], o2 = o[2], o3 = o[3];
        const Py_ssize_t o4 = o[4], o5 = o[5], o6 = o[6], o7 = o[7];
        const __m256 inside = in[j / 8];
        for (Py_ssize_t c = 0; c < C; c++) {
            const float* xp = x + c * S;
            const __m256 v = _mm256_setr_ps(xp[o0], xp[o1], xp[o2], xp[o3], xp[o4], xp[o5],
                                            xp[o6], xp[o7]);
            _mm256_storeu_ps(out + c * P + j, _mm256_and_ps(inside, v));
        }
    }
    if (n8 < n) {
        const int bits = _mm256_movemask_ps(in[n8 / 8]);
        for (Py_ssize_t c = 0; c < C; c++)
            for (Py_ssize_t j = n8; j < n; j++)
                out[c * P + j] = (bits >> (j - n8)) & 1 ? x[c * S + off[j]] : 0.0f;
    }
}

/* One axis of grid values g: u = (g + 1) s - shift, reflected (pad 2: the unflipped and
 * once-flipped cases; *far |= reflected more than once) and clipped (pad 1, 2), and
 * *d = d u / d g (0 on the clip bounds). */
SB_GS2D_AVX2 static inline __m256 sb_gs_axis8(const sb_gs_k8* k, const sb_gs_ax8* a, __m256 g,
        __m256* d, __m256* far) {
    const __m256 one = k->one, zero = k->zero, neg = _mm256_set1_ps(-0.0f);
    __m256 u = _mm256_sub_ps(_mm256_mul_ps(_mm256_add_ps(g, one), a->s), k->sh);
    __m256 sg = one;
    *d = a->s;
    if (k->pad == 2) {
        __m256 v = _mm256_sub_ps(u, k->lo);
        const __m256 n = _mm256_cmp_ps(v, zero, _CMP_LT_OQ);
        sg = sb_gs2d_sel8(n, k->mone, one);
        v = sb_gs2d_sel8(n, _mm256_xor_ps(v, neg), v);
        *far = _mm256_or_ps(*far, _mm256_cmp_ps(v, a->sp2, _CMP_GE_OQ));
        const __m256 in = _mm256_cmp_ps(v, a->sp, _CMP_LT_OQ);
        sg = sb_gs2d_sel8(in, sg, _mm256_xor_ps(sg, neg));
        u = sb_gs2d_sel8(in, _mm256_add_ps(v, k->lo),
                         _mm256_add_ps(_mm256_sub_ps(a->sp, _mm256_sub_ps(v, a->sp)), k->lo));
    }
    if (k->pad) {
        *d = sb_gs2d_sel8(_mm256_and_ps(_mm256_cmp_ps(u, zero, _CMP_GT_OQ),
                                        _mm256_cmp_ps(u, a->hi, _CMP_LT_OQ)),
                          _mm256_mul_ps(sg, a->s), zero);
        u = sb_gs2d_sel8(_mm256_cmp_ps(u, zero, _CMP_GT_OQ),
                         sb_gs2d_sel8(_mm256_cmp_ps(u, a->hi, _CMP_GE_OQ), a->hi, u), zero);
    }
    return u;
}

/* The n = 2 r floats at g (r <= 8) in two vectors, zeros after them. */
SB_GS2D_AVX2 static inline void sb_gs_load8x(const sb_gs_k8* k, const float* g, Py_ssize_t n,
        Py_ssize_t nv, __m256* v) {
    for (Py_ssize_t i = 0; i < nv; i++)
        v[i] = n >= 8 * (i + 1) ? _mm256_loadu_ps(g + 8 * i)
                                : _mm256_maskload_ps(g + 8 * i, sb_gs2d_lanes8(k, n - 8 * i));
}

/* The padded coordinates of r <= 8 2-D grid points (x, y pairs at g; lanes past r read
 * 0), their derivatives and `far` (reflected more than once). */
SB_GS2D_AVX2 static inline void sb_gs2d_coords8_avx2(const sb_gs_k8* k, const float* g,
        Py_ssize_t r, __m256* ux, __m256* uy, __m256* dx, __m256* dy, __m256* far) {
    __m256 v[2];
    sb_gs_load8x(k, g, 2 * r, 2, v);
    /* (x0 y0 x1 y1 ..) -> x0..x7 and y0..y7 */
    const __m256 gx = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(
        _mm256_shuffle_ps(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0))), _MM_SHUFFLE(3, 1, 2, 0)));
    const __m256 gy = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(
        _mm256_shuffle_ps(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0)));
    *far = k->zero;
    *ux = sb_gs_axis8(k, &k->x, gx, dx, far);
    *uy = sb_gs_axis8(k, &k->y, gy, dy, far);
}

/* The same for r <= 8 3-D grid points (x, y, z triples at g). */
SB_GS2D_AVX2 static inline void sb_gs3d_coords8_avx2(const sb_gs_k8* k, const float* g,
        Py_ssize_t r, __m256* ux, __m256* uy, __m256* uz, __m256* dx, __m256* dy, __m256* dz,
        __m256* far) {
    __m256 v[3];
    sb_gs_load8x(k, g, 3 * r, 3, v);
    /* values 0..23 = x0 y0 z0 x1 ..: each axis takes lanes of all three vectors in
     * turn; two blends gather its values, one permutation orders them */
    const __m256 tx = _mm256_blend_ps(_mm256_blend_ps(v[0], v[1], 0x92), v[2], 0x24);
    const __m256 ty = _mm256_blend_ps(_mm256_blend_ps(v[0], v[1], 0x24), v[2], 0x49);
    const __m256 tz = _mm256_blend_ps(_mm256_blend_ps(v[0], v[1], 0x49), v[2], 0x92);
    const __m256 gx = _mm256_permutevar8x32_ps(tx, _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5));
    const __m256 gy = _mm256_permutevar8x32_ps(ty, _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6));
    const __m256 gz = _mm256_permutevar8x32_ps(tz, _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7));
    *far = k->zero;
    *ux = sb_gs_axis8(k, &k->x, gx, dx, far);
    *uy = sb_gs_axis8(k, &k->y, gy, dy, far);
    *uz = sb_gs_axis8(k, &k->z, gz, dz, far);
}
/* The tap offsets y W + x of r <= 8 2-D nearest points and their inside mask (0 for a
 * point reflected more than once: *far); offset 0 outside. */
SB_GS2D_AVX2 static inline __m256i sb_gs2d_nearest_tap8(const sb_gs_k8* k, const float* g,
        Py_ssize_t r, __m256* inside, __m256* far) {
    __m256 ux, uy, dx, dy;
    sb_gs2d_coords8_avx2(k, g, r, &ux, &uy, &dx, &dy, far);
    __m256 fx = _mm256_round_ps(ux, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 fy = _mm256_round_ps(uy, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 in = _mm256_andnot_ps(*far, _mm256_and_ps(sb_gs2d_in8(k, fx, k->x.size),
                                                           sb_gs2d_in8(k, fy, k->y.size)));
    fx = _mm256_and_ps(in, fx);
    fy = _mm256_and_ps(in, fy);
    *inside = in;
    return _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(fy), k->vw),
                            _mm256_cvttps_epi32(fx));
}

/* The tap offsets (z H + y) W + x of r <= 8 3-D nearest points and their inside mask
 * (0 for a point reflected more than once: *far); offset 0 outside. */
SB_GS2D_AVX2 static inline __m256i sb_gs3d_nearest_tap8(const sb_gs_k8* k, const float* g,
        Py_ssize_t r, __m256* inside, __m256* far) {
    __m256 ux, uy, uz, dx, dy, dz;
    sb_gs3d_coords8_avx2(k, g, r, &ux, &uy, &uz, &dx, &dy, &dz, far);
    __m256 fx = _mm256_round_ps(ux, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 fy = _mm256_round_ps(uy, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 fz = _mm256_round_ps(uz, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 in = _mm256_andnot_ps(*far, _mm256_and_ps(
        _mm256_and_ps(sb_gs2d_in8(k, fx, k->x.size), sb_gs2d_in8(k, fy, k->y.size)),
        sb_gs2d_in8(k, fz, k->z.size)));
    fx = _mm256_and_ps(in, fx);
    fy = _mm256_and_ps(in, fy);
    fz = _mm256_and_ps(in, fz);
    *inside = in;
    const __m256i zy = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(fz), k->vh),
                                        _mm256_cvttps_epi32(fy));
    return _mm256_add_epi32(_mm256_mullo_epi32(zy, k->vw), _mm256_cvttps_epi32(fx));
}

/* sb_gs_nearest_f_avx2: the blocked nearest forward of n <= SB_GS_BLOCK points of an nd-D
 * grid (float32, isa 1; channel planes S apart).  First the block's tap offsets and
 * inside masks (offset 0 outside), then sb_gs_nearest_loads8.  The loop of a load, a
 * load and a store per value that this replaced was bound by those memory operations,
 * and a per-point loop after it wrote +0 outside; computing the offsets in the same
 * loop as the loads made each round one long dependency chain (1.1-1.3x slower).
 * Points reflected more than once get ok[j] = 0 (the caller recomputes them); returns
 * whether there are none. */
SB_GS2D_AVX2 static int sb_gs_nearest_f_avx2(int nd, const float* x, const float* g,
        float* out, Py_ssize_t C, Py_ssize_t S, Py_ssize_t P, Py_ssize_t n, const sb_gs_k8* k,
        unsigned char* ok) {
    int32_t off[SB_GS_BLOCK] __attribute__((aligned(32)));
    __m256 in[SB_GS_BLOCK / 8];
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 8) {
        const Py_ssize_t r = n - j < 8 ? n - j : 8;
        __m256 far;
        const __m256i o = nd == 2 ? sb_gs2d_nearest_tap8(k, g + 2 * j, r, &in[j / 8], &far)
                                  : sb_gs3d_nearest_tap8(k, g + 3 * j, r, &in[j / 8], &far);
        _mm256_store_si256((__m256i*)(off + j), o);
        all &= sb_gs_ok_far8(ok + j, r, far);
    }
    sb_gs_nearest_loads8(x, C, S, out, P, n, off, in);
    return all;
}

/* The push's keys (pyx/_grid_sample.pyx, the slab path) of n bilinear points of an nd-D
 * grid: the slab (slab_of_row) of the lowest row (2-D) or plane (3-D) a tap
 * touches, -1 for a point with no tap inside, -2 for one reflected more than once (the
 * caller computes those with the general rules); the rules of _min_row. */
SB_GS2D_AVX2 static void sb_gs_keys_f_avx2(int nd, const float* g, Py_ssize_t n,
        const sb_gs_k8* k, const int32_t* slab_of_row, Py_ssize_t* keys) {
    const __m256 size = nd == 2 ? k->y.size : k->z.size;
    int32_t row[8], in[8], far8[8];
    for (Py_ssize_t j = 0; j < n; j += 8) {
        const Py_ssize_t r = n - j < 8 ? n - j : 8;
        __m256 ux, uy, uz, dx, dy, dz, far;
        if (nd == 2) {
            sb_gs2d_coords8_avx2(k, g + 2 * j, r, &ux, &uy, &dx, &dy, &far);
        } else {
            sb_gs3d_coords8_avx2(k, g + 3 * j, r, &ux, &uy, &uz, &dx, &dy, &dz, &far);
            uy = uz;
        }
        const __m256 f = _mm256_round_ps(uy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        const __m256 f1 = _mm256_add_ps(f, k->one);
        const __m256 v0 = sb_gs2d_in8(k, f, size);
        const __m256 v1 = sb_gs2d_in8(k, f1, size);
        const __m256 any = _mm256_or_ps(v0, v1);
        /* the first tap's row if inside, else the second's; 0 for none (not read) */
        const __m256 lowest = _mm256_and_ps(any, sb_gs2d_sel8(v0, f, f1));
        _mm256_storeu_si256((__m256i*)row, _mm256_cvttps_epi32(lowest));
        _mm256_storeu_si256((__m256i*)in, _mm256_castps_si256(any));
        _mm256_storeu_si256((__m256i*)far8, _mm256_castps_si256(far));
        for (Py_ssize_t q = 0; q < r; q++)
            keys[j + q] = far8[q] ? -2 : (in[q] ? slab_of_row[row[q]] : -1);
    }
}

/* The nearest push's offsets of n points of an nd-D grid (pyx/_grid_sample.pyx,
 * `_nearest_push`): each point's tap offset, -1 for a point outside with zeros padding,
 * -2 for one not inside with border or reflection padding (reflected more than once, or
 * a NaN coordinate: the caller computes those with the general rules).  Returns whether
 * any point got -2. */
SB_GS2D_AVX2 static int sb_gs_near_offsets_f_avx2(int nd, const float* g, Py_ssize_t n,
        const sb_gs_k8* k, Py_ssize_t* offs) {
    const __m256i none = _mm256_set1_epi32(k->pad ? -2 : -1);
    int outside = 0;  /* lanes not inside, over all points */
    for (Py_ssize_t j = 0; j < n; j += 8) {
        const Py_ssize_t r = n - j < 8 ? n - j : 8;
        __m256 inside, far;
        const __m256i o = nd == 2 ? sb_gs2d_nearest_tap8(k, g + 2 * j, r, &inside, &far)
                                  : sb_gs3d_nearest_tap8(k, g + 3 * j, r, &inside, &far);
        const __m256i v = _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_castsi256_ps(none), _mm256_castsi256_ps(o), inside));
        outside |= ~_mm256_movemask_ps(inside) & ((1 << r) - 1);
        if (r == 8) {
            _mm256_storeu_si256((__m256i*)(offs + j),
                                _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v)));
            _mm256_storeu_si256((__m256i*)(offs + j + 4),
                                _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1)));
        } else {
            int32_t a[8];
            _mm256_storeu_si256((__m256i*)a, v);
            for (Py_ssize_t q = 0; q < r; q++) offs[j + q] = a[q];
        }
    }
    return k->pad && outside;
}
#endif
#endif
