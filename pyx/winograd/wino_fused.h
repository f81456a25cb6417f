/* The Winograd convolution with every chunk of samples on one thread (float32, AVX-512
 * transforms; pyx/winograd/_winograd_fused.pyx): the forward (or input gradient) and the
 * weight gradient.
 *
 * The split form (sandbox/array/conv/_winograd.py) runs one chunk after another and
 * shares each of its steps (the transforms, the point GEMMs) among the threads: three
 * OpenMP regions a chunk, each transformed chunk written by one core and read by the
 * other.  Here each thread takes whole chunks: it transforms one into its own buffers
 * (the chunk's data still in its cache), multiplies the points and writes the chunk's
 * outputs (forward) or its partial sums (weight gradient), with no barrier between
 * chunks.  The chunks come from home ranges (work_share.h's sb_home): a thread runs
 * those of its own share of the samples first, the samples batch norm's and the other
 * plane loops give it, so that it reads what it wrote, then takes over the other's last
 * ones.  Each tile is transformed by the same code, each point GEMM computes every
 * output from the same K blocks whatever columns it is given (sgemm_avx512.h,
 * sgemm_avx2.h), and the weight gradient's partials are added in chunk order, so the
 * results are the split form's, bit for bit, for any thread count.
 *
 * A chunk is `chunk` samples (the last may have fewer), or, for the forward on large
 * maps, a band of `band` tile rows of one sample (the last band of a sample may have
 * fewer), so that a chunk's points stay in a thread's caches; its tiles are numbered
 * in order, t = (s * rows + th - th0) * tiles_w + tw.
 */
#ifndef SANDBOX_WINO_FUSED_H
#define SANDBOX_WINO_FUSED_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "sgemm_avx2.h"
#include "sgemm_avx512.h"
#include "wino2_avx512.h"
#include "wino4_avx512.h"
#include "wino_planes.h"
#include "wino_portable.h"
#include "wino_weights.h"
#include "work_share.h"

/* The portable transform of one channel (wino_portable.h): an input's (padding ph, pw)
 * or an output gradient's (ph, pw unused), under one signature. */
typedef void (*sb_channel_fn)(const float *x, ptrdiff_t sn, int H, int W, int nb, int ph,
                              int pw, int th0, int th1, int tiles_w, float *buf, float *v,
                              ptrdiff_t pitch);

static void sb_wf_w2_grad(const float *g, ptrdiff_t sn, int H, int W, int nb, int ph, int pw,
                          int th0, int th1, int tiles_w, float *buf, float *v, ptrdiff_t pitch)
{
    (void)ph; (void)pw;
    sb_w2_grad_channel_f(g, sn, H, W, nb, th0, th1, tiles_w, buf, v, pitch);
}

static void sb_wf_w4_grad(const float *g, ptrdiff_t sn, int H, int W, int nb, int ph, int pw,
                          int th0, int th1, int tiles_w, float *buf, float *v, ptrdiff_t pitch)
{
    (void)ph; (void)pw;
    sb_w4_grad_channel_f(g, sn, H, W, nb, th0, th1, tiles_w, buf, v, pitch);
}

/* How one array (N, C, H, W) of a chunk becomes its points V[p][c][t] (v + p*pitch +
 * c*t for the chunk's t tiles): the same transform the split form runs (portable: the
 * row loops of wino_portable.h; else AVX-512: F(4x4) input on rows of 16 tiles or more
 * by tile rows, else gathered planes). */
typedef struct {
    int C, H, W, ph, pw, tile, halo, tiles_h, tiles_w, by_rows, copy_rows, copy_cols, n_rows;
    ptrdiff_t hp, wp, rs, sample, channel;  /* a chunk's units (samples) and channels apart */
    sb_plane_fn fn;
    sb_channel_fn portable;  /* the portable transform, or NULL */
    int *off;  /* the tile offsets in a chunk's plane blocks (AVX-512 planes only) */
} sb_wf_source;

