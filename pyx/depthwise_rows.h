/* The stride-1 depthwise stencil (pyx/_depthwise.pyx) as correlations of zero-padded
 * volumes.
 *
 * With every stride 1, the forward, y[i] = sum over taps t of w[t] x[i + t d - p], and
 * the input gradient, gx[i] = sum over t of w[t] g[i + p - t d], both read a source
 * volume at fixed offsets from the output's position once the source sits in a
 * zero-padded box (sb_dw_place_*): out[i] = sum over t of w[t] box[i + off[t]], no
 * tap ever out of range, so a row is one loop over whole vectors (the tap-by-tap walk
 * had a call and a scalar tail for every tap of every row).  The weight gradient is
 * the dot of each gradient row with each tap's row of the input's box.  An output row
 * r is (z, y) = (r / Ho, r % Ho) of the output volume; its box row starts at
 * (z PH + y) PW.
 *
 * sb_dw_place_S: src (D, H, W) into the box dst (PD, PH, PW) at (ld, lh, lw) (a negative
 *               place crops the source); the other cells are left as they are: zero,
 *               as the caller allocated them (every volume of a call lands on the
 *               same cells).
 * sb_dw_corr_S: the rows of one output volume, out[r][i] = sum over t < ntaps, in
 *               order, of w[t] * row_r[off[t] + i], the first term added to +0 (the
 *               order and the zero of the walk): four rows at a time, a vector of each,
 *               their sums kept in registers over the taps; a row's last vector reads
 *               up to a vector past the row (the box has that slack) and stores only
 *               the lanes in the row.
 * sb_dw_dots_S: acc[t] += sum over the rows and columns of g * row_r[off[t] + i], for
 *               every tap t of one volume: in T, four rows at a time in four vectors
 *               of lanes, folded in a fixed tree and added to the double acc[t] (a
 *               volume's sum in T; the old walk summed in double).
 *
 * The vectors are gcc/clang vector extensions of 32 bytes (8 floats, 4 doubles): one
 * AVX register in the "avx2" clone, two SSE or NEON registers elsewhere; the module is
 * built with -ffp-contract=off, so every clone multiplies and adds apart and gives the
 * same bits. */
#ifndef SANDBOX_DEPTHWISE_ROWS_H
#define SANDBOX_DEPTHWISE_ROWS_H
#include <stdint.h>
#include <string.h>
#include "lane_sums.h"
#include "simd_clones.h"

/* the vectors and their lane masks: lane_sums.h's sb_lanes_S and sb_lane_bits_S */

/* the products of the vectors at g and x (type sb_lanes_S); the same with the lanes
 * outside the mask `keep` zeroed after the multiply (so an infinity read past a row
 * gives no NaN) */
#define SB_DW_PRODUCT(S, g, x) __extension__ ({                                         \
    sb_lanes_##S u_, v_;                                                                \
    SB_DW_LOAD(u_, (g));                                                                 \
    SB_DW_LOAD(v_, (x));                                                                 \
    u_ * v_; })
