/* The 3-D twin of grid_simd2d.h's AVX-512 passes (float32, nearest and trilinear):
 * 16 points a vector, the coordinate rules of sb_gs3d_coords_f (grid_block3d.h) on
 * registers, masked gathers of every channel (the x-neighbours of a tap as one 64-bit
 * gather), the grid-gradient sums over channels in registers and the push lane by lane
 * in point order.  Same operations in the same order as grid_block3d.h and the
 * per-point code of pyx/_grid_sample.pyx, so every path gives the same bits.
 *
 * sb_gs3d_fused_f:      the forward of n consecutive points of one sample; a point with
 *                       some taps outside sums the others (a dropped tap adds +0); ok[j]
 *                       = 0 only for points reflected more than once.  Nearest runs
 *                       grid_avx2.h's 8-lane loads on this path too (see grid_simd2d.h's
 *                       dispatch).
 * sb_gs3d_fused_back_f: the trilinear backward of n points (their indices pts, or
 *                       p0 + j when pts is NULL; g their grid values in that order)
 *                       whose 8 taps are inside; ok[j] = 0 for the others, which the
 *                       caller recomputes (the nearest push is grid_nearest.h's). */
#ifndef SANDBOX_GRID_SIMD3D_H
#define SANDBOX_GRID_SIMD3D_H
#include "grid_simd2d.h"

#ifdef SB_GS_X86
typedef struct {
    sb_gs2d_k16 k;  /* x and y, and the shared constants */
    __m512 sz, spz, spz2, hz, fd;
    __m512i vh, ix_ab, iy_ab, iz_ab, ix_c, iy_c, iz_c;
} sb_gs3d_k16;

SB_AVX512 static inline sb_gs3d_k16 sb_gs3d_k16_make(Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
        const float* scale, float shift, int pad, float lo, const float* span) {
    sb_gs3d_k16 q;
    q.k = sb_gs2d_k16_make(H, W, scale[0], scale[1], shift, pad, lo, span[0], span[1]);
    q.sz = _mm512_set1_ps(scale[2]);
    q.spz = _mm512_set1_ps(span[2]);
    q.spz2 = _mm512_set1_ps(2 * span[2]);
    q.hz = _mm512_set1_ps((float)(D - 1));
    q.fd = _mm512_set1_ps((float)D);
    q.vh = _mm512_set1_epi32((int)H);
    /* (x, y, z) triples of 16 points in three vectors a, b, c: component k of lane i is
     * element 3 i + k, in a:b (0-31) for the first lanes, in c for the last ones */
    q.ix_ab = _mm512_set_epi32(0, 0, 0, 0, 0, 30, 27, 24, 21, 18, 15, 12, 9, 6, 3, 0);
    q.iy_ab = _mm512_set_epi32(0, 0, 0, 0, 0, 31, 28, 25, 22, 19, 16, 13, 10, 7, 4, 1);
    q.iz_ab = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 29, 26, 23, 20, 17, 14, 11, 8, 5, 2);
    q.ix_c = _mm512_set_epi32(13, 10, 7, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    q.iy_c = _mm512_set_epi32(14, 11, 8, 5, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    q.iz_c = _mm512_set_epi32(15, 12, 9, 6, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return q;
}

/* The r <= 16 points of g (x, y, z triples) -> padded coordinates, du/dg, far mask. */
SB_AVX512 static inline void sb_gs3d_coords16(const sb_gs3d_k16* q, const float* g,
        Py_ssize_t r, __m512* ux, __m512* uy, __m512* uz, __m512* dx, __m512* dy, __m512* dz,
        __mmask16* far) {
    const sb_gs2d_k16* k = &q->k;
    const Py_ssize_t m = 3 * r;  /* values to read */
    const __m512 a = _mm512_maskz_loadu_ps((__mmask16)(m >= 16 ? 0xFFFF : (1u << m) - 1), g);
    const __m512 b = _mm512_maskz_loadu_ps(
        (__mmask16)(m >= 32 ? 0xFFFF : m <= 16 ? 0 : (1u << (m - 16)) - 1), g + 16);
    const __m512 c = _mm512_maskz_loadu_ps(
        (__mmask16)(m >= 48 ? 0xFFFF : m <= 32 ? 0 : (1u << (m - 32)) - 1), g + 32);
    const __m512 gx = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(a, q->ix_ab, b),
                                                 (__mmask16)0xF800, q->ix_c, c);
    const __m512 gy = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(a, q->iy_ab, b),
                                                 (__mmask16)0xF800, q->iy_c, c);
    const __m512 gz = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(a, q->iz_ab, b),
                                                 (__mmask16)0xFC00, q->iz_c, c);
    *far = 0;
    *ux = sb_gs2d_pad16(k, _mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(gx, k->one), k->sx),
                                         k->shift), k->sx, k->spx, k->spx2, k->hx, dx, far);
    *uy = sb_gs2d_pad16(k, _mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(gy, k->one), k->sy),
                                         k->shift), k->sy, k->spy, k->spy2, k->hy, dy, far);
    *uz = sb_gs2d_pad16(k, _mm512_sub_ps(_mm512_mul_ps(_mm512_add_ps(gz, k->one), q->sz),
                                         k->shift), q->sz, q->spz, q->spz2, q->hz, dz, far);
}

