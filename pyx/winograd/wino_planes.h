/* The plane loop of the gathered Winograd transforms (wino2_avx512.h, wino4_avx512.h).
 *
 * Those transforms gather their tiles from planes copied into buffers that cover whole
 * tiles, with a zero margin where the convolution pads the input (or past the last
 * output row and column, for the output-gradient transforms).  This driver owns
 * everything around that call: the tile offsets, one buffer per thread whose margins
 * are zeroed once (only the data rows are ever rewritten), and the loop over channels
 * (shared by OpenMP threads: each channel is one thread's, so results do not depend
 * on their number).
 */
#ifndef SANDBOX_WINO_PLANES_H
#define SANDBOX_WINO_PLANES_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

/* n floats from src to dst (apart) in 16-float moves, the last one masked: the image rows
 * the gathered transforms copy into their zero-bordered blocks, and the output rows they
 * copy back, without a call into the C library per row (those calls, 28 to 256 bytes
 * each, some 700,000 a 64² user UNet training step at 1 thread, were 6-8 % of its
 * samples: the counts of a throwaway LD_PRELOAD shim by caller, AMD EPYC family 26 model
 * 2).  AVX-512: only the AVX-512 transforms (wino2_avx512.h, wino4_avx512.h) and their
 * plane loops below call it. */
__attribute__((target("avx512f")))
static inline void sb_copy_f32(float *dst, const float *src, ptrdiff_t n)
{
    ptrdiff_t k = 0;
    for (; k + 16 <= n; k += 16)
        _mm512_storeu_ps(dst + k, _mm512_loadu_ps(src + k));
    if (k < n) {
        const __mmask16 mk = (__mmask16)((1u << (n - k)) - 1u);
        _mm512_mask_storeu_ps(dst + k, mk, _mm512_maskz_loadu_ps(mk, src + k));
    }
}

/* The same copy for code that runs on any path (the weight transform's output runs,
 * wino_weights.h): eight floats a move where the CPU has AVX2 (so also under the AVX2
 * path; the values are only moved), memcpy elsewhere. */
__attribute__((target("avx2"), unused))
static void sb_copy_floats_avx2(float *dst, const float *src, ptrdiff_t n)
{
    ptrdiff_t k = 0;
    for (; k + 8 <= n; k += 8)
        _mm256_storeu_ps(dst + k, _mm256_loadu_ps(src + k));
    for (; k < n; k++)
        dst[k] = src[k];
}

/* Two two-source permutes by idx, of (x0, x1) into lanes 0-7 and of (y0, y1) into lanes
 * 8-15: the by-rows transforms' gather of 16 tiles' values from whole-register row loads
 * (wino2_avx512.h, wino4_avx512.h). */
__attribute__((target("avx512f")))
static inline __m512 sb_blend_pairs_avx512(__m512 x0, __m512 x1, __m512 y0, __m512 y1,
                                           __m512i idx)
{
    return _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(x0, idx, x1),
                                _mm512_permutex2var_ps(y0, idx, y1));
}

static inline void sb_copy_floats(float *dst, const float *src, ptrdiff_t n)
{
    if (__builtin_cpu_supports("avx2")) {  /* a flag set when the module loaded */
        sb_copy_floats_avx2(dst, src, n);
        return;
    }
    memcpy(dst, src, (size_t)n * sizeof(float));
}
#else
static inline void sb_copy_f32(float *dst, const float *src, ptrdiff_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}

static inline void sb_copy_floats(float *dst, const float *src, ptrdiff_t n)
{
    memcpy(dst, src, (size_t)n * sizeof(float));
}
#endif

/* Floats after the last block of a plane buffer: the by-rows transforms (wino4_avx512.h,
 * wino2_avx512.h) read whole registers, up to 14 floats past the row of a tile's last
 * patch row (the F(2x2) input transform's, 8 tiles a row). */
#define SB_PLANE_SLACK 16

/* The first tile of `count` groups of `step` consecutive tiles from t0 (tile rows, or for
 * the F(2x2) gradient of 2 tiles a row pairs of them), pad + off[t]: the rows the by-rows
 * transforms load a block of 16 tiles from; a group past the last tile takes the first
 * one's (its lanes are computed, never stored). */
