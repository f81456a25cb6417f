/* The portable Winograd transforms of one channel, F(2x2, 3x3) and F(4x4, 3x3), float
 * and double: the row-buffer loops that run wherever the AVX-512 transforms do not
 * (float64, a CPU without AVX-512, the avx2 and portable SIMD paths).
 *
 * One home for both forms of the convolution: the split form calls them inside its
 * prange over channels (_winograd.pyx), the fused form inside its
 * chunks (wino_fused.h), so both give the same bits.  Each works tile row by tile row:
 * the zero-padded input (or output-gradient) rows are combined across rows over the
 * whole width first, then along the row, by the restrict-pointer loops of wino2_rows.h
 * and wino4_rows.h, which gcc vectorises (formulas there and in the .pyx files).
 *
 * Arguments shared by every function: x (or g, m) and y hold one channel of nb samples,
 * `sn` elements apart; tile rows th0 .. th1-1 of each sample are done, and tile
 * (s, th, tw) is column t = (s * (th1 - th0) + th - th0) * tiles_w + tw of the point
 * planes (`pitch` apart); `buf` is a thread's scratch of sb_wp_*_floats() elements.
 * Nothing here allocates or validates.
 */
#ifndef SANDBOX_WINO_PORTABLE_H
#define SANDBOX_WINO_PORTABLE_H

#include <stddef.h>
#include <string.h>

#include "wino2_rows.h"
#include "wino4_rows.h"
#include "wino4_avx2.h"
#include "wino2_avx2.h"

/* Whether the float32 transforms take the AVX2 tile rows (the same bits as the row
 * loops): the input, output and output-gradient transforms of F(4x4) (wino4_avx2.h) and
 * F(2x2) (wino2_avx2.h); the CPU runs AVX2, unless a test turned it off.  The float64 loops
 * never do: their tile-row names are no-ops. */
static int sb_wino_avx2_rows = -1;
static inline int sb_wino_rows_fast_f(void)
{
    if (sb_wino_avx2_rows < 0) sb_wino_avx2_rows = sb_w4_avx2_available();
    return sb_wino_avx2_rows;
}
#define sb_wino_rows_fast_d() 0
#ifdef SB_W4_HAVE_AVX2
#define sb_w4_in_tilerow_f sb_w4_in_tilerow_avx2
#define sb_w4_out_tilerow_f sb_w4_out_tilerow_avx2
#define sb_w4_grad_tilerow_f sb_w4_grad_tilerow_avx2
#define sb_w2_in_tilerow_f sb_w2_in_tilerow_avx2
#define sb_w2_out_tilerow_f sb_w2_out_tilerow_avx2
#define sb_w2_grad_tilerow_f sb_w2_grad_tilerow_avx2
#else
#define sb_w4_in_tilerow_f(...) ((void)0)
#define sb_w4_out_tilerow_f(...) ((void)0)
#define sb_w4_grad_tilerow_f(...) ((void)0)
#define sb_w2_in_tilerow_f(...) ((void)0)
#define sb_w2_out_tilerow_f(...) ((void)0)
#define sb_w2_grad_tilerow_f(...) ((void)0)
#endif
#define sb_w4_in_tilerow_d(...) ((void)0)
#define sb_w4_out_tilerow_d(...) ((void)0)
#define sb_w4_grad_tilerow_d(...) ((void)0)
#define sb_w2_in_tilerow_d(...) ((void)0)
#define sb_w2_out_tilerow_d(...) ((void)0)
#define sb_w2_grad_tilerow_d(...) ((void)0)

/* Scratch elements a thread needs for the input, output-gradient and output transforms
 * of F(tile x tile, 3x3) on rows of tiles_w tiles. */
static inline size_t sb_wp_in_floats(int tile, int tiles_w)
{
    return tile == 4 ? (size_t)52 * (tiles_w + 1)   /* a row + 6 split rows + 6 combined */
                     : (size_t)8 * (2 * tiles_w + 2);  /* 4 padded rows + 4 combined */
}

