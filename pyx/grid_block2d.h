/* Blocked 2-D grid-sampling forward for nearest and bilinear, every padding
 * (pyx/_grid_sample.pyx): the per-point rules of _coord/_reflect/_fast_forward,
 * written as branch-free loops over a block of points so that the compiler
 * vectorises the coordinate pass (an AVX2 clone picked at load time, SB_CLONES),
 * then one gather loop per channel with contiguous output writes.
 *
 * sb_gs2d_coords_*: for n points of the grid (x, y pairs) computes the flat offset
 * of the first tap (int32: the caller guarantees H*W < 2^31) and the 4 bilinear
 * weights, and ok[j] = all taps inside the input.  Reflection handles the points
 * reflected at most once per axis.  Points that are not ok (a tap outside, or
 * reflected more than once) get offset 0 and weight 0, the caller recomputes them
 * on the general path, and the function returns whether every point was ok.  Same
 * operations in the same order as the scalar path, so results are identical.
 * sb_gs2d_gather_*: out[c, j] = sum of weight * x[c, tap] (nearest: x[c, off]).
 * sb_gs2d_backward_*: bilinear, for the ok points pts[0..n) (indices into the sample's
 * P points), channel by channel: the interpolant's x and y differences times grad_y
 * into ax, ay (deriv), and the push into gx (unless NULL).  The nearest push is
 * grid_nearest.h's. */
#ifndef SANDBOX_GRID_BLOCK2D_H
#define SANDBOX_GRID_BLOCK2D_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "simd_clones.h"
#include "grid_block3d.h"  /* SB_GS_BLOCK */
#include "grid_avx2.h"  /* the AVX2 coordinate rules */