/* Flat offset (z H + y) W + x of the first tap (lanes outside m: 0). */
SB_AVX512 static inline __m512i sb_gs3d_off16(const sb_gs3d_k16* q, __m512 fx, __m512 fy,
        __m512 fz, __mmask16 m) {
    const __m512i z = _mm512_cvttps_epi32(_mm512_maskz_mov_ps(m, fz));
    const __m512i y = _mm512_cvttps_epi32(_mm512_maskz_mov_ps(m, fy));
    const __m512i x = _mm512_cvttps_epi32(_mm512_maskz_mov_ps(m, fx));
    return _mm512_add_epi32(_mm512_mullo_epi32(
        _mm512_add_epi32(_mm512_mullo_epi32(z, q->vh), y), q->k.vw), x);
}

/* The fractions t = u - f and 1 - t of 16 points (ts: tx, ty, tz, then 1 - each) and
 * their 8 trilinear corner weights, tap t = 4 dz + 2 dy + dx, in the scalar code's order
 * of products: ((1 - tz)(1 - ty), (1 - tz) ty, tz (1 - ty), tz ty) times 1 - tx or tx. */
SB_AVX512 static inline void sb_gs3d_corners16(__m512 one, __m512 ux, __m512 uy, __m512 uz,
        __m512 fx, __m512 fy, __m512 fz, __m512 ts[6], __m512 w[8]) {
    ts[0] = _mm512_sub_ps(ux, fx);
    ts[1] = _mm512_sub_ps(uy, fy);
    ts[2] = _mm512_sub_ps(uz, fz);
    for (int a = 0; a < 3; a++) ts[3 + a] = _mm512_sub_ps(one, ts[a]);
    const __m512 zy[4] = {_mm512_mul_ps(ts[5], ts[4]), _mm512_mul_ps(ts[5], ts[1]),
                          _mm512_mul_ps(ts[2], ts[4]), _mm512_mul_ps(ts[2], ts[1])};
    for (int t = 0; t < 8; t++) w[t] = _mm512_mul_ps(zy[t >> 1], (t & 1) ? ts[0] : ts[3]);
}