static inline size_t sb_wp_grad_floats(int tile, int tiles_w)
{
    return tile == 4 ? (size_t)44 * tiles_w    /* a row + 4 split rows + 6 combined */
                     : (size_t)12 * tiles_w;   /* 2 padded rows + 4 combined */
}

static inline size_t sb_wp_out_floats(int tile, int tiles_w)
{
    return tile == 4 ? (size_t)40 * tiles_w    /* a[4][6] rows + 4 output rows */
                     : (size_t)12 * tiles_w;   /* a[2][4] rows + 2 output rows */
}

#define SB_WINO_PORTABLE(T, S)                                                          \
/* p[0 .. wp) = src[0 .. n) at column lo, zero around it (lo + n <= wp). */             \
static inline void sb_wp_pad_row_##S(T *p, ptrdiff_t wp, const T *src, ptrdiff_t lo,    \
                                     ptrdiff_t n)                                        \
{                                                                                        \
    if (lo > 0) memset(p, 0, (size_t)lo * sizeof(T));                                    \
    memcpy(p + lo, src, (size_t)n * sizeof(T));                                          \
    if (lo + n < wp) memset(p + lo + n, 0, (size_t)(wp - lo - n) * sizeof(T));           \
}                                                                                        \
                                                                                         \
/* F(2x2) V = B^T d B of the 4x4 patches (input padded by ph, pw; rows H, cols W). */    \
static inline void sb_w2_in_channel_##S(const T *x, ptrdiff_t sn, int H, int W, int nb, int ph, \
                                 int pw, int th0, int th1, int tiles_w, T *buf, T *v,    \
                                 ptrdiff_t pitch)                                        \
{                                                                                        \
    const ptrdiff_t wp = 2 * (ptrdiff_t)tiles_w + 2;                                     \
    const ptrdiff_t n_data = pw + W <= wp ? W : wp - pw;                                 \
    T *r = buf + 4 * wp;                                                                 \
    const int fast = sb_wino_rows_fast_##S();  /* the padded rows to wino2_avx2.h */     \
    for (int s = 0; s < nb; s++)                                                         \
        for (int th = th0; th < th1; th++) {                                             \
            const ptrdiff_t t0 = ((ptrdiff_t)s * (th1 - th0) + th - th0) * tiles_w;      \
            for (int i = 0; i < 4; i++) {                                                \
                const int ih = 2 * th - ph + i;                                          \
                if (ih < 0 || ih >= H || n_data <= 0)                                    \
                    memset(buf + i * wp, 0, (size_t)wp * sizeof(T));                     \
                else                                                                     \
                    sb_wp_pad_row_##S(buf + i * wp, wp, x + s * sn + (ptrdiff_t)ih * W,  \
                                      pw, n_data);                                       \
            }                                                                            \
            if (fast) {  /* the rows' reads past 2 tiles_w + 2 stay in buf (8 rows) */  \
                sb_w2_in_tilerow_##S(buf, wp, tiles_w, v + t0, pitch);                   \
                continue;                                                                \
            }                                                                            \
            sb_w2_in_rows_##S(buf, buf + wp, buf + 2 * wp, buf + 3 * wp, r, r + wp,      \
                              r + 2 * wp, r + 3 * wp, wp);   /* rows: r = B^T d */       \
            for (int k = 0; k < 4; k++) {                    /* columns: V = r B */      \
                T *vk = v + 4 * k * pitch + t0;                                          \
                sb_w2_in_cols_##S(r + k * wp, vk, vk + pitch, vk + 2 * pitch,            \
                                  vk + 3 * pitch, tiles_w);                              \
            }                                                                            \
        }                                                                                \
}                                                                                        \
                                                                                         \