#define SB_GS2D(T, S, FLOOR, RINT)                                                          \
SB_CLONES static int sb_gs2d_coords_##S(const T* restrict g, Py_ssize_t n, Py_ssize_t H,    \
        Py_ssize_t W, T scale_x, T scale_y, T shift, int pad, T lo, T span_x, T span_y,     \
        int nearest, int32_t* restrict off, T* restrict w0, T* restrict w1,                 \
        T* restrict w2, T* restrict w3, T* restrict txs, T* restrict tys, T* restrict dxs,  \
        T* restrict dys, unsigned char* restrict ok) {                                      \
    int all = 1;                                                                            \
    const T hx = (T)(W - 1), hy = (T)(H - 1), fw = (T)W, fh = (T)H;                         \
    for (Py_ssize_t j = 0; j < n; j++) {                                                    \
        T ux = (g[2 * j] + 1) * scale_x;                                                    \
        T uy = (g[2 * j + 1] + 1) * scale_y;                                                \
        ux = ux - shift;                                                                    \
        uy = uy - shift;                                                                    \
        int far = 0;                                                                        \
        T sgx = 1, sgy = 1, dx = scale_x, dy = scale_y;                                     \
        if (pad == 2) { /* reflection: the unflipped and once-flipped cases, as _reflect */ \
            T vx = ux - lo, vy = uy - lo;                                                   \
            sgx = vx < 0 ? -1 : 1;                                                          \
            sgy = vy < 0 ? -1 : 1;                                                          \
            vx = vx < 0 ? -vx : vx;                                                         \
            vy = vy < 0 ? -vy : vy;                                                         \
            far = (vx >= 2 * span_x) | (vy >= 2 * span_y);                                  \
            sgx = vx < span_x ? sgx : -sgx;                                                 \
            sgy = vy < span_y ? sgy : -sgy;                                                 \
            ux = vx < span_x ? vx + lo : (span_x - (vx - span_x)) + lo;                     \
            uy = vy < span_y ? vy + lo : (span_y - (vy - span_y)) + lo;                     \
        }                                                                                   \
        if (pad) { /* border and reflection clip; the derivative is 0 on the bounds */      \
            dx = (ux > 0) & (ux < hx) ? sgx * scale_x : 0;                                  \
            dy = (uy > 0) & (uy < hy) ? sgy * scale_y : 0;                                  \
            ux = ux > 0 ? (ux >= hx ? hx : ux) : 0;                                         \
            uy = uy > 0 ? (uy >= hy ? hy : uy) : 0;                                         \
        }                                                                                   \
        T fx = nearest ? RINT(ux) : FLOOR(ux);                                              \
        T fy = nearest ? RINT(uy) : FLOOR(uy);                                              \
        T ex = nearest ? fx : fx + 1, ey = nearest ? fy : fy + 1;                           \
        int inside = (fx >= 0) & (ex < fw) & (fy >= 0) & (ey < fh) & !far;                  \
        T tx = ux - fx, ty = uy - fy;                                                       \
        fx = inside ? fx : 0;                                                               \
        fy = inside ? fy : 0;                                                               \
        off[j] = (int32_t)fy * (int32_t)W + (int32_t)fx;                                    \
        w0[j] = inside ? (1 - ty) * (1 - tx) : 0;                                           \
        w1[j] = inside ? (1 - ty) * tx : 0;                                                 \
        w2[j] = inside ? ty * (1 - tx) : 0;                                                 \
        w3[j] = inside ? ty * tx : 0;                                                       \
        txs[j] = tx;                                                                        \
        tys[j] = ty;                                                                        \
        dxs[j] = dx;                                                                        \
        dys[j] = dy;                                                                        \
        ok[j] = (unsigned char)inside;                                                      \
        all &= inside;                                                                      \
    }                                                                                       \
    return all;                                                                             \
}                                                                                           \
SB_CLONES static void sb_gs2d_gather_##S(const T* restrict x, Py_ssize_t C, Py_ssize_t HW, \
        Py_ssize_t W, T* restrict out, Py_ssize_t P, Py_ssize_t n, int nearest,             \
        const int32_t* restrict off, const T* restrict w0, const T* restrict w1,            \
        const T* restrict w2, const T* restrict w3) {                                       \
    for (Py_ssize_t c = 0; c < C; c++) {                                                    \
        const T* restrict xp = x + c * HW;                                                  \
        T* restrict op = out + c * P;                                                       \
        if (nearest) {                                                                      \
            for (Py_ssize_t j = 0; j < n; j++) op[j] = xp[off[j]];                          \
        } else {                                                                            \
            for (Py_ssize_t j = 0; j < n; j++) {                                            \
                const T* restrict q = xp + off[j];                                          \
                op[j] = ((w0[j] * q[0] + w1[j] * q[1]) + w2[j] * q[W]) + w3[j] * q[W + 1];  \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
/* The push of the ok points, point by point and, for each point, channel by channel:  \
 * neighbouring points share taps, so within one channel each point's read-modify-writes \
 * wait for the previous point's stores; the channels' chains are independent, and       \
 * running them side by side hides that latency (measured on a 128^2, 4-channel block   \
 * of the bench's warp, AMD EPYC family 23: 340 -> 185 us, C harness).  Every value     \
 * still sums its points' contributions in point order, as before.  gy is read at       \
 * pts[j] of each channel (stride P), gx planes are HW apart. */                         \
SB_CLONES static void sb_gs2d_push_##S(const T* restrict gy, T* gx, Py_ssize_t C,           \
        Py_ssize_t HW, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,                            \
        const Py_ssize_t* restrict pts, const int32_t* restrict off,                        \
        const T* restrict w0, const T* restrict w1, const T* restrict w2,                   \
        const T* restrict w3, const unsigned char* restrict ok) {                           \
    for (Py_ssize_t j = 0; j < n; j++) {                                                    \
        if (!ok[j]) continue;                                                               \
        const T* gq = gy + pts[j];                                                          \
        T* gp = gx + off[j];                                                                \
        const T a0 = w0[j], a1 = w1[j], a2 = w2[j], a3 = w3[j];                             \
        for (Py_ssize_t c = 0; c < C; c++) {                                                \
            T* q = gp + c * HW;                                                             \
            const T g = gq[c * P];                                                          \
            q[0] = q[0] + a0 * g;                                                           \
            q[1] = q[1] + a1 * g;                                                           \
            q[W] = q[W] + a2 * g;                                                           \
            q[W + 1] = q[W + 1] + a3 * g;                                                   \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
SB_CLONES static void sb_gs2d_backward_##S(const T* restrict x, const T* restrict gy,       \
        T* gx, T* restrict ax, T* restrict ay, Py_ssize_t C, Py_ssize_t HW, Py_ssize_t W,   \
        Py_ssize_t P, Py_ssize_t n, const Py_ssize_t* restrict pts, int deriv,              \
        const int32_t* restrict off, const T* restrict w0, const T* restrict w1,            \
        const T* restrict w2, const T* restrict w3, const T* restrict tx,                   \
        const T* restrict ty, const unsigned char* restrict ok) {                           \
    for (Py_ssize_t j = 0; j < n; j++) { ax[j] = 0; ay[j] = 0; }                            \
    if (deriv) {                                                                            \
        for (Py_ssize_t c = 0; c < C; c++) {                                                \
            const T* restrict xp = x + c * HW;                                              \
            const T* restrict gyp = gy + c * P;                                             \
            for (Py_ssize_t j = 0; j < n; j++) {                                            \
                const T* restrict q = xp + off[j];                                          \
                T g = gyp[pts[j]];                                                          \
                ax[j] = ax[j] + g * ((1 - ty[j]) * (q[1] - q[0]) + ty[j] * (q[W + 1] - q[W])); \
                ay[j] = ay[j] + g * ((1 - tx[j]) * (q[W] - q[0]) + tx[j] * (q[W + 1] - q[1])); \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    if (gx) sb_gs2d_push_##S(gy, gx, C, HW, W, P, n, pts, off, w0, w1, w2, w3, ok);       \
}

SB_GS2D(float, f, floorf, rintf)
SB_GS2D(double, d, floor, rint)

/* sb_gs2d_coords_f_avx2: sb_gs2d_coords_f's bilinear pass on 8 points a vector, on
 * grid_avx2.h's rules (the same values bit for bit).  Nearest takes the loop where it
 * needs a coordinate pass at all: its AVX2 forward is grid_avx2.h's and its push
 * grid_nearest.h's. */
#ifdef SB_GS_AVX2_RULES

SB_GS2D_AVX2 static int sb_gs2d_coords_f_avx2(const float* restrict g, Py_ssize_t n,
        Py_ssize_t H, Py_ssize_t W, float scale_x, float scale_y, float shift, int pad,
        float lo, float span_x, float span_y, int32_t* restrict off,
        float* restrict w0, float* restrict w1, float* restrict w2, float* restrict w3,
        float* restrict txs, float* restrict tys, float* restrict dxs, float* restrict dys,
        unsigned char* restrict ok) {
    const float scale[2] = {scale_x, scale_y}, span[2] = {span_x, span_y};
    const sb_gs_k8 kk = sb_gs_k8_make(1, H, W, scale, shift, pad, lo, span, 2);
    const sb_gs_k8* k = &kk;
    const __m256 one = k->one;
    int all = 1;
    for (Py_ssize_t j = 0; j < n; j += 8) {
        const Py_ssize_t r = n - j < 8 ? n - j : 8;
        __m256 ux, uy, dx, dy, far;
        sb_gs2d_coords8_avx2(k, g + 2 * j, r, &ux, &uy, &dx, &dy, &far);
        __m256 fx = _mm256_round_ps(ux, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        __m256 fy = _mm256_round_ps(uy, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
        const __m256 ex = _mm256_add_ps(fx, one), ey = _mm256_add_ps(fy, one);
        __m256 inside = _mm256_and_ps(
            _mm256_and_ps(_mm256_cmp_ps(fx, k->zero, _CMP_GE_OQ),
                          _mm256_cmp_ps(ex, k->x.size, _CMP_LT_OQ)),
            _mm256_and_ps(_mm256_cmp_ps(fy, k->zero, _CMP_GE_OQ),
                          _mm256_cmp_ps(ey, k->y.size, _CMP_LT_OQ)));
        inside = _mm256_andnot_ps(far, inside);
        const __m256 tx = _mm256_sub_ps(ux, fx), ty = _mm256_sub_ps(uy, fy);
        fx = _mm256_and_ps(inside, fx);  /* inside ? fx : 0 */
        fy = _mm256_and_ps(inside, fy);
        const __m256i o = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_cvttps_epi32(fy), k->vw),
                                           _mm256_cvttps_epi32(fx));
        const __m256i m = sb_gs2d_lanes8(k, r);
        all &= ((_mm256_movemask_ps(inside) | (0xff << r)) & 0xff) == 0xff;
        sb_gs2d_ok8(ok + j, r, inside);
        if (r == 8)
            _mm256_storeu_si256((__m256i*)(off + j), o);
        else
            _mm256_maskstore_epi32((int*)(off + j), m, o);
        const __m256 sx1 = _mm256_sub_ps(one, tx), sy1 = _mm256_sub_ps(one, ty);
        sb_gs2d_store8(w0 + j, r, m, _mm256_and_ps(inside, _mm256_mul_ps(sy1, sx1)));
        sb_gs2d_store8(w1 + j, r, m, _mm256_and_ps(inside, _mm256_mul_ps(sy1, tx)));
        sb_gs2d_store8(w2 + j, r, m, _mm256_and_ps(inside, _mm256_mul_ps(ty, sx1)));
        sb_gs2d_store8(w3 + j, r, m, _mm256_and_ps(inside, _mm256_mul_ps(ty, tx)));
        sb_gs2d_store8(txs + j, r, m, tx);
        sb_gs2d_store8(tys + j, r, m, ty);
        sb_gs2d_store8(dxs + j, r, m, dx);
        sb_gs2d_store8(dys + j, r, m, dy);
    }
    return all;
}

/* sb_gs2d_taps8_f_avx2: the four taps of 8 points (offsets off[0..8)) as vectors of the
 * top-left, top-right, bottom-left and bottom-right values.  Each point's two taps of a
 * row are one 64-bit load; pairs of points share a 128-bit register, and two shuffles
 * split left from right.  Loads, not gathers: on the AMD EPYC family 23 (Zen 1) machine
 * of the 3 December 2026 session, the 4-channel bilinear gather of a 128^2 grid took
 * 67 us this way against 209 us with 64-bit gathers (C harness), and gathers are slow
 * on most AVX2-only cores (microcoded on AMD before Zen 4; Intel's microcode of 2023
 * against the GDS leak slowed them on the Skylake to Ice Lake cores). */
SB_GS2D_AVX2 static inline void sb_gs2d_taps8_f_avx2(const float* xp, Py_ssize_t W,
        const int32_t* off, __m256* q0, __m256* q1, __m256* q2, __m256* q3) {
    __m128 top[4], bottom[4];  /* points 2k and 2k + 1: (left, right, left, right) */
    for (int k = 0; k < 4; k++) {
        const float* a = xp + off[2 * k];
        const float* b = xp + off[2 * k + 1];
        top[k] = _mm_loadh_pi(_mm_castpd_ps(_mm_load_sd((const double*)a)), (const __m64*)b);
        bottom[k] = _mm_loadh_pi(_mm_castpd_ps(_mm_load_sd((const double*)(a + W))),
                                 (const __m64*)(b + W));
    }
    /* lanes of points (0 1 | 4 5) and (2 3 | 6 7); the shuffles give 0 1 2 3 | 4 5 6 7 */
    const __m256 t01 = _mm256_insertf128_ps(_mm256_castps128_ps256(top[0]), top[2], 1);
    const __m256 t23 = _mm256_insertf128_ps(_mm256_castps128_ps256(top[1]), top[3], 1);
    const __m256 b01 = _mm256_insertf128_ps(_mm256_castps128_ps256(bottom[0]), bottom[2], 1);
    const __m256 b23 = _mm256_insertf128_ps(_mm256_castps128_ps256(bottom[1]), bottom[3], 1);
    *q0 = _mm256_shuffle_ps(t01, t23, _MM_SHUFFLE(2, 0, 2, 0));
    *q1 = _mm256_shuffle_ps(t01, t23, _MM_SHUFFLE(3, 1, 3, 1));
    *q2 = _mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(2, 0, 2, 0));
    *q3 = _mm256_shuffle_ps(b01, b23, _MM_SHUFFLE(3, 1, 3, 1));
}

/* sb_gs2d_gather_f_avx2: sb_gs2d_gather_f's bilinear sums (isa >= 1) on 8 points a vector,
 * the taps by sb_gs2d_taps8_f_avx2, the loop's sums in its order.  The points that are not ok have offset 0 and weights 0, as there,
 * and the caller recomputes them. */
SB_GS2D_AVX2 static void sb_gs2d_gather_f_avx2(const float* restrict x, Py_ssize_t C,
        Py_ssize_t HW, Py_ssize_t W, float* restrict out, Py_ssize_t P, Py_ssize_t n,
        const int32_t* restrict off, const float* restrict w0,
        const float* restrict w1, const float* restrict w2, const float* restrict w3) {
    for (Py_ssize_t c = 0; c < C; c++) {
        const float* xp = x + c * HW;
        float* op = out + c * P;
        Py_ssize_t j = 0;
        for (; j + 8 <= n; j += 8) {
            __m256 q0, q1, q2, q3;
            sb_gs2d_taps8_f_avx2(xp, W, off + j, &q0, &q1, &q2, &q3);
            __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(w0 + j), q0),
                                     _mm256_mul_ps(_mm256_loadu_ps(w1 + j), q1));
            v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_loadu_ps(w2 + j), q2));
            v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_loadu_ps(w3 + j), q3));
            _mm256_storeu_ps(op + j, v);
        }
        for (; j < n; j++) {
            const float* q = xp + off[j];
            op[j] = ((w0[j] * q[0] + w1[j] * q[1]) + w2[j] * q[W]) + w3[j] * q[W + 1];
        }
    }
}

/* sb_gs2d_backward_f_avx2: sb_gs2d_backward_f (isa >= 1) with the bilinear derivative sums
 * on 8 points a vector, the taps by sb_gs2d_taps8_f_avx2 (the compiler's clone of that
 * loop gathers: 188 us against 88 us for a 4-channel 128^2 block on the family 23 machine,
 * C harness), the same operations in the same order; then the same push. */
SB_GS2D_AVX2 static void sb_gs2d_backward_f_avx2(const float* restrict x,
        const float* restrict gy, float* gx, float* restrict ax, float* restrict ay,
        Py_ssize_t C, Py_ssize_t HW, Py_ssize_t W, Py_ssize_t P, Py_ssize_t n,
        const Py_ssize_t* restrict pts, int deriv, const int32_t* restrict off,
        const float* restrict w0, const float* restrict w1, const float* restrict w2,
        const float* restrict w3, const float* restrict tx, const float* restrict ty,
        const unsigned char* restrict ok) {
    if (!deriv) {
        sb_gs2d_backward_f(x, gy, gx, ax, ay, C, HW, W, P, n, pts, deriv, off, w0, w1, w2, w3,
                           tx, ty, ok);
        return;
    }
    const __m256 one = _mm256_set1_ps(1.0f);
    for (Py_ssize_t j = 0; j < n; j++) { ax[j] = 0; ay[j] = 0; }
    for (Py_ssize_t c = 0; c < C; c++) {
        const float* xp = x + c * HW;
        const float* gyp = gy + c * P;
        Py_ssize_t j = 0;
        for (; j + 8 <= n; j += 8) {
            __m256 q0, q1, q2, q3;
            sb_gs2d_taps8_f_avx2(xp, W, off + j, &q0, &q1, &q2, &q3);
            const Py_ssize_t* pj = pts + j;
            const __m256 g = _mm256_setr_ps(gyp[pj[0]], gyp[pj[1]], gyp[pj[2]], gyp[pj[3]],
                                            gyp[pj[4]], gyp[pj[5]], gyp[pj[6]], gyp[pj[7]]);
            const __m256 fx = _mm256_loadu_ps(tx + j), fy = _mm256_loadu_ps(ty + j);
            /* (1 - ty) (q1 - q0) + ty (q3 - q2), and the same across the other axis */
            const __m256 vx = _mm256_add_ps(
                _mm256_mul_ps(_mm256_sub_ps(one, fy), _mm256_sub_ps(q1, q0)),
                _mm256_mul_ps(fy, _mm256_sub_ps(q3, q2)));
            const __m256 vy = _mm256_add_ps(
                _mm256_mul_ps(_mm256_sub_ps(one, fx), _mm256_sub_ps(q2, q0)),
                _mm256_mul_ps(fx, _mm256_sub_ps(q3, q1)));
            _mm256_storeu_ps(ax + j, _mm256_add_ps(_mm256_loadu_ps(ax + j), _mm256_mul_ps(g, vx)));
            _mm256_storeu_ps(ay + j, _mm256_add_ps(_mm256_loadu_ps(ay + j), _mm256_mul_ps(g, vy)));
        }
        for (; j < n; j++) {
            const float* q = xp + off[j];
            const float g = gyp[pts[j]];
            ax[j] = ax[j] + g * ((1 - ty[j]) * (q[1] - q[0]) + ty[j] * (q[W + 1] - q[W]));
            ay[j] = ay[j] + g * ((1 - tx[j]) * (q[W] - q[0]) + tx[j] * (q[W + 1] - q[1]));
        }
    }
    if (gx) sb_gs2d_push_f(gy, gx, C, HW, W, P, n, pts, off, w0, w1, w2, w3, ok);
}

/* 1 when this CPU runs sb_gs2d_coords_f_avx2 (AVX2), else 0. */
static int sb_gs2d_avx2_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? 1 : 0;
}
#else
/* the bilinear AVX2 passes are the loops with nearest = 0 */
#define sb_gs2d_coords_f_avx2(g, n, H, W, sx, sy, shift, pad, lo, spx, spy, ...) \
    sb_gs2d_coords_f(g, n, H, W, sx, sy, shift, pad, lo, spx, spy, 0, __VA_ARGS__)
#define sb_gs2d_gather_f_avx2(x, C, HW, W, out, P, n, ...) \
    sb_gs2d_gather_f(x, C, HW, W, out, P, n, 0, __VA_ARGS__)
#define sb_gs2d_backward_f_avx2 sb_gs2d_backward_f
static int sb_gs2d_avx2_available(void) { return 0; }
#endif
#endif