/* halo 2: an input (padding ph, pw); 0: an output gradient (sb_w*_grad_plane_f32). */
static int sb_wf_source_init(sb_wf_source *q, int C, int H, int W, int ph, int pw, int tile,
                             int tiles_h, int tiles_w, int halo, int chunk, int portable)
{
    q->C = C; q->H = H; q->W = W; q->ph = ph; q->pw = pw; q->tile = tile; q->halo = halo;
    q->tiles_h = tiles_h; q->tiles_w = tiles_w;
    q->portable = !portable ? NULL
                  : halo == 2 ? (tile == 4 ? sb_w4_in_channel_f : sb_w2_in_channel_f)
                              : (tile == 4 ? sb_wf_w4_grad : sb_wf_w2_grad);
    q->by_rows = !portable && halo == 2 && tile == 4 && tiles_w >= 16;
    q->fn = halo == 2 ? (tile == 4 ? sb_w4_in_plane_f32 : sb_w2_in_plane_f32)
                      : (tile == 4 ? sb_w4_grad_plane_f32 : sb_w2_grad_plane_f32);
    q->hp = (ptrdiff_t)tile * tiles_h + halo;
    q->wp = (ptrdiff_t)tile * tiles_w + halo;
    q->rs = SB_W4_ROW_FLOATS(tiles_w);
    q->copy_rows = H < q->hp - ph ? H : (int)(q->hp - ph);
    q->copy_cols = W < q->wp - pw ? W : (int)(q->wp - pw);
    q->n_rows = W < q->rs - pw ? W : (int)(q->rs - pw);
    q->sample = (ptrdiff_t)C * H * W;
    q->channel = (ptrdiff_t)H * W;
    q->off = NULL;
    if (q->by_rows || portable) return 0;
    q->off = (int *)malloc((size_t)chunk * tiles_h * tiles_w * sizeof(int));
    if (q->off == NULL) return -1;
    sb_wino_offsets(q->off, chunk * tiles_h * tiles_w, tiles_h * tiles_w, tile, tiles_w,
                    q->hp, q->wp);
    return 0;
}

/* Floats of a thread's staging buffer (zeroed once: only data rows are ever written). */
static size_t sb_wf_source_floats(const sb_wf_source *q, int chunk)
{
    if (q->portable != NULL)
        return q->halo == 2 ? sb_wp_in_floats(q->tile, q->tiles_w)
                            : sb_wp_grad_floats(q->tile, q->tiles_w);
    return q->by_rows ? (size_t)(7 * q->rs)
                      : (size_t)chunk * (size_t)(q->hp * q->wp) + SB_PLANE_SLACK;
}

/* The points of channel c of tile rows th0 .. th1-1 of samples n0 .. n0+nb-1 of x into
 * v + c*t (the chunk's points, planes `pitch` apart; t its tiles); a band of rows (th0 >
 * 0 or th1 < tiles_h) only with nb = 1. */
static void sb_wf_source_channel(const sb_wf_source *q, const float *x, int c, int n0, int nb,
                                 int th0, int th1, float *buf, float *v, ptrdiff_t pitch)
{
    const ptrdiff_t t = (ptrdiff_t)nb * (th1 - th0) * q->tiles_w;
    const float *xc = x + (ptrdiff_t)n0 * q->sample + (ptrdiff_t)c * q->channel;
    if (q->portable != NULL) {
        q->portable(xc, q->sample, q->H, q->W, nb, q->ph, q->pw, th0, th1, q->tiles_w, buf,
                    v + (ptrdiff_t)c * t, pitch);
    } else if (q->by_rows) {
        sb_w4_in_rows_channel(xc, q->sample, q->H, q->W, nb, q->ph, q->pw, q->n_rows, th0, th1,
                              q->tiles_w, buf, q->rs, v + (ptrdiff_t)c * t, pitch);
    } else {
        /* the input rows the tiles read: padded rows th0*tile .. th1*tile + halo - 1 */
        int row0 = th0 * q->tile - q->ph, row1 = th1 * q->tile + q->halo - q->ph;
        if (row0 < 0) row0 = 0;
        if (row1 > q->copy_rows) row1 = q->copy_rows;
        sb_wino_in_channel(xc, q->sample, q->W, nb, row0, row1, q->copy_cols, q->ph, q->pw,
                           q->hp, q->wp, buf, q->fn, q->off + th0 * q->tiles_w, (int)t,
                           v + (ptrdiff_t)c * t, pitch);
    }
}

/* Every channel of sb_wf_source_channel. */
static void sb_wf_source_chunk(const sb_wf_source *q, const float *x, int n0, int nb,
                               int th0, int th1, float *buf, float *v, ptrdiff_t pitch)
{
    int c;
    for (c = 0; c < q->C; c++)
        sb_wf_source_channel(q, x, c, n0, nb, th0, th1, buf, v, pitch);
}

