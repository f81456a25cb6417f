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
 * sb_gs2d_gather_*: out[c, j] = sum of weight * x[c, tap] (nearest: x[c, off]). */
#ifndef SANDBOX_GRID_BLOCK2D_H
#define SANDBOX_GRID_BLOCK2D_H
#include <math.h>
#include <stdint.h>
#include "simd_clones.h"

#define SB_GS2D(T, S, FLOOR, RINT)                                                          \
SB_CLONES static int sb_gs2d_coords_##S(const T* restrict g, Py_ssize_t n, Py_ssize_t H,    \
        Py_ssize_t W, T scale_x, T scale_y, T shift, int pad, T lo, T span_x, T span_y,     \
        int nearest,                                                                        \
        int32_t* restrict off, T* restrict w0, T* restrict w1, T* restrict w2,              \
        T* restrict w3, unsigned char* restrict ok) {                                       \
    int all = 1;                                                                            \
    const T hx = (T)(W - 1), hy = (T)(H - 1), fw = (T)W, fh = (T)H;                         \
    for (Py_ssize_t j = 0; j < n; j++) {                                                    \
        T ux = (g[2 * j] + 1) * scale_x;                                                    \
        T uy = (g[2 * j + 1] + 1) * scale_y;                                                \
        ux = ux - shift;                                                                    \
        uy = uy - shift;                                                                    \
        int far = 0;                                                                        \
        if (pad == 2) { /* reflection: the unflipped and once-flipped cases, as _reflect */ \
            T vx = ux - lo, vy = uy - lo;                                                   \
            vx = vx < 0 ? -vx : vx;                                                         \
            vy = vy < 0 ? -vy : vy;                                                         \
            far = (vx >= 2 * span_x) | (vy >= 2 * span_y);                                  \
            ux = vx < span_x ? vx + lo : (span_x - (vx - span_x)) + lo;                     \
            uy = vy < span_y ? vy + lo : (span_y - (vy - span_y)) + lo;                     \
        }                                                                                   \
        if (pad) { /* border and reflection clip */                                         \
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
}

SB_GS2D(float, f, floorf, rintf)
SB_GS2D(double, d, floor, rint)
#endif