#define SB_DW_MASKED(S, g, x, keep) \
    ((sb_lanes_##S) ((sb_lane_bits_##S) SB_DW_PRODUCT(S, g, x) & (keep)))

/* a row copy stays a loop of vector moves, not a call of memcpy per short row */
#if defined(__GNUC__) && !defined(__clang__)
#define SB_DW_NO_MEMCPY __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define SB_DW_NO_MEMCPY
#endif

/* unaligned vector load and store */
#define SB_DW_LOAD(v, p) memcpy(&(v), (p), sizeof(v))
#define SB_DW_STORE(p, v) memcpy((p), &(v), sizeof(v))

#define SB_DEPTHWISE_ROWS(T, S)                                                          \
SB_CLONES SB_DW_NO_MEMCPY static void sb_dw_place_##S(T* dst, Py_ssize_t PD, Py_ssize_t PH, Py_ssize_t PW,         \
        const T* src, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t ld,           \
        Py_ssize_t lh, Py_ssize_t lw) {                                                  \
    enum { L = sizeof(sb_lanes_##S) / sizeof(T) };                                      \
    /* the box columns [x0, x1) hold source columns x - lw; rows likewise */             \
    const Py_ssize_t x0 = lw > 0 ? lw : 0, x1 = W + lw < PW ? W + lw : PW;               \
    const Py_ssize_t y0 = lh > 0 ? lh : 0, y1 = H + lh < PH ? H + lh : PH;               \
    const Py_ssize_t z0 = ld > 0 ? ld : 0, z1 = D + ld < PD ? D + ld : PD;               \
    const Py_ssize_t m = x1 - x0;                                                        \
    for (Py_ssize_t z = z0; z < z1; z++)                                                 \
        for (Py_ssize_t y = y0; y < y1; y++) {                                           \
            T* to = dst + (z * PH + y) * PW + x0;                                        \
            const T* from = src + ((z - ld) * H + (y - lh)) * W + (x0 - lw);             \
            Py_ssize_t i = 0;                                                            \
            sb_lanes_##S v;                                                             \
            for (; i + L <= m; i += L) { /* inline copies: rows are short */             \
                SB_DW_LOAD(v, from + i);                                                 \
                SB_DW_STORE(to + i, v);                                                  \
            }                                                                            \
            for (; i < m; i++) to[i] = from[i];                                          \
        }                                                                                \
}                                                                                        \
                                                                                         \
/* the first m (< a vector's) lanes of v to p */                                       \
static inline void sb_dw_part_##S(T* p, const sb_lanes_##S* v, Py_ssize_t m) {                 \
    for (Py_ssize_t k = 0; k < m; k++) p[k] = (*v)[k];                                      \
}                                                                                        \
                                                                                         \
/* the box row of output row (z, y), and the row after it (y < oh_n: the next row   \
 * of plane z, else the first of plane z + 1) */                                        \
static inline const T* sb_dw_row_##S(const T* box, Py_ssize_t* z, Py_ssize_t* y,         \
        Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW) {                                 \
    const T* row = box + (*z * PH + *y) * PW;                                            \
    if (++*y == oh_n) {                                                                  \
        *y = 0;                                                                          \
        ++*z;                                                                            \
    }                                                                                    \
    return row;                                                                          \
}                                                                                        \
                                                                                         \
SB_CLONES SB_DW_NO_MEMCPY static void sb_dw_corr_##S(T* restrict out, Py_ssize_t rows, Py_ssize_t n,     \
        const T* restrict box, Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW,            \
        const Py_ssize_t* off, const T* w, Py_ssize_t ntaps) {                           \
    enum { L = sizeof(sb_lanes_##S) / sizeof(T) };                                      \
    Py_ssize_t r = 0, z = 0, y = 0;                                                      \
    for (; r + 4 <= rows; r += 4) { /* four rows: four independent sums */               \
        const T* b0 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW);                          \
        const T* b1 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW);                          \
        const T* b2 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW);                          \
        const T* b3 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW);                          \
        T* o = out + r * n;                                                              \
        for (Py_ssize_t i = 0; i < n; i += L) {                                          \
            sb_lanes_##S a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, v0, v1, v2, v3;        \
            for (Py_ssize_t t = 0; t < ntaps; t++) {                                     \
                const Py_ssize_t at = off[t] + i;                                        \
                const T wt = w[t];                                                       \
                SB_DW_LOAD(v0, b0 + at);                                                 \
                SB_DW_LOAD(v1, b1 + at);                                                 \
                SB_DW_LOAD(v2, b2 + at);                                                 \
                SB_DW_LOAD(v3, b3 + at);                                                 \
                a0 += wt * v0;                                                           \
                a1 += wt * v1;                                                           \
                a2 += wt * v2;                                                           \
                a3 += wt * v3;                                                           \
            }                                                                            \
            if (i + L <= n) {                                                            \
                SB_DW_STORE(o + i, a0);                                                  \
                SB_DW_STORE(o + n + i, a1);                                              \
                SB_DW_STORE(o + 2 * n + i, a2);                                          \
                SB_DW_STORE(o + 3 * n + i, a3);                                          \
            } else { /* the row's last, partial vector: its first n - i lanes */         \
                sb_dw_part_##S(o + i, &a0, n - i);                                        \
                sb_dw_part_##S(o + n + i, &a1, n - i);                                    \
                sb_dw_part_##S(o + 2 * n + i, &a2, n - i);                                \
                sb_dw_part_##S(o + 3 * n + i, &a3, n - i);                                \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    for (; r < rows; r++) {                                                              \
        const T* b = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW);                           \
        for (Py_ssize_t i = 0; i < n; i += L) {                                          \
            sb_lanes_##S a = {0}, v;                                                    \
            for (Py_ssize_t t = 0; t < ntaps; t++) {                                     \
                SB_DW_LOAD(v, b + off[t] + i);                                           \
                a += w[t] * v;                                                           \
            }                                                                            \
            if (i + L <= n)                                                              \
                SB_DW_STORE(out + r * n + i, a);                                         \
            else                                                                         \
                sb_dw_part_##S(out + r * n + i, &a, n - i);                               \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
                                                                                         \
SB_CLONES static void sb_dw_dots_##S(const T* restrict g, Py_ssize_t rows, Py_ssize_t n, \
        const T* restrict box, Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW,            \
        const Py_ssize_t* off, Py_ssize_t ntaps, double* acc) {                          \
    enum { L = sizeof(sb_lanes_##S) / sizeof(T) };                                      \
    const Py_ssize_t nv = n - n % L;  /* the columns in whole vectors */                 \
    sb_lane_bits_##S keep; /* the lanes of a row's last, partial vector that are in it */  \
    for (int k = 0; k < L; k++) keep[k] = k < n - nv ? -1 : 0;                           \
    /* rows before the last in groups of four, the partial vector's products masked */   \
    /* (it reads into the next row: only where it stays in that row); the rest a row */  \
    /* at a time, the tail in scalars */                                                 \
    const int spills = n % L != 0 && L - n % L > n;                                      \
    const Py_ssize_t grouped = rows > 1 && !spills ? (rows - 1) - (rows - 1) % 4 : 0;   \
    for (Py_ssize_t t = 0; t < ntaps; t++) {                                             \
        sb_lanes_##S a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                            \
        T s = 0;                                                                         \
        Py_ssize_t r = 0, z = 0, y = 0;                                                  \
        for (; r < grouped; r += 4) { /* four rows: four independent sums */             \
            const T* g0 = g + r * n;                                                     \
            const T* x0 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW) + off[t];             \
            const T* x1 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW) + off[t];             \
            const T* x2 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW) + off[t];             \
            const T* x3 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW) + off[t];             \
            Py_ssize_t i = 0;                                                            \
            for (; i < nv; i += L) {                                                     \
                a0 += SB_DW_PRODUCT(S, g0 + i, x0 + i);                                 \
                a1 += SB_DW_PRODUCT(S, g0 + n + i, x1 + i);                             \
                a2 += SB_DW_PRODUCT(S, g0 + 2 * n + i, x2 + i);                         \
                a3 += SB_DW_PRODUCT(S, g0 + 3 * n + i, x3 + i);                         \
            }                                                                            \
            if (i < n) {                                                                 \
                a0 += SB_DW_MASKED(S, g0 + i, x0 + i, keep);                            \
                a1 += SB_DW_MASKED(S, g0 + n + i, x1 + i, keep);                        \
                a2 += SB_DW_MASKED(S, g0 + 2 * n + i, x2 + i, keep);                    \
                a3 += SB_DW_MASKED(S, g0 + 3 * n + i, x3 + i, keep);                    \
            }                                                                            \
        }                                                                                \
        for (; r < rows; r++) {                                                          \
            const T* g0 = g + r * n;                                                     \
            const T* x0 = sb_dw_row_##S(box, &z, &y, oh_n, PH, PW) + off[t];             \
            Py_ssize_t i = 0;                                                            \
            for (; i < nv; i += L) a0 += SB_DW_PRODUCT(S, g0 + i, x0 + i);              \
            for (; i < n; i++) s += g0[i] * x0[i];                                       \
        }                                                                                \
        a0 = (a0 + a1) + (a2 + a3);                                                      \
        T lanes[L];                                                                      \
        SB_DW_STORE(lanes, a0);                                                          \
        for (int h = L / 2; h >= 1; h /= 2) /* pairwise: lanes k and k + h */            \
            for (int k = 0; k < h; k++) lanes[k] += lanes[k + h];                        \
        acc[t] += (double) (lanes[0] + s);                                               \
    }                                                                                    \
}

SB_DEPTHWISE_ROWS(float, f)
SB_DEPTHWISE_ROWS(double, d)
#endif