/* F(2x2) Gt = A q A^T of the 2x2 output-gradient tiles (zero past Ho, Wo). */           \
static inline void sb_w2_grad_channel_##S(const T *g, ptrdiff_t sn, int Ho, int Wo, int nb,     \
                                   int th0, int th1, int tiles_w, T *buf, T *v,          \
                                   ptrdiff_t pitch)                                      \
{                                                                                        \
    const ptrdiff_t wt = 2 * (ptrdiff_t)tiles_w;                                         \
    T *r = buf + 2 * wt;                                                                 \
    const int fast = sb_wino_rows_fast_##S();  /* the padded rows to wino2_avx2.h */     \
    for (int s = 0; s < nb; s++)                                                         \
        for (int th = th0; th < th1; th++) {                                             \
            const ptrdiff_t t0 = ((ptrdiff_t)s * (th1 - th0) + th - th0) * tiles_w;      \
            for (int i = 0; i < 2; i++) {                                                \
                const int oh = 2 * th + i;                                               \
                if (oh >= Ho)                                                            \
                    memset(buf + i * wt, 0, (size_t)wt * sizeof(T));                     \
                else                                                                     \
                    sb_wp_pad_row_##S(buf + i * wt, wt, g + s * sn + (ptrdiff_t)oh * Wo, \
                                      0, Wo);                                            \
            }                                                                            \
            if (fast) {                                                                  \
                sb_w2_grad_tilerow_##S(buf, wt, tiles_w, v + t0, pitch);                 \
                continue;                                                                \
            }                                                                            \
            sb_w2_grad_rows_##S(buf, buf + wt, r, r + wt, r + 2 * wt, r + 3 * wt, wt);   \
            for (int k = 0; k < 4; k++) {                    /* columns: Gt = r A^T */   \
                T *vk = v + 4 * k * pitch + t0;                                          \
                sb_w2_grad_cols_##S(r + k * wt, vk, vk + pitch, vk + 2 * pitch,          \
                                    vk + 3 * pitch, tiles_w);                            \
            }                                                                            \
        }                                                                                \
}                                                                                        \
                                                                                         \
/* F(2x2) y = A^T M A for tile rows th0 .. th1-1 (y: the channel's plane of the first    \
 * sample, rows Ho, cols Wo; outputs past them dropped). */                              \
static inline void sb_w2_out_channel_##S(const T *m, ptrdiff_t pitch, T *y, ptrdiff_t sn,       \
                                  int Ho, int Wo, int nb, int th0, int th1, int tiles_w, \
                                  T *buf)                                                \
{                                                                                        \
    const ptrdiff_t n = tiles_w, wt = 2 * (ptrdiff_t)tiles_w;                            \
    T *row = buf + 8 * n;                                                                \
    const int fast = sb_wino_rows_fast_##S();  /* the tile rows by wino2_avx2.h */       \
    for (int s = 0; s < nb; s++)                                                         \
        for (int th = th0; th < th1; th++) {                                             \
            const T *mt = m + ((ptrdiff_t)s * (th1 - th0) + th - th0) * tiles_w;         \
            T *ys = y + s * sn;                                                          \
            const int oh = 2 * th;                                                       \
            if (fast)                                                                    \
                sb_w2_out_tilerow_##S(mt, pitch, tiles_w, row, wt);                      \
            /* a[0][i] = m0i + m1i + m2i, a[1][i] = m1i - m2i - m3i (rows of A^T) */     \
            for (int i = 0; i < 4 && !fast; i++)                                         \
                sb_w2_out_cols_##S(mt + i * pitch, mt + (4 + i) * pitch,                 \
                                   mt + (8 + i) * pitch, mt + (12 + i) * pitch,          \
                                   buf + i * n, buf + (4 + i) * n, n);                   \
            for (int i = 0; i < 2 && !fast; i++)             /* columns: row = a A */    \
                sb_w2_out_row_##S(buf + 4 * i * n, buf + (4 * i + 1) * n,                \
                                  buf + (4 * i + 2) * n, buf + (4 * i + 3) * n,          \
                                  row + i * wt, n);                                      \
            memcpy(ys + (ptrdiff_t)oh * Wo, row, (size_t)Wo * sizeof(T));                \
            if (oh + 1 < Ho)                                                             \
                memcpy(ys + (ptrdiff_t)(oh + 1) * Wo, row + wt, (size_t)Wo * sizeof(T)); \
        }                                                                                \
}                                                                                        \
                                                                                         \
/* F(4x4) V = B^T d B of the 6x6 patches: each padded row split into its four column     \
 * phases (the one strided pass), B^T across rows, then B across phases. */              \