/* A thread's buffer of `floats` floats, zeroed when `zero` (the staging buffers, whose
 * margins must be zero), or NULL after setting *failed (the region's shared flag). */
static inline float *sb_wf_buffer(size_t floats, int zero, int *failed)
{
    float *b = (float *)malloc((floats > 0 ? floats : 1) * sizeof(float));
    if (b == NULL) {
        #pragma omp atomic write
        *failed = 1;
    } else if (zero) {
        memset(b, 0, floats * sizeof(float));
    }
    return b;
}

/* What a weight gradient transforms: the input (halo 2) and the output gradient, with
 * in_units and g_units units (samples, or depth planes) a chunk. */
typedef struct {
    sb_wf_source in, grad;
} sb_wf_sources;

/* 0, or -1 (nothing to free) when a table could not be allocated. */
static int sb_wf_sources_init(sb_wf_sources *q, int C, int H, int W, int ph, int pw, int O,
                              int Ho, int Wo, int tile, int tiles_h, int tiles_w, int in_units,
                              int g_units, int portable)
{
    if (sb_wf_source_init(&q->in, C, H, W, ph, pw, tile, tiles_h, tiles_w, 2, in_units,
                          portable) != 0)
        return -1;
    if (sb_wf_source_init(&q->grad, O, Ho, Wo, 0, 0, tile, tiles_h, tiles_w, 0, g_units,
                          portable) != 0) {
        free(q->in.off);
        return -1;
    }
    return 0;
}

static void sb_wf_sources_free(sb_wf_sources *q)
{
    free(q->in.off);
    free(q->grad.off);
}

/* A thread's staging buffers of both sources (zeroed), or NULL after setting *failed
 * (the region's shared flag); free both with free(). */
typedef struct {
    float *in, *grad;
} sb_wf_staging;

static sb_wf_staging sb_wf_staging_new(const sb_wf_sources *q, int in_units, int g_units,
                                       int *failed)
{
    sb_wf_staging b;
    b.in = sb_wf_buffer(sb_wf_source_floats(&q->in, in_units), 1, failed);
    b.grad = sb_wf_buffer(sb_wf_source_floats(&q->grad, g_units), 1, failed);
    return b;
}

/* Iterations a dynamic worksharing chunk takes so that each of the team's threads gets
 * about 4 of a loop of n (at least min_piece).  The worksharing loops below hand out
 * their channels, points and elements in such pieces as threads come free, so a thread
 * on a slower core (a VM's vCPU that shares its core, an efficiency core) takes fewer of
 * them instead of holding up the barrier after the loop.  Which thread runs an
 * iteration never changes its result (each iteration writes its own outputs from its own
 * inputs), so the bits are a static schedule's. */
static inline int sb_wf_piece(ptrdiff_t n, int min_piece)
{
#ifdef _OPENMP
    const ptrdiff_t pieces = 4 * (ptrdiff_t)omp_get_num_threads();
#else
    const ptrdiff_t pieces = 4;
#endif
    const ptrdiff_t piece = (n + pieces - 1) / pieces;
    return piece < min_piece ? min_piece : (int)piece;
}

/* The weight transform a convolution runs in its own region before its chunks (w NULL:
 * U is given): U of the weights w (wo x wc x 3 x 3, kernels ks apart; ks, flip and
 * c_major as for sb_weight_run_f) into ut (points sp apart, runs sr apart), the same
 * memory the products read. */
typedef struct {
    const float *w;
    int wo, wc, flip, c_major;
    ptrdiff_t ks;
    float *ut;
    ptrdiff_t sp, sr;
} sb_wf_weights;

/* Inside a parallel region: the transform's runs shared among the threads (every thread
 * must call it).  With wait, the worksharing loop ends in a barrier, so U is complete
 * after; without, a thread goes on as soon as its runs are done: for a caller whose next
 * worksharing loop (an input transform, which does not read U) ends in the barrier that
 * U must be complete by (the split forms: one barrier fewer a call). */
static inline void sb_wf_transform_weights(const sb_wf_weights *q, int tile, int wait)
{
    int r;
    if (q->w == NULL) return;
    const int runs = q->c_major ? q->wc : q->wo;
    #pragma omp for schedule(dynamic, sb_wf_piece(runs, 1)) nowait
    for (r = 0; r < runs; r++)
        sb_weight_run_f(q->w, q->wo, q->wc, q->ks, tile, q->flip, q->c_major, r, q->ut, q->sp,
                        q->sr);
    if (wait) {
        #pragma omp barrier
    }
}