SB_AVX512 static int sb_gs3d_fused_f_avx512(const float* x, const float* g, float* out,
        Py_ssize_t C, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,
        const sb_gs3d_k16* q, unsigned char* ok) {
    const sb_gs2d_k16* k = &q->k;
    const Py_ssize_t HW = H * W, S = D * HW;
    const __m512 zero = k->zero, one = k->one;
    const Py_ssize_t rows[4] = {0, W, HW, HW + W};  /* (z, y) rows of the 8 taps */
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        const __mmask16 lanes = sb_gs_lanes(r);
        __m512 ux, uy, uz, dx, dy, dz;
        __mmask16 far;
        sb_gs3d_coords16(q, g + 3 * j, r, &ux, &uy, &uz, &dx, &dy, &dz, &far);
        const __m512 fx = sb_gs2d_round16(ux, 0), fy = sb_gs2d_round16(uy, 0);
        const __m512 fz = sb_gs2d_round16(uz, 0);
        const __mmask16 vx0 = sb_gs2d_in16(k, fx, k->fw), vy0 = sb_gs2d_in16(k, fy, k->fh);
        const __mmask16 vz0 = sb_gs2d_in16(k, fz, q->fd) & (__mmask16)~far & lanes;
        const __mmask16 vx1 = sb_gs2d_in16(k, _mm512_add_ps(fx, one), k->fw);
        const __mmask16 vy1 = sb_gs2d_in16(k, _mm512_add_ps(fy, one), k->fh);
        const __mmask16 vz1 = sb_gs2d_in16(k, _mm512_add_ps(fz, one), q->fd)
                              & (__mmask16)~far & lanes;
        /* tap t = 4 dz + 2 dy + dx; a tap's mask is its three axes' */
        const __mmask16 vy[2] = {vy0, vy1}, vz[2] = {vz0, vz1}, vx[2] = {vx0, vx1};
        __mmask16 m[8], any = 0, whole = 1;
        for (int t = 0; t < 8; t++) {
            m[t] = vz[t >> 2] & vy[(t >> 1) & 1] & vx[t & 1];
            any |= m[t];
            whole &= m[t] == m[0];
        }
        /* the lanes whose tap 0 may be outside still need in-range offsets */
        const __m512i off = sb_gs3d_off16(q, fx, fy, fz, any);
        __m512 ts[6], w[8];
        sb_gs3d_corners16(one, ux, uy, uz, fx, fy, fz, ts, w);
        for (Py_ssize_t c = 0; c < C; c++) {
            const float* xp = x + c * S;
            __m512 v[8];
            if (whole) {
                for (int rr = 0; rr < 4; rr++)
                    sb_gs2d_pairs16(k, xp + rows[rr], off, m[0], &v[2 * rr], &v[2 * rr + 1]);
            } else {
                for (int t = 0; t < 8; t++)
                    v[t] = _mm512_mask_i32gather_ps(zero, m[t], off, xp + rows[t >> 1] + (t & 1), 4);
            }
            __m512 s = _mm512_add_ps(_mm512_mul_ps(w[0], v[0]), _mm512_mul_ps(w[1], v[1]));
            for (int t = 2; t < 8; t++) s = _mm512_add_ps(s, _mm512_mul_ps(w[t], v[t]));
            _mm512_mask_storeu_ps(out + c * P + j, lanes, _mm512_maskz_mov_ps(any, s));
        }
        all &= far == 0;
        sb_gs2d_ok16(ok + j, r, (__mmask16)~far);
    }
    return all;
}