static inline void sb_w4_in_channel_##S(const T *x, ptrdiff_t sn, int H, int W, int nb, int ph, \
                                 int pw, int th0, int th1, int tiles_w, T *buf, T *v,    \
                                 ptrdiff_t pitch)                                        \
{                                                                                        \
    const ptrdiff_t L = (ptrdiff_t)tiles_w + 1, wp = 4 * L;   /* one phase extra */      \
    const ptrdiff_t n_data = pw + W <= wp ? W : wp - pw;                                 \
    T *d = buf + wp, *r = buf + wp + 24 * L;                                             \
    const int fast = sb_wino_rows_fast_##S();  /* the padded rows to wino4_avx2.h */         \
    for (int s = 0; s < nb; s++)                                                         \
        for (int th = th0; th < th1; th++) {                                             \
            const ptrdiff_t t0 = ((ptrdiff_t)s * (th1 - th0) + th - th0) * tiles_w;      \
            for (int i = 0; i < 6; i++) {                                                \
                T *di = d + i * wp;                          /* 4 phases of L */         \
                const int ih = 4 * th - ph + i;                                          \
                if (ih < 0 || ih >= H || n_data <= 0) {                                  \
                    memset(di, 0, (size_t)wp * sizeof(T));                               \
                    continue;                                                            \
                }                                                                        \
                if (fast) {  /* the padded row itself (its last block reads into r) */   \
                    sb_wp_pad_row_##S(di, wp, x + s * sn + (ptrdiff_t)ih * W, pw, n_data); \
                    continue;                                                            \
                }                                                                        \
                sb_wp_pad_row_##S(buf, wp, x + s * sn + (ptrdiff_t)ih * W, pw, n_data);  \
                sb_w4_split_##S(buf, di, di + L, di + 2 * L, di + 3 * L, L);             \
            }                                                                            \
            if (fast) {                                                                  \
                sb_w4_in_tilerow_##S(d, wp, tiles_w, v + t0, pitch);                     \
                continue;                                                                \
            }                                                                            \
            sb_w4_in_rows_##S(d, d + wp, d + 2 * wp, d + 3 * wp, d + 4 * wp, d + 5 * wp, \
                              r, r + wp, r + 2 * wp, r + 3 * wp, r + 4 * wp, r + 5 * wp, \
                              wp);                           /* rows: R = B^T D */       \
            for (int k = 0; k < 6; k++) {                    /* columns: V = R B */      \
                const T *q = r + k * wp;                                                 \
                T *vk = v + 6 * k * pitch + t0;                                          \
                sb_w4_in_cols_##S(q, q + L, q + 2 * L, q + 3 * L, vk, vk + pitch,        \
                                  vk + 2 * pitch, vk + 3 * pitch, vk + 4 * pitch,        \
                                  vk + 5 * pitch, tiles_w);                              \
            }                                                                            \
        }                                                                                \
}                                                                                        \
                                                                                         \
/* F(4x4) Gt = A q A^T of the 4x4 output-gradient tiles (zero past Ho, Wo): the rows     \
 * split into phases, A across rows, then A across the phases of each row. */            \
