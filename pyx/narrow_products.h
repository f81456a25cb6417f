/* Products with a small side: Y (M, P) = A (M, K) @ X (K, P) where M or K is a few (a
 * 1x1 convolution's head of 1-7 classes, or its input gradient from them) and P is a
 * sample's pixels.  A BLAS or a register-tiled GEMM wastes most of its tile on such
 * shapes and runs on one thread; here each output row is built over a block of columns
 * in place, term by term: Y[i, p] = A[i,0] X[0,p] + A[i,1] X[1,p] + ... in k order, a
 * separate multiply and add each (the clones enable no FMA), so every element is the
 * same chain whatever block, piece or thread computes it.  X's rows of one block stay
 * in L1 while the M output rows of that block are built.
 *
 * sb_narrow_f / sb_narrow_d: columns [p0, p1) of one product; x and y rows of stride
 * xs and ys elements, A row-major (M, K). */
#ifndef SANDBOX_NARROW_PRODUCTS_H
#define SANDBOX_NARROW_PRODUCTS_H
#include <stddef.h>

#include "simd_clones.h"

#define SB_NARROW_BLOCK 512

/* the chain's terms four at a time: C adds left to right, so one statement of four terms
 * is the same chain as four statements of one, with a quarter of the loads and stores of
 * the output row */
#define SB_NARROW(T, S)                                                                  \
SB_CLONES static void sb_narrow_##S(const T *restrict a, int m, int k,                   \
                                    const T *restrict x, ptrdiff_t xs, T *restrict y,     \
                                    ptrdiff_t ys, ptrdiff_t p0, ptrdiff_t p1)            \
{                                                                                        \
    for (ptrdiff_t b = p0; b < p1; b += SB_NARROW_BLOCK) {                               \
        const ptrdiff_t len = p1 - b < SB_NARROW_BLOCK ? p1 - b : SB_NARROW_BLOCK;       \
        for (int i = 0; i < m; i++) {                                                    \
            T *restrict out = y + i * ys + b;                                            \
            const T *restrict ar = a + (ptrdiff_t)i * k;                                 \
            const T *restrict x0 = x + b;                                                \
            int kk = 1;                                                                  \
            if (k >= 4) {                                                                \
                const T *restrict x1 = x0 + xs, *restrict x2 = x1 + xs, *restrict x3 = x2 + xs; \
                for (ptrdiff_t j = 0; j < len; j++)                                      \
                    out[j] = ((ar[0] * x0[j] + ar[1] * x1[j]) + ar[2] * x2[j]) + ar[3] * x3[j]; \
                kk = 4;                                                                  \
            } else {                                                                     \
                for (ptrdiff_t j = 0; j < len; j++) out[j] = ar[0] * x0[j];              \
            }                                                                            \
            for (; kk + 4 <= k; kk += 4) {                                               \
                const T *restrict x4 = x0 + kk * xs, *restrict x5 = x4 + xs,             \
                        *restrict x6 = x5 + xs, *restrict x7 = x6 + xs;                  \
                const T a4 = ar[kk], a5 = ar[kk + 1], a6 = ar[kk + 2], a7 = ar[kk + 3];   \
                for (ptrdiff_t j = 0; j < len; j++)                                      \
                    out[j] = (((out[j] + a4 * x4[j]) + a5 * x5[j]) + a6 * x6[j]) + a7 * x7[j]; \
            }                                                                            \
            for (; kk < k; kk++) {                                                       \
                const T av = ar[kk];                                                     \
                const T *restrict xr = x0 + kk * xs;                                     \
                for (ptrdiff_t j = 0; j < len; j++) out[j] = out[j] + av * xr[j];        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}
SB_NARROW(float, f)
SB_NARROW(double, d)
#undef SB_NARROW
#endif