static inline void sb_plane_tile_rows(const float *pad, const int *off, int ntiles, int t0,
                                      int step, int count, const float **row)
{
    int r;
    for (r = 0; r < count; r++)
        row[r] = pad + off[t0 + r * step < ntiles ? t0 + r * step : t0];
}

/* Transform one plane buffer (row length wp) at the tile offsets off[0 .. ntiles) into
 * v[xi * pitch + t]. */
typedef void (*sb_plane_fn)(const float *pad, ptrdiff_t wp, const int *off, int ntiles,
                            float *v, ptrdiff_t pitch);

/* One channel of nb samples (x: its plane in the first sample, samples sn apart): rows
 * row0 .. row1-1 of each plane into its block of pad (data rows only: the margins stay
 * as they are, zero; other data rows keep what they hold, for tiles that do not read
 * them), then fn over the ntiles tiles at off into v. */
static inline void sb_wino_in_channel(const float *x, ptrdiff_t sn, int cols, int nb,
                                      int row0, int row1, int copy_cols, int ph, int pw,
                                      ptrdiff_t hp, ptrdiff_t wp, float *pad, sb_plane_fn fn,
                                      const int *off, int ntiles, float *v, ptrdiff_t pitch)
{
    int s, r;
    for (s = 0; s < nb; s++) {
        const float *src = x + (ptrdiff_t)s * sn;
        float *block = pad + (ptrdiff_t)s * hp * wp;
        for (r = row0; r < row1; r++)
            sb_copy_f32(block + (r + ph) * wp + pw, src + (ptrdiff_t)r * cols, copy_cols);
    }
    fn(pad, wp, off, ntiles, v, pitch);
}

/* The tile offsets of sb_wino_in_channel's pad blocks: off[t] for the ntiles tiles of
 * consecutive samples, per_plane tiles (tiles_w a row) each. */
static inline void sb_wino_offsets(int *off, int ntiles, int per_plane, int tile, int tiles_w,
                                   ptrdiff_t hp, ptrdiff_t wp)
{
    int t;
    for (t = 0; t < ntiles; t++) {
        int s = t / per_plane, u = t % per_plane;
        off[t] = (int)((s * hp + tile * (u / tiles_w)) * wp + tile * (u % tiles_w));
    }
}

/* For samples n0 .. n0+nb-1 and channels c0 .. c1-1 of x (row-major (N, C, rows, cols),
 * strides in elements sn, sc): copy each sample's plane to rows ph.. and columns pw..
 * of its own (tile*tiles_h + halo) x (tile*tiles_w + halo) zero block, the nb blocks
 * stacked, and call fn once per channel for the nb * tiles_h * tiles_w tiles of all
 * samples (V's tile order runs across samples, so a register of 16 tiles is filled
 * even on 4x4 maps), writing v + c*vc with points pitch apart.  Input rows and columns
 * that fall past a block are not needed by any tile and are skipped.  Returns 0, or -1
 * when a buffer could not be allocated. */