static inline void sb_w4_grad_channel_##S(const T *g, ptrdiff_t sn, int Ho, int Wo, int nb,     \
                                   int th0, int th1, int tiles_w, T *buf, T *v,          \
                                   ptrdiff_t pitch)                                      \
{                                                                                        \
    const ptrdiff_t n = tiles_w, wt = 4 * (ptrdiff_t)tiles_w;                            \
    T *r = buf + 5 * wt;                                                                 \
    const int fast = sb_wino_rows_fast_##S();  /* the padded rows to wino4_avx2.h */         \
    for (int s = 0; s < nb; s++)                                                         \
        for (int th = th0; th < th1; th++) {                                             \
            const ptrdiff_t t0 = ((ptrdiff_t)s * (th1 - th0) + th - th0) * tiles_w;      \
            for (int i = 0; i < 4; i++) {                                                \
                T *q = buf + (1 + i) * wt;                                               \
                const int oh = 4 * th + i;                                               \
                if (oh >= Ho) {                                                          \
                    memset(q, 0, (size_t)wt * sizeof(T));                                \
                    continue;                                                            \
                }                                                                        \
                if (fast) {                                                              \
                    sb_wp_pad_row_##S(q, wt, g + s * sn + (ptrdiff_t)oh * Wo, 0, Wo);    \
                    continue;                                                            \
                }                                                                        \
                sb_wp_pad_row_##S(buf, wt, g + s * sn + (ptrdiff_t)oh * Wo, 0, Wo);      \
                sb_w4_split_##S(buf, q, q + n, q + 2 * n, q + 3 * n, n);                 \
            }                                                                            \
            if (fast) {                                                                  \
                sb_w4_grad_tilerow_##S(buf + wt, wt, tiles_w, v + t0, pitch);            \
                continue;                                                                \
            }                                                                            \
            sb_w4_a_##S(buf + wt, buf + 2 * wt, buf + 3 * wt, buf + 4 * wt, r, r + wt,   \
                        r + 2 * wt, r + 3 * wt, r + 4 * wt, r + 5 * wt, wt); /* R = A Q */ \
            for (int k = 0; k < 6; k++) {                    /* columns: Gt = R A^T */   \
                const T *q = r + k * wt;                                                 \
                T *vk = v + 6 * k * pitch + t0;                                          \
                sb_w4_a_##S(q, q + n, q + 2 * n, q + 3 * n, vk, vk + pitch,              \
                            vk + 2 * pitch, vk + 3 * pitch, vk + 4 * pitch,              \
                            vk + 5 * pitch, n);                                          \
            }                                                                            \
        }                                                                                \
}                                                                                        \
                                                                                         \
/* F(4x4) y = A^T M A for tile rows th0 .. th1-1 (as sb_w2_out_channel). */              \
static inline void sb_w4_out_channel_##S(const T *m, ptrdiff_t pitch, T *y, ptrdiff_t sn,       \
                                  int Ho, int Wo, int nb, int th0, int th1, int tiles_w, \
                                  T *buf)                                                \
{                                                                                        \
    const ptrdiff_t n = tiles_w, wt = 4 * (ptrdiff_t)tiles_w;                            \
    T *row = buf + 24 * n;                                                               \
    const int fast = sb_wino_rows_fast_##S();  /* the tile rows by wino4_avx2.h */           \
    for (int s = 0; s < nb; s++)                                                         \
        for (int th = th0; th < th1; th++) {                                             \
            const T *mt = m + ((ptrdiff_t)s * (th1 - th0) + th - th0) * tiles_w;         \
            T *ys = y + s * sn;                                                          \
            if (fast)                                                                    \
                sb_w4_out_tilerow_##S(mt, pitch, tiles_w, row, wt);                      \
            /* a[i][j] = sum_k A^T[i][k] M[6k + j]: rows of A^T over the point rows */   \
            for (int j = 0; j < 6 && !fast; j++) {                                       \
                const T *mj = mt + j * pitch;                                            \
                T *aj = buf + j * n;                                                     \
                sb_w4_out_cols_##S(mj, mj + 6 * pitch, mj + 12 * pitch, mj + 18 * pitch, \
                                   mj + 24 * pitch, mj + 30 * pitch, aj, aj + 6 * n,     \
                                   aj + 12 * n, aj + 18 * n, n);                         \
            }                                                                            \
            for (int i = 0; i < 4 && !fast; i++) {           /* columns: row = a A */    \
                const T *ai = buf + 6 * i * n;                                           \
                sb_w4_out_row_##S(ai, ai + n, ai + 2 * n, ai + 3 * n, ai + 4 * n,        \
                                  ai + 5 * n, row + i * wt, n);                          \
            }                                                                            \
            for (int i = 0; i < 4; i++) {                                                \
                const int oh = 4 * th + i;                                               \
                if (oh < Ho)                                                             \
                    memcpy(ys + (ptrdiff_t)oh * Wo, row + i * wt, (size_t)Wo * sizeof(T)); \
            }                                                                            \
        }                                                                                \
}

SB_WINO_PORTABLE(float, f)
SB_WINO_PORTABLE(double, d)

#endif
