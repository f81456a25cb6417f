/* The Winograd weight transform, U = G w G^T, of runs of 3x3 kernels, float and double:
 * F(2x2, 3x3) (16 points) and F(4x4, 3x3) (36 points).  One home for the weight
 * transform of _winograd_weights.pyx (its prange over runs) and of the convolutions in
 * one OpenMP region (wino_fused.h, which transform the weights in the region before the
 * chunks), so both give the same bits.
 *
 * A run is `count` kernels w + j*step (9 taps each, row-major), transformed 64 at a time:
 * their taps gathered into nine contiguous planes (so the arithmetic vectorises across
 * kernels: sb_w2_wt / sb_w4_wt in wino2_rows.h / wino4_rows.h), transformed into a local
 * block, and the output rows copied out as contiguous runs u[xi * su + j] (16 or 36
 * single-float streams su apart alias in the cache when su is a multiple of 4 KiB:
 * measured 11.8 ms instead of 0.6 ms for 128x384 kernels).  With flip, the transforms
 * of the flipped kernels w[2-k, 2-l] (the input gradient's): for F(2x2) a permutation of
 * the 16 points (G J = P G, J reversing the taps, P swapping rows 0 and 3), for F(4x4)
 * the taps gathered in reverse. */
#ifndef SANDBOX_WINO_WEIGHTS_H
#define SANDBOX_WINO_WEIGHTS_H

#include <stddef.h>
#include <string.h>

#include "wino2_rows.h"
#include "wino4_rows.h"

/* The point of the flipped kernel's F(2x2) transform that holds point xi of the
 * kernel's: G (J a J) G^T = P (G a G^T) P^T. */
static inline int sb_w2_flip_point(int xi)
{
    int i = xi / 4, j = xi % 4;
    i = i == 0 || i == 3 ? 3 - i : i;
    j = j == 0 || j == 3 ? 3 - j : j;
    return 4 * i + j;
}

#define SB_WINO_WEIGHTS(T, S)                                                          \
static void sb_w2_transform_run_##S(const T *w, ptrdiff_t step, ptrdiff_t count, int flip, \
                                    T *u, ptrdiff_t su)                                 \
{                                                                                       \
    T taps[9 * 64], blk[16 * 64];                                                       \
    for (ptrdiff_t j0 = 0; j0 < count; j0 += 64) {                                      \
        const ptrdiff_t nb = count - j0 < 64 ? count - j0 : 64;                         \
        for (ptrdiff_t j = 0; j < nb; j++)                                              \
            for (int t = 0; t < 9; t++)                                                 \
                taps[t * 64 + j] = w[(j0 + j) * step + t];                              \
        sb_w2_wt_##S(taps, blk, nb);                                                    \
        for (int xi = 0; xi < 16; xi++)                                                 \
            memcpy(u + (ptrdiff_t)(flip ? sb_w2_flip_point(xi) : xi) * su + j0,         \
                   blk + xi * 64, (size_t)nb * sizeof(T));                              \
    }                                                                                   \
}                                                                                       \
                                                                                        \
static void sb_w4_transform_run_##S(const T *w, ptrdiff_t step, ptrdiff_t count, int flip, \
                                    T *u, ptrdiff_t su)                                 \
{                                                                                       \
    T taps[9 * 64], blk[36 * 64];                                                       \
    for (ptrdiff_t j0 = 0; j0 < count; j0 += 64) {                                      \
        const ptrdiff_t nb = count - j0 < 64 ? count - j0 : 64;                         \
        for (ptrdiff_t j = 0; j < nb; j++)                                              \
            for (int t = 0; t < 9; t++)                                                 \
                taps[t * 64 + j] = w[(j0 + j) * step + (flip ? 8 - t : t)];             \
        sb_w4_wt_##S(taps, blk, nb);                                                    \
        for (int xi = 0; xi < 36; xi++)                                                 \
            memcpy(u + (ptrdiff_t)xi * su + j0, blk + xi * 64, (size_t)nb * sizeof(T)); \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* Run k of the transform of the weights w (O x C x 3 x 3, contiguous) into U (points su \
 * apart, rows sr apart): with c_major, the kernels w[:, k] into U[:, k, :] (U stored    \
 * (P, C, O), k < C); else the kernels w[k, :] into U[:, k, :] ((P, O, C), k < O). */   \
static inline void sb_weight_run_##S(const T *w, ptrdiff_t O, ptrdiff_t C, int tile,    \
                                     int flip, int c_major, ptrdiff_t k, T *u,           \
                                     ptrdiff_t su, ptrdiff_t sr)                         \
{                                                                                       \
    const T *wk = c_major ? w + 9 * k : w + 9 * C * k;                                  \
    T *uk = u + sr * k;                                                                 \
    if (tile == 4)                                                                      \
        sb_w4_transform_run_##S(wk, c_major ? 9 * C : 9, c_major ? O : C, flip, uk, su); \
    else                                                                                \
        sb_w2_transform_run_##S(wk, c_major ? 9 * C : 9, c_major ? O : C, flip, uk, su); \
}

SB_WINO_WEIGHTS(float, f)
SB_WINO_WEIGHTS(double, d)

#endif
