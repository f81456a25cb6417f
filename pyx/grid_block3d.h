/* Blocked 3-D grid-sampling forward for nearest and trilinear and backward for
 * trilinear (the nearest push is grid_nearest.h's), every padding: the 3-D twin of
 * grid_block2d.h (same rules, same order of operations as
 * _coord/_reflect/_fast_forward/_fast_backward in pyx/_grid_sample.pyx).
 *
 * Scratch layout per block of SB_GS_BLOCK points: wt[k * SB_GS_BLOCK + j] is the
 * weight of corner k (k = 4 dz + 2 dy + dx) of point j, ts and ds hold tx, ty, tz
 * and du/dg of x, y, z the same way.  Points that are not ok (a tap outside, or
 * reflected more than once) get offset 0 and weight 0; the caller recomputes them. */
#ifndef SANDBOX_GRID_BLOCK3D_H
#define SANDBOX_GRID_BLOCK3D_H
#include <math.h>
#include <stdint.h>
#include "simd_clones.h"

#define SB_GS_BLOCK 256

#define SB_GS3D(T, S, FLOOR, RINT)                                                          \
static inline __attribute__((always_inline)) T sb_gs3d_pad_##S(T u, int pad, T lo, T span,  \
        T hi, T scale, T* d, int* far) {                                                    \
    T sg = 1;                                                                               \
    if (pad == 2) {                                                                         \
        T v = u - lo;                                                                       \
        sg = v < 0 ? -1 : 1;                                                                \
        v = v < 0 ? -v : v;                                                                 \
        *far |= v >= 2 * span;                                                              \
        sg = v < span ? sg : -sg;                                                           \
        u = v < span ? v + lo : (span - (v - span)) + lo;                                   \
    }                                                                                       \
    *d = scale;                                                                             \
    if (pad) {                                                                              \
        *d = (u > 0) & (u < hi) ? sg * scale : 0;                                           \
        u = u > 0 ? (u >= hi ? hi : u) : 0;                                                 \
    }                                                                                       \
    return u;                                                                               \
}                                                                                           \
SB_CLONES static int sb_gs3d_coords_##S(const T* restrict g, Py_ssize_t n, Py_ssize_t D,    \
        Py_ssize_t H, Py_ssize_t W, const T* restrict scale, T shift, int pad, T lo,        \
        const T* restrict span, int nearest, int32_t* restrict off, T* restrict wt,         \
        T* restrict ts, T* restrict ds, unsigned char* restrict ok) {                       \
    int all = 1;                                                                            \
    const Py_ssize_t B = SB_GS_BLOCK;                                                       \
    const T hx = (T)(W - 1), hy = (T)(H - 1), hz = (T)(D - 1);                              \
    const T fw = (T)W, fh = (T)H, fd = (T)D;                                                \
    for (Py_ssize_t j = 0; j < n; j++) {                                                    \
        int far = 0;                                                                        \
        T dx, dy, dz;                                                                       \
        T ux = (g[3 * j] + 1) * scale[0];                                                   \
        T uy = (g[3 * j + 1] + 1) * scale[1];                                               \
        T uz = (g[3 * j + 2] + 1) * scale[2];                                               \
        ux = sb_gs3d_pad_##S(ux - shift, pad, lo, span[0], hx, scale[0], &dx, &far);        \
        uy = sb_gs3d_pad_##S(uy - shift, pad, lo, span[1], hy, scale[1], &dy, &far);        \
        uz = sb_gs3d_pad_##S(uz - shift, pad, lo, span[2], hz, scale[2], &dz, &far);        \
        T fx = nearest ? RINT(ux) : FLOOR(ux);                                              \
        T fy = nearest ? RINT(uy) : FLOOR(uy);                                              \
        T fz = nearest ? RINT(uz) : FLOOR(uz);                                              \
        T ex = nearest ? fx : fx + 1, ey = nearest ? fy : fy + 1, ez = nearest ? fz : fz + 1; \
        int inside = (fx >= 0) & (ex < fw) & (fy >= 0) & (ey < fh) & (fz >= 0) & (ez < fd)  \
                     & !far;                                                                \
        T tx = ux - fx, ty = uy - fy, tz = uz - fz;                                         \
        fx = inside ? fx : 0;                                                               \
        fy = inside ? fy : 0;                                                               \
        fz = inside ? fz : 0;                                                               \
        off[j] = ((int32_t)fz * (int32_t)H + (int32_t)fy) * (int32_t)W + (int32_t)fx;       \
        wt[j] = inside ? ((1 - tz) * (1 - ty)) * (1 - tx) : 0;                              \
        wt[B + j] = inside ? ((1 - tz) * (1 - ty)) * tx : 0;                                \
        wt[2 * B + j] = inside ? ((1 - tz) * ty) * (1 - tx) : 0;                            \
        wt[3 * B + j] = inside ? ((1 - tz) * ty) * tx : 0;                                  \
        wt[4 * B + j] = inside ? (tz * (1 - ty)) * (1 - tx) : 0;                            \
        wt[5 * B + j] = inside ? (tz * (1 - ty)) * tx : 0;                                  \
        wt[6 * B + j] = inside ? (tz * ty) * (1 - tx) : 0;                                  \
        wt[7 * B + j] = inside ? (tz * ty) * tx : 0;                                        \
        ts[j] = tx;                                                                         \
        ts[B + j] = ty;                                                                     \
        ts[2 * B + j] = tz;                                                                 \
        ds[j] = dx;                                                                         \
        ds[B + j] = dy;                                                                     \
        ds[2 * B + j] = dz;                                                                 \
        ok[j] = (unsigned char)inside;                                                      \
        all &= inside;                                                                      \
    }                                                                                       \
    return all;                                                                             \
}                                                                                           \
SB_CLONES static void sb_gs3d_gather_##S(const T* restrict x, Py_ssize_t C, Py_ssize_t S_,  \
        Py_ssize_t H, Py_ssize_t W, T* restrict out, Py_ssize_t P, Py_ssize_t n,            \
        int nearest, const int32_t* restrict off, const T* restrict wt) {                   \
    const Py_ssize_t B = SB_GS_BLOCK, HW = H * W;                                           \
    for (Py_ssize_t c = 0; c < C; c++) {                                                    \
        const T* restrict xp = x + c * S_;                                                  \
        T* restrict op = out + c * P;                                                       \
        if (nearest) {                                                                      \
            for (Py_ssize_t j = 0; j < n; j++) op[j] = xp[off[j]];                          \
            continue;                                                                       \
        }                                                                                   \
        for (Py_ssize_t j = 0; j < n; j++) {                                                \
            const T* restrict q = xp + off[j];                                              \
            op[j] = (((((((wt[j] * q[0] + wt[B + j] * q[1]) + wt[2 * B + j] * q[W])         \
                         + wt[3 * B + j] * q[W + 1]) + wt[4 * B + j] * q[HW])               \
                       + wt[5 * B + j] * q[HW + 1]) + wt[6 * B + j] * q[HW + W])            \
                     + wt[7 * B + j] * q[HW + W + 1]);                                      \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
SB_CLONES static void sb_gs3d_backward_##S(const T* restrict x, const T* restrict gy,       \
        T* gx, T* restrict acc, Py_ssize_t C, Py_ssize_t S_, Py_ssize_t H, Py_ssize_t W,    \
        Py_ssize_t P, Py_ssize_t n, const Py_ssize_t* restrict pts, int deriv,              \
        const int32_t* restrict off, const T* restrict wt, const T* restrict ts,            \
        const unsigned char* restrict ok) {                                                 \
    const Py_ssize_t B = SB_GS_BLOCK, HW = H * W;                                           \
    for (Py_ssize_t j = 0; j < 3 * B; j++) acc[j] = 0;                                      \
    for (Py_ssize_t c = 0; c < C; c++) {                                                    \
        const T* restrict xp = x + c * S_;                                                  \
        const T* restrict gyp = gy + c * P;                                                 \
        if (deriv) {                                                                        \
            for (Py_ssize_t j = 0; j < n; j++) {                                            \
                const T* restrict q = xp + off[j];                                          \
                T g = gyp[pts[j]], tx = ts[j], ty = ts[B + j], tz = ts[2 * B + j];          \
                T v0 = q[0], v1 = q[1], v2 = q[W], v3 = q[W + 1];                           \
                T v4 = q[HW], v5 = q[HW + 1], v6 = q[HW + W], v7 = q[HW + W + 1];           \
                acc[j] = acc[j] + g * ((1 - tz) * ((1 - ty) * (v1 - v0) + ty * (v3 - v2))   \
                                       + tz * ((1 - ty) * (v5 - v4) + ty * (v7 - v6)));     \
                acc[B + j] = acc[B + j] + g * ((1 - tz) * ((1 - tx) * (v2 - v0)             \
                                                           + tx * (v3 - v1))                \
                                               + tz * ((1 - tx) * (v6 - v4) + tx * (v7 - v5))); \
                acc[2 * B + j] = acc[2 * B + j] + g * ((1 - ty) * ((1 - tx) * (v4 - v0)     \
                                                                   + tx * (v5 - v1))        \
                                                       + ty * ((1 - tx) * (v6 - v2)         \
                                                               + tx * (v7 - v3)));          \
            }                                                                               \
        }                                                                                   \
        if (gx) { /* the push, in point order (taps of different points may coincide) */    \
            T* gxp = gx + c * S_;                                                           \
            for (Py_ssize_t j = 0; j < n; j++) {                                            \
                if (!ok[j]) continue;                                                       \
                Py_ssize_t o = off[j];                                                      \
                T g = gyp[pts[j]];                                                          \
                gxp[o] = gxp[o] + wt[j] * g;                                                \
                gxp[o + 1] = gxp[o + 1] + wt[B + j] * g;                                    \
                gxp[o + W] = gxp[o + W] + wt[2 * B + j] * g;                                \
                gxp[o + W + 1] = gxp[o + W + 1] + wt[3 * B + j] * g;                        \
                gxp[o + HW] = gxp[o + HW] + wt[4 * B + j] * g;                              \
                gxp[o + HW + 1] = gxp[o + HW + 1] + wt[5 * B + j] * g;                      \
                gxp[o + HW + W] = gxp[o + HW + W] + wt[6 * B + j] * g;                      \
                gxp[o + HW + W + 1] = gxp[o + HW + W + 1] + wt[7 * B + j] * g;              \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

SB_GS3D(float, f, floorf, rintf)
SB_GS3D(double, d, floor, rint)
#endif