static int sb_wino_planes(const float *x, ptrdiff_t sn, ptrdiff_t sc, int rows, int cols,
                          int n0, int nb, int c0, int c1, int ph, int pw, int tile,
                          int tiles_h, int tiles_w, int halo, sb_plane_fn fn, float *v,
                          ptrdiff_t vc, ptrdiff_t pitch, int num_threads)
{
    ptrdiff_t hp = (ptrdiff_t)tile * tiles_h + halo, wp = (ptrdiff_t)tile * tiles_w + halo;
    int per_plane = tiles_h * tiles_w, ntiles = nb * per_plane;
    int copy_rows = rows < hp - ph ? rows : (int)(hp - ph);
    int copy_cols = cols < wp - pw ? cols : (int)(wp - pw);
    int failed = 0;
    int *off = (int *)malloc((size_t)(ntiles > 0 ? ntiles : 1) * sizeof(int));
    if (off == NULL) return -1;
    sb_wino_offsets(off, ntiles, per_plane, tile, tiles_w, hp, wp);
    #pragma omp parallel num_threads(num_threads)
    {
        float *pad = (float *)malloc((size_t)(nb * hp * wp + SB_PLANE_SLACK) * sizeof(float));
        int c;
        if (pad == NULL) {
            #pragma omp atomic write
            failed = 1;
        } else {
            memset(pad, 0, (size_t)(nb * hp * wp + SB_PLANE_SLACK) * sizeof(float));
        }
        #pragma omp for schedule(static)
        for (c = c0; c < c1; c++) {
            if (pad == NULL) continue;   /* every thread still meets the worksharing loop */
            sb_wino_in_channel(x + (ptrdiff_t)n0 * sn + (ptrdiff_t)c * sc, sn, cols, nb,
                               0, copy_rows, copy_cols, ph, pw, hp, wp, pad, fn, off, ntiles,
                               v + (ptrdiff_t)c * vc, pitch);
        }
        free(pad);
    }
    free(off);
    return failed ? -1 : 0;
}

/* Write one output plane (row length w, tile*tiles_h rows) from M[xi] = m[xi*pitch + t]. */
typedef void (*sb_out_plane_fn)(const float *m, ptrdiff_t pitch, int tiles_h, int tiles_w,
                                float *ypl, ptrdiff_t w);

/* One output channel of nb samples (m: its row of M in the first sample's tiles; y: its
 * plane in the first sample, samples sn apart): fn straight into y, or, when buf is not
 * NULL, into buf (whole tiles, row length wp) and clipped from there. */
static inline void sb_wino_out_channel(const float *m, ptrdiff_t pitch, float *y, ptrdiff_t sn,
                                       int rows, int cols, int nb, int tiles_h, int tiles_w,
                                       ptrdiff_t wp, float *buf, sb_out_plane_fn fn)
{
    int s, r, ntiles = tiles_h * tiles_w;
    for (s = 0; s < nb; s++) {
        const float *ms = m + (ptrdiff_t)s * ntiles;
        float *dst = y + (ptrdiff_t)s * sn;
        if (buf == NULL) {
            fn(ms, pitch, tiles_h, tiles_w, dst, cols);
        } else {
            fn(ms, pitch, tiles_h, tiles_w, buf, wp);
            for (r = 0; r < rows; r++)
                sb_copy_f32(dst + (ptrdiff_t)r * cols, buf + r * wp, cols);
        }
    }
}

/* The output transforms' plane loop: for samples n0 .. n0+nb-1 and channels c0 .. c1-1,
 * fn writes the plane of y (row-major (N, C, rows, cols), strides sn, sc) from
 * m + c*mc + s*tiles: straight into y when the tiles cover it exactly, else through a
 * per-thread buffer of whole tiles, clipped on the way out.  Returns 0, or -1 when a
 * buffer could not be allocated. */
static int sb_wino_out_planes(const float *m, ptrdiff_t mc, ptrdiff_t pitch, float *y,
                              ptrdiff_t sn, ptrdiff_t sc, int rows, int cols, int n0, int nb,
                              int c0, int c1, int tile, int tiles_h, int tiles_w,
                              sb_out_plane_fn fn, int num_threads)
{
    ptrdiff_t hp = (ptrdiff_t)tile * tiles_h, wp = (ptrdiff_t)tile * tiles_w;
    int exact = rows == hp && cols == wp;
    int failed = 0;
    #pragma omp parallel num_threads(num_threads)
    {
        float *buf = exact ? NULL : (float *)malloc((size_t)(hp * wp) * sizeof(float));
        int c;
        if (!exact && buf == NULL) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (c = c0; c < c1; c++) {
            if (!exact && buf == NULL) continue;   /* still meet the worksharing loop */
            sb_wino_out_channel(m + (ptrdiff_t)c * mc, pitch, y + (ptrdiff_t)n0 * sn
                                + (ptrdiff_t)c * sc, sn, rows, cols, nb, tiles_h, tiles_w,
                                wp, buf, fn);
        }
        free(buf);
    }
    return failed ? -1 : 0;
}

#endif