/* Inside a parallel region, after the point sums total (P x O x C) are complete: the fold
 * dW = G^T total G into dw (O x C x 3 x 3), shared among the threads by output channel
 * (dw NULL: none, the caller folds). */
static inline void sb_wf_fold(const float *total, int O, int C, int tile, float *dw)
{
    int o;
    if (dw == NULL) return;
    #pragma omp for schedule(dynamic, sb_wf_piece(O, 1))
    for (o = 0; o < O; o++)
        sb_fold_row_f(total, (ptrdiff_t)O * C, C, 1, C, tile, o, dw);
}

/* Chunk k: samples n0 .. n0+nb-1, tile rows th0 .. th1-1 (chunks of `chunk` samples, or
 * with band > 0 bands of `band` tile rows of one sample, the last ones shorter). */
static inline void sb_wf_chunk(int k, int N, int chunk, int band, int tiles_h, int *n0,
                               int *nb, int *th0, int *th1)
{
    if (band > 0) {
        const int bands = (tiles_h + band - 1) / band;
        *n0 = k / bands;
        *nb = 1;
        *th0 = (k % bands) * band;
        *th1 = *th0 + band < tiles_h ? *th0 + band : tiles_h;
    } else {
        *n0 = k * chunk;
        *nb = N - *n0 < chunk ? N - *n0 : chunk;
        *th0 = 0;
        *th1 = tiles_h;
    }
}

/* A thread's point planes lie one cache line more than a plane apart (as _winograd.py's
 * _points: planes a multiple of 4 KiB apart alias in the cache). */
static inline ptrdiff_t sb_wf_pitch(ptrdiff_t plane) { return plane + 16; }

/* c (m x n, rows ldc apart) = a @ b (accumulate: c += a @ b) with element (i, j) of a at
 * a + i*sa0 + j*sa1 and of b at b + i*sb0 + j*sb1: packed, or (dot) by the dot-product
 * kernel, which needs sa1 == sb0 == 1 (rows of a and columns of b contiguous along k);
 * gemm 2: the AVX2 kernels, else the AVX-512 ones.  Returns the kernel's status. */
static inline int sb_wf_gemm(int gemm, int dot, int m, int n, int k, const float *a,
                             ptrdiff_t sa0, ptrdiff_t sa1, const float *b, ptrdiff_t sb0,
                             ptrdiff_t sb1, float *c, ptrdiff_t ldc, int accumulate)
{
    if (dot) {  /* b given as its transpose, rows sb1 apart */
        if (gemm == 2)
            sb_sgemm_dot_avx2(m, n, k, a, sa0, b, sb1, c, ldc, accumulate);
        else
            sb_sgemm_dot_avx512(m, n, k, a, sa0, b, sb1, c, ldc, accumulate);
        return 0;
    }
    if (gemm == 2) return sb_sgemm_avx2(m, n, k, a, sa0, sa1, b, sb0, sb1, c, ldc, accumulate);
    return sb_sgemm_avx512(m, n, k, a, sa0, sa1, b, sb0, sb1, c, ldc, accumulate);
}

/* Output channel o of a chunk of nb units (samples, or the depth planes of one sample)
 * from its products m (planes pm apart, t tiles a plane) into yo (that channel's first
 * unit; units ys apart): the rows of tile rows th0 .. th1-1, clipped to Ho and Wo, by the
 * portable transform or the AVX-512 one (through buf where the tiles overhang the
 * output). */
static void sb_wf_out_channel_at(const float *m, ptrdiff_t pm, ptrdiff_t t, int o, float *yo,
                                 ptrdiff_t ys, int Ho, int Wo, int nb, int th0, int th1,
                                 int tile, int tiles_w, int portable, float *buf)
{
    const ptrdiff_t wt = (ptrdiff_t)tile * tiles_w;
    if (portable) {
        (tile == 4 ? sb_w4_out_channel_f : sb_w2_out_channel_f)(
            m + (ptrdiff_t)o * t, pm, yo, ys, Ho, Wo, nb, th0, th1, tiles_w, buf);
    } else {
        const int row0 = th0 * tile;  /* output rows of the chunk's tiles, clipped to Ho */
        const int rows = (th1 * tile < Ho ? th1 * tile : Ho) - row0;
        const int exact = rows == (th1 - th0) * tile && Wo == wt;
        sb_wino_out_channel(m + (ptrdiff_t)o * t, pm, yo + (ptrdiff_t)row0 * Wo, ys, rows, Wo,
                            nb, th1 - th0, tiles_w, wt, exact ? NULL : buf,
                            tile == 4 ? sb_w4_out_plane_f32 : sb_w2_out_plane_f32);
    }
}

