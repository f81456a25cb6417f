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
 * sb_gs2d_backward_*: for the ok points pts[0..n) (indices into the sample's P
 * points), channel by channel: the interpolant's x and y differences times grad_y
 * into ax, ay (deriv), and the push into gx (unless NULL). */
#ifndef SANDBOX_GRID_BLOCK2D_H
#define SANDBOX_GRID_BLOCK2D_H
#include <math.h>
#include <stdint.h>
#include "simd_clones.h"

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
SB_CLONES static void sb_gs2d_backward_##S(const T* restrict x, const T* restrict gy,       \
        T* gx, T* restrict ax, T* restrict ay, Py_ssize_t C, Py_ssize_t HW, Py_ssize_t W,   \
        Py_ssize_t P, Py_ssize_t n, const Py_ssize_t* restrict pts, int nearest, int deriv, \
        const int32_t* restrict off, const T* restrict w0, const T* restrict w1,            \
        const T* restrict w2, const T* restrict w3, const T* restrict tx,                   \
        const T* restrict ty, const unsigned char* restrict ok) {                           \
    for (Py_ssize_t j = 0; j < n; j++) { ax[j] = 0; ay[j] = 0; }                            \
    for (Py_ssize_t c = 0; c < C; c++) {                                                    \
        const T* restrict xp = x + c * HW;                                                  \
        const T* restrict gyp = gy + c * P;                                                 \
        if (deriv && !nearest) {                                                            \
            for (Py_ssize_t j = 0; j < n; j++) {                                            \
                const T* restrict q = xp + off[j];                                          \
                T g = gyp[pts[j]];                                                          \
                ax[j] = ax[j] + g * ((1 - ty[j]) * (q[1] - q[0]) + ty[j] * (q[W + 1] - q[W])); \
                ay[j] = ay[j] + g * ((1 - tx[j]) * (q[W] - q[0]) + tx[j] * (q[W + 1] - q[1])); \
            }                                                                               \
        }                                                                                   \
        if (gx) { /* the push, in point order (taps of different points may coincide) */    \
            T* gxp = gx + c * HW;                                                           \
            for (Py_ssize_t j = 0; j < n; j++) {                                            \
                if (!ok[j]) continue;                                                       \
                Py_ssize_t o = off[j];                                                      \
                T g = gyp[pts[j]];                                                          \
                if (nearest) { gxp[o] = gxp[o] + g; continue; }                             \
                gxp[o] = gxp[o] + w0[j] * g;                                                \
                gxp[o + 1] = gxp[o + 1] + w1[j] * g;                                        \
                gxp[o + W] = gxp[o + W] + w2[j] * g;                                        \
                gxp[o + W + 1] = gxp[o + W + 1] + w3[j] * g;                                \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

SB_GS2D(float, f, floorf, rintf)
SB_GS2D(double, d, floor, rint)
#endif