SB_AVX512 static int sb_gs3d_fused_back_f_avx512(const float* x, const float* gy, float* gx,
        float* gg, Py_ssize_t C, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P,
        Py_ssize_t n, const float* g, const Py_ssize_t* pts, Py_ssize_t p0,
        const sb_gs3d_k16* q, unsigned char* ok) {
    const sb_gs2d_k16* k = &q->k;
    const Py_ssize_t HW = H * W, S = D * HW;
    const __m512 zero = k->zero, one = k->one;
    const Py_ssize_t rows[4] = {0, W, HW, HW + W};
    const int deriv = gg != 0;
    float wa[8][16], ga[16], sa[3][16];
    int32_t oa[16];
    Py_ssize_t ia[16];
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        const __mmask16 lanes = sb_gs_lanes(r);
        __m512 ux, uy, uz, dx, dy, dz;
        __mmask16 far;
        sb_gs3d_coords16(q, g + 3 * j, r, &ux, &uy, &uz, &dx, &dy, &dz, &far);
        const __m512 fx = sb_gs2d_round16(ux, 0), fy = sb_gs2d_round16(uy, 0);
        const __m512 fz = sb_gs2d_round16(uz, 0);
        const __m512 ex = _mm512_add_ps(fx, one), ey = _mm512_add_ps(fy, one);
        const __m512 ez = _mm512_add_ps(fz, one);
        const __mmask16 in = sb_gs2d_in16(k, fx, k->fw) & sb_gs2d_in16(k, ex, k->fw)
                             & sb_gs2d_in16(k, fy, k->fh) & sb_gs2d_in16(k, ey, k->fh)
                             & sb_gs2d_in16(k, fz, q->fd) & sb_gs2d_in16(k, ez, q->fd)
                             & (__mmask16)~far & lanes;
        const __m512i off = sb_gs3d_off16(q, fx, fy, fz, in);
        _mm512_storeu_si512((void*)oa, off);
        const __m512i pidx = sb_gs_points16(pts, p0, j, r, ia);
        __m512 ts[6], w[8];
        sb_gs3d_corners16(one, ux, uy, uz, fx, fy, fz, ts, w);
        const __m512 tx = ts[0], ty = ts[1], tz = ts[2], sx1 = ts[3], sy1 = ts[4], sz1 = ts[5];
        for (int t = 0; t < 8; t++) _mm512_storeu_ps(wa[t], w[t]);
        __m512 ax = zero, ay = zero, az = zero;
        for (Py_ssize_t c = 0; c < C; c++) {
            const float* xp = x + c * S;
            const __m512 gv = sb_gs_grad16(gy + c * P, pts, pidx, p0, j, in);
            if (deriv) {  /* the interpolant's differences, as sb_gs3d_backward_f forms them */
                __m512 v[8];
                for (int rr = 0; rr < 4; rr++)
                    sb_gs2d_pairs16(k, xp + rows[rr], off, in, &v[2 * rr], &v[2 * rr + 1]);
                ax = _mm512_add_ps(ax, _mm512_mul_ps(gv, _mm512_add_ps(
                    _mm512_mul_ps(sz1, _mm512_add_ps(_mm512_mul_ps(sy1, _mm512_sub_ps(v[1], v[0])),
                                                     _mm512_mul_ps(ty, _mm512_sub_ps(v[3], v[2])))),
                    _mm512_mul_ps(tz, _mm512_add_ps(_mm512_mul_ps(sy1, _mm512_sub_ps(v[5], v[4])),
                                                    _mm512_mul_ps(ty, _mm512_sub_ps(v[7], v[6])))))));
                ay = _mm512_add_ps(ay, _mm512_mul_ps(gv, _mm512_add_ps(
                    _mm512_mul_ps(sz1, _mm512_add_ps(_mm512_mul_ps(sx1, _mm512_sub_ps(v[2], v[0])),
                                                     _mm512_mul_ps(tx, _mm512_sub_ps(v[3], v[1])))),
                    _mm512_mul_ps(tz, _mm512_add_ps(_mm512_mul_ps(sx1, _mm512_sub_ps(v[6], v[4])),
                                                    _mm512_mul_ps(tx, _mm512_sub_ps(v[7], v[5])))))));
                az = _mm512_add_ps(az, _mm512_mul_ps(gv, _mm512_add_ps(
                    _mm512_mul_ps(sy1, _mm512_add_ps(_mm512_mul_ps(sx1, _mm512_sub_ps(v[4], v[0])),
                                                     _mm512_mul_ps(tx, _mm512_sub_ps(v[5], v[1])))),
                    _mm512_mul_ps(ty, _mm512_add_ps(_mm512_mul_ps(sx1, _mm512_sub_ps(v[6], v[2])),
                                                    _mm512_mul_ps(tx, _mm512_sub_ps(v[7], v[3])))))));
            }
            if (gx) {  /* the push, point by point */
                float* gxp = gx + c * S;
                _mm512_storeu_ps(ga, gv);
                for (Py_ssize_t t = 0; t < r; t++) {
                    if (!((in >> t) & 1)) continue;
                    const Py_ssize_t o = oa[t];
                    for (int u = 0; u < 8; u++) {
                        const Py_ssize_t e = o + rows[u >> 1] + (u & 1);
                        gxp[e] = gxp[e] + wa[u][t] * ga[t];
                    }
                }
            }
        }
        if (deriv) {
            _mm512_storeu_ps(sa[0], _mm512_mul_ps(ax, dx));
            _mm512_storeu_ps(sa[1], _mm512_mul_ps(ay, dy));
            _mm512_storeu_ps(sa[2], _mm512_mul_ps(az, dz));
            for (Py_ssize_t t = 0; t < r; t++) {
                if (!((in >> t) & 1)) continue;
                for (int a = 0; a < 3; a++) gg[3 * ia[t] + a] = sa[a][t];
            }
        }
        all &= in == lanes;
        sb_gs2d_ok16(ok + j, r, in);
    }
    return all;
}