/* Output channel o of a chunk of samples n0 .. n0+nb-1 of y (N, O, Ho, Wo). */
static void sb_wf_out_channel(const float *m, ptrdiff_t pm, ptrdiff_t t, int o, float *y,
                              int O, int Ho, int Wo, int n0, int nb, int th0, int th1, int tile,
                              int tiles_w, int portable, float *buf)
{
    const ptrdiff_t ys = (ptrdiff_t)O * Ho * Wo;
    sb_wf_out_channel_at(m, pm, t, o, y + (ptrdiff_t)n0 * ys + (ptrdiff_t)o * Ho * Wo, ys, Ho,
                         Wo, nb, th0, th1, tile, tiles_w, portable, buf);
}

/* The per-thread output buffer of sb_wf_out_channel, in floats. */
static size_t sb_wf_out_floats(int tile, int rows, int tiles_w, int portable)
{
    return portable ? sb_wp_out_floats(tile, tiles_w)
                    : (size_t)rows * tile * (size_t)tile * tiles_w;
}

/* y (N, O, Ho, Wo) = the convolution of x (N, C, H, W; padding ph, pw) whose transformed
 * kernels are U[p] (O x C, element (o, c) at u + p*up + o*uo + c*uc), by F(tile x tile,
 * 3x3) (tile 2 or 4), in chunks of `chunk` samples, or (band > 0) of `band` tile rows of
 * one sample, shared among num_threads threads.  gemm: 1 the AVX-512 kernel, 2 the AVX2
 * one; the dot-product kernel for full chunks when dot_full, for shorter ones when
 * dot_last (sandbox/array/_gemm.py's rule); portable: the portable transforms instead of
 * the AVX-512 ones; wt: the weight transform to run first in the region (wt->w NULL:
 * none, u is given).  Returns 0, or -1 when a buffer could not be allocated (y is then
 * incomplete). */
static int sb_wino_conv_f32(const float *x, int N, int C, int H, int W, int ph, int pw,
                            const float *u, ptrdiff_t up, ptrdiff_t uo, ptrdiff_t uc,
                            float *y, int O, int Ho, int Wo, int tile, int tiles_h,
                            int tiles_w, int chunk, int band, int gemm, int dot_full,
                            int dot_last, int portable, const sb_wf_weights *wt,
                            int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const int bands = band > 0 ? (tiles_h + band - 1) / band : 1;
    const int nchunks = band > 0 ? N * bands : (N + chunk - 1) / chunk;
    const ptrdiff_t tmax = band > 0 ? (ptrdiff_t)band * tiles_w : (ptrdiff_t)chunk * per_plane;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * tmax), pm = sb_wf_pitch((ptrdiff_t)O * tmax);
    const size_t out_floats = sb_wf_out_floats(tile, band > 0 ? band : tiles_h, tiles_w,
                                               portable);
    sb_wf_source in;
    sb_home home;
    int failed = 0;
    sb_home_init(&home, nchunks);
    if (sb_wf_source_init(&in, C, H, W, ph, pw, tile, tiles_h, tiles_w, 2,
                          band > 0 ? 1 : chunk, portable) != 0)
        return -1;
    #pragma omp parallel num_threads(num_threads)
    {
        const size_t in_floats = sb_wf_source_floats(&in, band > 0 ? 1 : chunk);
        float *v = sb_wf_buffer((size_t)(points * pv), 0, &failed);
        float *m = sb_wf_buffer((size_t)(points * pm), 0, &failed);
        float *in_buf = sb_wf_buffer(in_floats, 1, &failed);
        float *out_buf = sb_wf_buffer(out_floats, 0, &failed);
        const int ok = v != NULL && m != NULL && in_buf != NULL && out_buf != NULL;
        int k, p, o;
        sb_wf_transform_weights(wt, tile, 1);  /* each thread's chunks read U at once */
        sb_home_start(&home);
        while ((k = (int)sb_home_take(&home)) >= 0) {  /* the samples of this core first */
            int n0, nb, th0, th1;
            sb_wf_chunk(k, N, chunk, band, tiles_h, &n0, &nb, &th0, &th1);
            const ptrdiff_t t = (ptrdiff_t)nb * (th1 - th0) * tiles_w;
            const int dot = t == tmax ? dot_full : dot_last;
            int bad = 0;
            if (!ok) continue;   /* every thread still meets the worksharing loop */
            sb_wf_source_chunk(&in, x, n0, nb, th0, th1, in_buf, v, pv);
            for (p = 0; p < points; p++)  /* M[p] = U[p] @ V[p] */
                bad |= sb_wf_gemm(gemm, dot, O, (int)t, C, u + p * up, uo, uc, v + p * pv, t,
                                  1, m + p * pm, t, 0);
            if (bad) {
                #pragma omp atomic write
                failed = 1;
                continue;
            }
            for (o = 0; o < O; o++)
                sb_wf_out_channel(m, pm, t, o, y, O, Ho, Wo, n0, nb, th0, th1, tile, tiles_w,
                                  portable, out_buf);
        }
        free(v);
        free(m);
        free(in_buf);
        free(out_buf);
    }
    free(in.off);
    return failed ? -1 : 0;
}