/* The push's keys of a sample's n points (3-D: by planes), as sb_gs2d_keys_f_avx512. */
SB_AVX512 static void sb_gs3d_keys_f_avx512(const float* g, Py_ssize_t n,
        const sb_gs3d_k16* q, const int32_t* slab_of_plane, Py_ssize_t* keys) {
    for (Py_ssize_t j = 0; j < n; j += 16) {
        const Py_ssize_t r = n - j < 16 ? n - j : 16;
        __m512 ux, uy, uz, dx, dy, dz;
        __mmask16 far;
        sb_gs3d_coords16(q, g + 3 * j, r, &ux, &uy, &uz, &dx, &dy, &dz, &far);
        sb_gs_keys16(&q->k, uz, q->fd, far, slab_of_plane, r, keys + j);
    }
}
#endif


#ifdef SB_GS_AVX2_RULES
/* sb_gs3d_coords_f_avx2: grid_block3d.h's sb_gs3d_coords_f on 8 points a vector (float32,
 * isa 1), on grid_avx2.h's rules: the same operations in the same order lane by lane,
 * so the same values.  The compiler's clone of that loop, over a stride-3 grid, stays
 * nearly scalar: 29 % of a trilinear forward of a 32^3 grid on the AMD EPYC family 23
 * VM (`perf record`, 1 thread). */
SB_GS2D_AVX2 static int sb_gs3d_coords_f_avx2(const float* g, Py_ssize_t n, Py_ssize_t D,
        Py_ssize_t H, Py_ssize_t W, const float* scale, float shift, int pad, float lo,
        const float* span, int32_t* off, float* wt, float* ts, float* ds,
        unsigned char* ok) {
    const Py_ssize_t B = SB_GS_BLOCK;
    const sb_gs_k8 kk = sb_gs_k8_make(D, H, W, scale, shift, pad, lo, span, 3);
    const sb_gs_k8* k = &kk;
    const __m256 one = k->one;
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 8) {
        const Py_ssize_t r = n - j < 8 ? n - j : 8;
        const __m256i m = sb_gs2d_lanes8(k, r);
        __m256 ux, uy, uz, dx, dy, dz, far;
        sb_gs3d_coords8_avx2(k, g + 3 * j, r, &ux, &uy, &uz, &dx, &dy, &dz, &far);
        __m256 fx = _mm256_round_ps(ux, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        __m256 fy = _mm256_round_ps(uy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        __m256 fz = _mm256_round_ps(uz, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        const __m256 ex = _mm256_add_ps(fx, one), ey = _mm256_add_ps(fy, one);
        const __m256 ez = _mm256_add_ps(fz, one);
        /* fx >= 0, ex < W, and so on, and not reflected more than once */
        const __m256 lox = _mm256_and_ps(_mm256_cmp_ps(fx, k->zero, _CMP_GE_OQ),
                                         _mm256_cmp_ps(ex, k->x.size, _CMP_LT_OQ));
        const __m256 loy = _mm256_and_ps(_mm256_cmp_ps(fy, k->zero, _CMP_GE_OQ),
                                         _mm256_cmp_ps(ey, k->y.size, _CMP_LT_OQ));
        const __m256 loz = _mm256_and_ps(_mm256_cmp_ps(fz, k->zero, _CMP_GE_OQ),
                                         _mm256_cmp_ps(ez, k->z.size, _CMP_LT_OQ));
        const __m256 in = _mm256_andnot_ps(far, _mm256_and_ps(_mm256_and_ps(lox, loy), loz));
        const __m256 tx = _mm256_sub_ps(ux, fx), ty = _mm256_sub_ps(uy, fy);
        const __m256 tz = _mm256_sub_ps(uz, fz);
        fx = _mm256_and_ps(in, fx);
        fy = _mm256_and_ps(in, fy);
        fz = _mm256_and_ps(in, fz);
        const __m256i zy = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(fz), k->vh),
                                            _mm256_cvttps_epi32(fy));
        const __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(zy, k->vw), _mm256_cvttps_epi32(fx));
        if (r == 8)
            _mm256_storeu_si256((__m256i*)(off + j), o);
        else
            _mm256_maskstore_epi32((int*)(off + j), m, o);
        all &= ((_mm256_movemask_ps(in) | (0xff << r)) & 0xff) == 0xff;
        sb_gs2d_ok8(ok + j, r, in);
        /* the corner weights, in the loop's order of products */
        const __m256 sx = _mm256_sub_ps(one, tx), sy = _mm256_sub_ps(one, ty);
        const __m256 sz = _mm256_sub_ps(one, tz);
        const __m256 zy0 = _mm256_mul_ps(sz, sy), zy1 = _mm256_mul_ps(sz, ty);
        const __m256 zy2 = _mm256_mul_ps(tz, sy), zy3 = _mm256_mul_ps(tz, ty);
        sb_gs2d_store8(wt + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy0, sx)));
        sb_gs2d_store8(wt + B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy0, tx)));
        sb_gs2d_store8(wt + 2 * B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy1, sx)));
        sb_gs2d_store8(wt + 3 * B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy1, tx)));
        sb_gs2d_store8(wt + 4 * B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy2, sx)));
        sb_gs2d_store8(wt + 5 * B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy2, tx)));
        sb_gs2d_store8(wt + 6 * B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy3, sx)));
        sb_gs2d_store8(wt + 7 * B + j, r, m, _mm256_and_ps(in, _mm256_mul_ps(zy3, tx)));
        sb_gs2d_store8(ts + j, r, m, tx);
        sb_gs2d_store8(ts + B + j, r, m, ty);
        sb_gs2d_store8(ts + 2 * B + j, r, m, tz);
        sb_gs2d_store8(ds + j, r, m, dx);
        sb_gs2d_store8(ds + B + j, r, m, dy);
        sb_gs2d_store8(ds + 2 * B + j, r, m, dz);
    }
    return all;
}
#endif