/* sb_wino_conv_f32's convolution in the split form, in one OpenMP region: chunks of
 * `chunk` samples one after another, each step of a chunk shared among the threads (the
 * input transform by channels, the point GEMMs by points, the output transform by
 * output channels, a barrier between), as _winograd.py's split form runs them from
 * Python in three regions a chunk, with the same code for every tile and product: the
 * same bits.  For few chunks (the 8x8 and 4x4 maps of a UNet at batch 8), where whole
 * chunks per thread would leave a thread idle.  Returns 0, or -1 when a buffer could not
 * be allocated (y is then incomplete). */
static int sb_wino_conv_split_f32(const float *x, int N, int C, int H, int W, int ph, int pw,
                                  const float *u, ptrdiff_t up, ptrdiff_t uo, ptrdiff_t uc,
                                  float *y, int O, int Ho, int Wo, int tile, int tiles_h,
                                  int tiles_w, int chunk, int gemm, int dot_full, int dot_last,
                                  int portable, const sb_wf_weights *wt, int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const int nchunks = (N + chunk - 1) / chunk;
    const ptrdiff_t tmax = (ptrdiff_t)chunk * per_plane;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * tmax), pm = sb_wf_pitch((ptrdiff_t)O * tmax);
    const size_t out_floats = sb_wf_out_floats(tile, tiles_h, tiles_w, portable);
    float *v = (float *)malloc((size_t)(points * pv) * sizeof(float));
    float *m = (float *)malloc((size_t)(points * pm) * sizeof(float));
    sb_wf_source in;
    int failed = 0;
    if (v == NULL || m == NULL
        || sb_wf_source_init(&in, C, H, W, ph, pw, tile, tiles_h, tiles_w, 2, chunk,
                             portable) != 0) {
        free(v);
        free(m);
        return -1;
    }
    #pragma omp parallel num_threads(num_threads)
    {
        const size_t in_floats = sb_wf_source_floats(&in, chunk);
        float *in_buf = sb_wf_buffer(in_floats, 1, &failed);
        float *out_buf = sb_wf_buffer(out_floats, 0, &failed);
        const int ok = in_buf != NULL && out_buf != NULL;
        const int piece_c = sb_wf_piece(C, 1), piece_o = sb_wf_piece(O, 1);
        int k, c, p, o;
        sb_wf_transform_weights(wt, tile, 0);  /* complete by the input loop's barrier */
        for (k = 0; k < nchunks; k++) {   /* every thread meets every worksharing loop */
            int n0, nb, th0, th1;
            sb_wf_chunk(k, N, chunk, 0, tiles_h, &n0, &nb, &th0, &th1);
            const ptrdiff_t t = (ptrdiff_t)nb * per_plane;
            const int dot = t == tmax ? dot_full : dot_last;
            #pragma omp for schedule(dynamic, piece_c)
            for (c = 0; c < C; c++)
                if (ok) sb_wf_source_channel(&in, x, c, n0, nb, 0, tiles_h, in_buf, v, pv);
            #pragma omp for schedule(dynamic, 1)
            for (p = 0; p < points; p++)  /* M[p] = U[p] @ V[p] */
                if (sb_wf_gemm(gemm, dot, O, (int)t, C, u + p * up, uo, uc, v + p * pv, t, 1,
                               m + p * pm, t, 0) != 0) {
                    #pragma omp atomic write
                    failed = 1;
                }
            #pragma omp for schedule(dynamic, piece_o)
            for (o = 0; o < O; o++)
                if (ok) sb_wf_out_channel(m, pm, t, o, y, O, Ho, Wo, n0, nb, 0, tiles_h, tile,
                                          tiles_w, portable, out_buf);
        }
        free(in_buf);
        free(out_buf);
    }
    free(in.off);
    free(v);
    free(m);
    return failed ? -1 : 0;
}

/* The weight gradient's point sums of a 3x3 stride-1 convolution of x (N, C, H, W;
 * padding ph, pw) with output gradient g (N, O, Ho, Wo): total[p] (O x C, contiguous,
 * planes O*C apart) = sum over chunks, in chunk order, of Gt[p] @ V[p]^T (the chunk's
 * transformed gradient and input, F(tile x tile, 3x3)); chunks of `chunk` samples or
 * (band > 0) bands of `band` tile rows, as for sb_wino_conv_f32.  Each chunk's product
 * goes to its own plane of `partial` (nchunks x points x O x C); the dot-product kernel
 * runs for full chunks when dot_full, for shorter ones when dot_last (the rule of
 * sandbox/array/_gemm.py, from the shapes); portable: the portable transforms; dw (not
 * NULL): the fold of total into the weight gradient too, in the same region.  Returns
 * 0, or -1 when a buffer could not be allocated. */
static int sb_wino_wgrad_f32(const float *x, int N, int C, int H, int W, int ph, int pw,
                             const float *g, int O, int Ho, int Wo, int tile, int tiles_h,
                             int tiles_w, int chunk, int band, int gemm, int dot_full,
                             int dot_last, int portable, float *partial, float *total,
                             float *dw, int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const int bands = band > 0 ? (tiles_h + band - 1) / band : 1;
    const int nchunks = band > 0 ? N * bands : (N + chunk - 1) / chunk;
    const ptrdiff_t tmax = band > 0 ? (ptrdiff_t)band * tiles_w : (ptrdiff_t)chunk * per_plane;
    const ptrdiff_t oc = (ptrdiff_t)O * C;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * tmax), pg = sb_wf_pitch((ptrdiff_t)O * tmax);
    const ptrdiff_t size = points * oc;
    const int samples = band > 0 ? 1 : chunk;  /* per chunk */
    sb_wf_sources src;
    sb_home home;
    int failed = 0;
    sb_home_init(&home, nchunks);
    if (sb_wf_sources_init(&src, C, H, W, ph, pw, O, Ho, Wo, tile, tiles_h, tiles_w, samples,
                           samples, portable) != 0)
        return -1;
    #pragma omp parallel num_threads(num_threads)
    {
        float *v = sb_wf_buffer((size_t)(points * pv), 0, &failed);
        float *gt = sb_wf_buffer((size_t)(points * pg), 0, &failed);
        const sb_wf_staging buf = sb_wf_staging_new(&src, samples, samples, &failed);
        const int ok = v != NULL && gt != NULL && buf.in != NULL && buf.grad != NULL;
        int k, p;
        ptrdiff_t e;
        sb_home_start(&home);
        while ((k = (int)sb_home_take(&home)) >= 0) {  /* the samples of this core first */
            int n0, nb, th0, th1;
            sb_wf_chunk(k, N, chunk, band, tiles_h, &n0, &nb, &th0, &th1);
            const ptrdiff_t t = (ptrdiff_t)nb * (th1 - th0) * tiles_w;
            const int dot = t == tmax ? dot_full : dot_last;
            float *part = partial + (ptrdiff_t)k * size;
            int bad = 0;
            if (!ok) continue;
            sb_wf_source_chunk(&src.in, x, n0, nb, th0, th1, buf.in, v, pv);
            sb_wf_source_chunk(&src.grad, g, n0, nb, th0, th1, buf.grad, gt, pg);
            for (p = 0; p < points; p++)  /* partial[p] = Gt[p] @ V[p]^T */
                bad |= sb_wf_gemm(gemm, dot, O, C, (int)t, gt + p * pg, t, 1, v + p * pv, 1,
                                  t, part + p * oc, C, 0);
            if (bad) {
                #pragma omp atomic write
                failed = 1;
            }
        }
        free(v);
        free(gt);
        free(buf.in);
        free(buf.grad);
        #pragma omp barrier  /* every chunk's partial is in */
        /* ((p0 + p1) + p2) + ...: the split form's order (OrderedSum) */
        #pragma omp for schedule(dynamic, sb_wf_piece(size, 4096))
        for (e = 0; e < size; e++) {
            float s = partial[e];
            for (k = 1; k < nchunks; k++) s += partial[(ptrdiff_t)k * size + e];
            total[e] = s;
        }
        sb_wf_fold(total, O, C, tile, dw);
    }
    sb_wf_sources_free(&src);
    return failed ? -1 : 0;
}