#ifdef SB_GS_AVX2_RULES
/* sb_gs3d_gather_f_avx2: grid_block3d.h's trilinear gather (float32, isa 1) on 8 points a
 * vector, the 8 taps of each point as two planes of grid_block2d.h's
 * sb_gs2d_taps8_f_avx2 (64-bit loads; the compiler's clone of the loop gathers, and
 * gathers are slow on most AVX2-only cores), the loop's sums in its order. */
SB_GS2D_AVX2 static void sb_gs3d_gather_f_avx2(const float* x, Py_ssize_t C, Py_ssize_t S,
        Py_ssize_t H, Py_ssize_t W, float* out, Py_ssize_t P, Py_ssize_t n,
        const int32_t* off, const float* wt) {
    const Py_ssize_t B = SB_GS_BLOCK, HW = H * W;
    const Py_ssize_t n8 = n & ~(Py_ssize_t)7;
    for (Py_ssize_t c = 0; c < C; c++) {
        const float* xp = x + c * S;
        float* op = out + c * P;
        for (Py_ssize_t j = 0; j < n8; j += 8) {
            __m256 q[8];
            sb_gs2d_taps8_f_avx2(xp, W, off + j, &q[0], &q[1], &q[2], &q[3]);
            sb_gs2d_taps8_f_avx2(xp + HW, W, off + j, &q[4], &q[5], &q[6], &q[7]);
            __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(wt + j), q[0]),
                                     _mm256_mul_ps(_mm256_loadu_ps(wt + B + j), q[1]));
            for (int k = 2; k < 8; k++)
                v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_loadu_ps(wt + k * B + j), q[k]));
            _mm256_storeu_ps(op + j, v);
        }
        if (n8 < n)  /* the last points by the loop, one channel at a time */
            sb_gs3d_gather_f(xp, 1, S, H, W, op + n8, P, n - n8, 0, off + n8, wt + n8);
    }
}
#endif

#ifdef SB_GS_AVX2_RULES
/* sb_gs3d_backward_f_avx2: grid_block3d.h's sb_gs3d_backward_f (float32, isa 1) with the
 * trilinear derivative sums on 8 points a vector, the taps as in sb_gs3d_gather_f_avx2,
 * the loop's operations in its order; the push by the loop (it runs first: the push
 * writes gx, the sums acc, so the order between them does not matter). */