/* sb_wino_wgrad_f32's point sums in the split form, in one OpenMP region: chunks of
 * `chunk` samples one after another, each step shared among the threads (both
 * transforms by channels, the point GEMMs by points, then the chunk's products added
 * into total by elements), as _winograd.py's split form runs them from Python: total =
 * ((p0 + p1) + p2) + ..., the partials of the chunks in order (its OrderedSum), the
 * same bits.  `partial` (points x O x C) is scratch.  Returns 0, or -1 when a buffer
 * could not be allocated. */
static int sb_wino_wgrad_split_f32(const float *x, int N, int C, int H, int W, int ph, int pw,
                                   const float *g, int O, int Ho, int Wo, int tile,
                                   int tiles_h, int tiles_w, int chunk, int gemm,
                                   int dot_full, int dot_last, int portable, float *partial,
                                   float *total, float *dw, int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const int nchunks = (N + chunk - 1) / chunk;
    const ptrdiff_t tmax = (ptrdiff_t)chunk * per_plane, oc = (ptrdiff_t)O * C;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * tmax), pg = sb_wf_pitch((ptrdiff_t)O * tmax);
    const ptrdiff_t size = points * oc;
    float *v = (float *)malloc((size_t)(points * pv) * sizeof(float));
    float *gt = (float *)malloc((size_t)(points * pg) * sizeof(float));
    sb_wf_sources src;
    int failed = 0;
    if (v == NULL || gt == NULL
        || sb_wf_sources_init(&src, C, H, W, ph, pw, O, Ho, Wo, tile, tiles_h, tiles_w, chunk,
                              chunk, portable) != 0) {
        free(v);
        free(gt);
        return -1;
    }
    #pragma omp parallel num_threads(num_threads)
    {
        const sb_wf_staging buf = sb_wf_staging_new(&src, chunk, chunk, &failed);
        const int ok = buf.in != NULL && buf.grad != NULL;
        const int piece_c = sb_wf_piece(C + O, 1), piece_e = sb_wf_piece(size, 4096);
        int k, c, p;
        ptrdiff_t e;
        for (k = 0; k < nchunks; k++) {   /* every thread meets every worksharing loop */
            int n0, nb, th0, th1;
            sb_wf_chunk(k, N, chunk, 0, tiles_h, &n0, &nb, &th0, &th1);
            const ptrdiff_t t = (ptrdiff_t)nb * per_plane;
            const int dot = t == tmax ? dot_full : dot_last;
            float *out = k == 0 ? total : partial;
            #pragma omp for schedule(dynamic, piece_c)
            for (c = 0; c < C + O; c++) {
                if (!ok) continue;
                if (c < C)
                    sb_wf_source_channel(&src.in, x, c, n0, nb, 0, tiles_h, buf.in, v, pv);
                else
                    sb_wf_source_channel(&src.grad, g, c - C, n0, nb, 0, tiles_h, buf.grad, gt,
                                         pg);
            }
            #pragma omp for schedule(dynamic, 1)
            for (p = 0; p < points; p++)  /* out[p] = Gt[p] @ V[p]^T */
                if (sb_wf_gemm(gemm, dot, O, C, (int)t, gt + p * pg, t, 1, v + p * pv, 1, t,
                               out + p * oc, C, 0) != 0) {
                    #pragma omp atomic write
                    failed = 1;
                }
            if (k > 0) {
                #pragma omp for schedule(dynamic, piece_e)
                for (e = 0; e < size; e++)
                    total[e] += partial[e];
            }
        }
        sb_wf_fold(total, O, C, tile, dw);
        free(buf.in);
        free(buf.grad);
    }
    sb_wf_sources_free(&src);
    free(v);
    free(gt);
    return failed ? -1 : 0;
}

#endif