SB_GS2D_AVX2 static void sb_gs3d_backward_f_avx2(const float* x, const float* gy, float* gx,
        float* acc, Py_ssize_t C, Py_ssize_t S, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P,
        Py_ssize_t n, const Py_ssize_t* pts, int deriv, const int32_t* off,
        const float* wt, const float* ts, const unsigned char* ok) {
    const Py_ssize_t B = SB_GS_BLOCK, HW = H * W;
    /* the push, and acc zeroed */
    sb_gs3d_backward_f(x, gy, gx, acc, C, S, H, W, P, n, pts, 0, off, wt, ts, ok);
    if (!deriv)
        return;
    const Py_ssize_t n8 = n & ~(Py_ssize_t)7;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (Py_ssize_t c = 0; c < C; c++) {
        const float* xp = x + c * S;
        const float* gyp = gy + c * P;
        for (Py_ssize_t j = 0; j < n8; j += 8) {
            __m256 q[8];
            sb_gs2d_taps8_f_avx2(xp, W, off + j, &q[0], &q[1], &q[2], &q[3]);
            sb_gs2d_taps8_f_avx2(xp + HW, W, off + j, &q[4], &q[5], &q[6], &q[7]);
            const Py_ssize_t* pj = pts + j;
            const __m256 g = _mm256_setr_ps(gyp[pj[0]], gyp[pj[1]], gyp[pj[2]], gyp[pj[3]],
                                            gyp[pj[4]], gyp[pj[5]], gyp[pj[6]], gyp[pj[7]]);
            const __m256 tx = _mm256_loadu_ps(ts + j), ty = _mm256_loadu_ps(ts + B + j);
            const __m256 tz = _mm256_loadu_ps(ts + 2 * B + j);
            const __m256 sx = _mm256_sub_ps(one, tx), sy = _mm256_sub_ps(one, ty);
            const __m256 sz = _mm256_sub_ps(one, tz);
#define SB_LERP2(s, t, a, b, c, d) \
    _mm256_add_ps(_mm256_mul_ps(s, _mm256_sub_ps(a, b)), _mm256_mul_ps(t, _mm256_sub_ps(c, d)))
            /* d/dx: (1 - tz) ((1 - ty) (v1 - v0) + ty (v3 - v2)) + tz (...(v5 - v4)...(v7 - v6)) */
            const __m256 vx = _mm256_add_ps(
                _mm256_mul_ps(sz, SB_LERP2(sy, ty, q[1], q[0], q[3], q[2])),
                _mm256_mul_ps(tz, SB_LERP2(sy, ty, q[5], q[4], q[7], q[6])));
            const __m256 vy = _mm256_add_ps(
                _mm256_mul_ps(sz, SB_LERP2(sx, tx, q[2], q[0], q[3], q[1])),
                _mm256_mul_ps(tz, SB_LERP2(sx, tx, q[6], q[4], q[7], q[5])));
            const __m256 vz = _mm256_add_ps(
                _mm256_mul_ps(sy, SB_LERP2(sx, tx, q[4], q[0], q[5], q[1])),
                _mm256_mul_ps(ty, SB_LERP2(sx, tx, q[6], q[2], q[7], q[3])));
#undef SB_LERP2
            float* ax = acc + j;
            _mm256_storeu_ps(ax, _mm256_add_ps(_mm256_loadu_ps(ax), _mm256_mul_ps(g, vx)));
            _mm256_storeu_ps(ax + B, _mm256_add_ps(_mm256_loadu_ps(ax + B), _mm256_mul_ps(g, vy)));
            _mm256_storeu_ps(ax + 2 * B, _mm256_add_ps(_mm256_loadu_ps(ax + 2 * B),
                                                       _mm256_mul_ps(g, vz)));
        }
    }
    if (n8 < n) {  /* the last points' sums by the loop, from zero as in place */
        float tail[3 * SB_GS_BLOCK];
        sb_gs3d_backward_f(x, gy, NULL, tail, C, S, H, W, P, n - n8, pts + n8, 1, off + n8,
                           wt + n8, ts + n8, ok + n8);
        for (int a = 0; a < 3; a++)
            for (Py_ssize_t j = 0; j < n - n8; j++) acc[a * B + n8 + j] = tail[a * B + j];
    }
}
#endif

/* The 3-D backward's sums and push: sb_gs3d_backward_f_avx2 where isa >= 1 on an x86-64
 * build, else grid_block3d.h's loop (the same values). */
static void sb_gs3d_backward_isa_f(int isa, const float* x, const float* gy, float* gx,
        float* acc, Py_ssize_t C, Py_ssize_t S, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P,
        Py_ssize_t n, const Py_ssize_t* pts, int deriv, const int32_t* off,
        const float* wt, const float* ts, const unsigned char* ok) {
    SB_GS2D_IF_X86(
    if (isa >= 1) {
        sb_gs3d_backward_f_avx2(x, gy, gx, acc, C, S, H, W, P, n, pts, deriv, off, wt, ts, ok);
        return;
    })
    sb_gs3d_backward_f(x, gy, gx, acc, C, S, H, W, P, n, pts, deriv, off, wt, ts, ok);
}

/* The 3-D gather: trilinear by sb_gs3d_gather_f_avx2 where isa >= 1 on an x86-64 build,
 * else (and nearest) grid_block3d.h's loop (the same values). */
static void sb_gs3d_gather_isa_f(int isa, const float* x, Py_ssize_t C, Py_ssize_t S,
        Py_ssize_t H, Py_ssize_t W, float* out, Py_ssize_t P, Py_ssize_t n, int nearest,
        const int32_t* off, const float* wt) {
    SB_GS2D_IF_X86(
    if (isa >= 1 && !nearest) {
        sb_gs3d_gather_f_avx2(x, C, S, H, W, out, P, n, off, wt);
        return;
    })
    sb_gs3d_gather_f(x, C, S, H, W, out, P, n, nearest, off, wt);
}

/* The 3-D coordinate pass: trilinear by sb_gs3d_coords_f_avx2 where isa >= 1 on an x86-64
 * build, else (and nearest) grid_block3d.h's loop (the same values). */
static int sb_gs3d_coords_isa_f(int isa, const float* g, Py_ssize_t n, Py_ssize_t D,
        Py_ssize_t H, Py_ssize_t W, const float* scale, float shift, int pad, float lo,
        const float* span, int nearest, int32_t* off, float* wt, float* ts, float* ds,
        unsigned char* ok) {
    SB_GS2D_IF_X86(
    if (isa >= 1 && !nearest)
        return sb_gs3d_coords_f_avx2(g, n, D, H, W, scale, shift, pad, lo, span, off, wt, ts,
                                     ds, ok);)
    return sb_gs3d_coords_f(g, n, D, H, W, scale, shift, pad, lo, span, nearest, off, wt, ts,
                            ds, ok);
}

static int sb_gs3d_keys_f(int isa, const float* g, Py_ssize_t n, Py_ssize_t D, Py_ssize_t H,
        Py_ssize_t W, int pad, const float* scale, float shift, float lo,
        const float* span, const int32_t* slab_of_plane, Py_ssize_t* keys) {
    SB_GS2D_IF_X86(
    if (isa == 1) {
        const sb_gs_k8 k = sb_gs_k8_make(D, H, W, scale, shift, pad, lo, span, 3);
        sb_gs_keys_f_avx2(3, g, n, &k, slab_of_plane, keys);
        return 1;
    }
    if (isa == 2) {
        const sb_gs3d_k16 q = sb_gs3d_k16_make(D, H, W, scale, shift, pad, lo, span);
        sb_gs3d_keys_f_avx512(g, n, &q, slab_of_plane, keys);
        return 1;
    })
    return 0;
}

static int sb_gs3d_fused_f(int isa, const float* x, const float* g, float* out, Py_ssize_t C,
        Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n, int nearest,
        int pad, const float* scale, float shift, float lo, const float* span,
        unsigned char* ok, int* all) {
    SB_GS2D_IF_X86(
    if (isa >= 1 && nearest) {
        const sb_gs_k8 k = sb_gs_k8_make(D, H, W, scale, shift, pad, lo, span, 3);
        *all = sb_gs_nearest_f_avx2(3, x, g, out, C, D * H * W, P, n, &k, ok);
        return 1;
    }
    if (isa == 2) {
        const sb_gs3d_k16 q = sb_gs3d_k16_make(D, H, W, scale, shift, pad, lo, span);
        *all = sb_gs3d_fused_f_avx512(x, g, out, C, D, H, W, P, n, &q, ok);
        return 1;
    })
    return 0;
}

static int sb_gs3d_fused_back_f(int isa, const float* x, const float* gy, float* gx, float* gg,
        Py_ssize_t C, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,
        const float* g, const Py_ssize_t* pts, Py_ssize_t p0, int pad,
        const float* scale, float shift, float lo, const float* span, unsigned char* ok,
        int* all) {
    SB_GS2D_IF_X86(
    if (isa == 2) {
        const sb_gs3d_k16 q = sb_gs3d_k16_make(D, H, W, scale, shift, pad, lo, span);
        *all = sb_gs3d_fused_back_f_avx512(x, gy, gx, gg, C, D, H, W, P, n, g, pts, p0, &q,
                                           ok);
        return 1;
    })
    return 0;
}
#endif
