/* The 3x3x3 convolution of sandbox/array/conv/_winograd3d.py in one OpenMP region: the
 * same steps as its split form from Python, with the same code for every channel, point
 * and tile, so the same bits, without a kernel call and its Python for every step of
 * every slab (the 3-D UNet step at 32^3 had made 622 kernel calls from Python, 23 % of
 * its time outside the kernels at 1 thread).
 *
 * y[n, :, z] = sum over the kernel depths kz of the 2-D convolution of input plane
 * z - pd + kz with w[:, :, kz]: in the transformed domain three products a point whose
 * column ranges are shifted by kz planes.  Slabs (sample s, output planes z0 .. z0+nz-1)
 * one after another, each step shared among the threads: the input planes' transform by
 * channels, the products by points (one term after another, in _depth_terms' order: the
 * centre tap first), the output transform by output channels, a barrier between. */
#ifndef SANDBOX_WINO3D_FUSED_H
#define SANDBOX_WINO3D_FUSED_H

#include "wino_fused.h"

/* One slab: sample s, output planes z0 .. z0+nz-1. */
typedef struct {
    int s, z0, nz;
} sb_w3_slab;

/* What a slab reads and adds: its input planes first .. last-1 (those inside the volume),
 * and its depth terms as _winograd3d._depth_terms gives them (kz in the order 1, 0, 2: the
 * centre tap first), each the output planes [za, zb) whose input plane z - pd + kz exists
 * and that input plane iz for za. */
typedef struct {
    int s, z0, nz, first, last, terms;
    int kz[3], za[3], zb[3], iz[3];
} sb_w3_span;

static void sb_w3_span_of(const sb_w3_slab *slab, int pd, int depth_in, sb_w3_span *q)
{
    static const int order[3] = {1, 0, 2};
    int i;
    q->s = slab->s; q->z0 = slab->z0; q->nz = slab->nz;
    q->first = q->z0 - pd > 0 ? q->z0 - pd : 0;
    q->last = q->z0 + q->nz - pd + 2 < depth_in ? q->z0 + q->nz - pd + 2 : depth_in;
    q->terms = 0;
    for (i = 0; i < 3; i++) {
        const int kz = order[i];
        const int za = q->z0 > pd - kz ? q->z0 : pd - kz;
        const int zb = q->z0 + q->nz < depth_in + pd - kz ? q->z0 + q->nz : depth_in + pd - kz;
        if (za < zb) {
            q->kz[q->terms] = kz; q->za[q->terms] = za; q->zb[q->terms] = zb;
            q->iz[q->terms] = za - pd + kz;
            q->terms++;
        }
    }
}

/* The most output planes a slab has (at least 1). */
static int sb_w3_most_planes(const sb_w3_slab *slabs, int nslabs)
{
    int most = 1, k;
    for (k = 0; k < nslabs; k++)
        if (slabs[k].nz > most) most = slabs[k].nz;
    return most;
}

/* y (N, O, Do, Ho, Wo) = the 3x3x3 convolution of x (N, C, D, H, W; padding pd, ph, pw)
 * whose depth taps' transformed kernels are u[kz] (P x O x C, element (p, o, c) at
 * u[kz] + p*up + o*uo + c*uc), by F(tile x tile, 3x3) in-plane, slab by slab (slabs:
 * nslabs of them, _winograd3d._slabs' order).  gemm: 1 the AVX-512 kernel, 2 the AVX2
 * one (the packed form: the products' columns are not contiguous along k); portable: the
 * portable transforms; wt[kz]: tap kz's weight transform to run first in the region, into
 * the memory u[kz] points to (wt[kz].w NULL: none, u[kz] is given).  Returns 0, or -1
 * when a buffer could not be allocated (y is then incomplete). */
static int sb_wino3d_conv_f32(const float *x, int N, int C, int D, int H, int W, int pd,
                              int ph, int pw, const float *const u[3], ptrdiff_t up,
                              ptrdiff_t uo, ptrdiff_t uc, float *y, int O, int Do, int Ho,
                              int Wo, int tile, int tiles_h, int tiles_w,
                              const sb_w3_slab *slabs, int nslabs, int gemm, int portable,
                              const sb_wf_weights wt[3], int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const int most = sb_w3_most_planes(slabs, nslabs);
    /* a slab reads at most nz + 2 input planes */
    const ptrdiff_t vmax = (ptrdiff_t)(most + 2) * per_plane, mmax = (ptrdiff_t)most * per_plane;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * vmax), pm = sb_wf_pitch((ptrdiff_t)O * mmax);
    const size_t out_floats = sb_wf_out_floats(tile, tiles_h, tiles_w, portable);
    float *v = (float *)malloc((size_t)(points * pv) * sizeof(float));
    float *m = (float *)malloc((size_t)(points * pm) * sizeof(float));
    sb_wf_source in;
    int failed = 0;
    if (v == NULL || m == NULL
        || sb_wf_source_init(&in, C, H, W, ph, pw, tile, tiles_h, tiles_w, 2, most + 2,
                             portable) != 0) {
        free(v);
        free(m);
        return -1;
    }
    in.sample = (ptrdiff_t)H * W;        /* a slab's units are depth planes ... */
    in.channel = (ptrdiff_t)D * H * W;   /* ... of one sample */
    #pragma omp parallel num_threads(num_threads)
    {
        const size_t in_floats = sb_wf_source_floats(&in, most + 2);
        float *in_buf = sb_wf_buffer(in_floats, 1, &failed);
        float *out_buf = sb_wf_buffer(out_floats, 0, &failed);
        const int ok = in_buf != NULL && out_buf != NULL;
        const int piece_c = sb_wf_piece(C, 1), piece_o = sb_wf_piece(O, 1);
        int j, c, p, o, i;
        for (i = 0; i < 3; i++)  /* the depth taps' transformed kernels, if not given */
            sb_wf_transform_weights(&wt[i], tile, 1);
        for (j = 0; j < nslabs; j++) {   /* every thread meets every worksharing loop */
            sb_w3_span q;
            sb_w3_span_of(&slabs[j], pd, D, &q);
            const ptrdiff_t tv = (ptrdiff_t)(q.last - q.first) * per_plane;
            const ptrdiff_t tm = (ptrdiff_t)q.nz * per_plane;
            const int covered = q.terms > 0 && q.za[0] == q.z0 && q.zb[0] == q.z0 + q.nz;
            const float *xs = x + ((ptrdiff_t)q.s * C * D + q.first) * H * W;
            #pragma omp for schedule(dynamic, piece_c)
            for (c = 0; c < C; c++)
                if (ok && q.last > q.first)
                    sb_wf_source_channel(&in, xs, c, 0, q.last - q.first, 0, tiles_h, in_buf, v,
                                         pv);
            #pragma omp for schedule(dynamic, 1)
            for (p = 0; p < points; p++) {  /* M[p] (+)= U_kz[p] @ V[p], shifted by kz planes */
                float *mp = m + p * pm;
                if (!covered)
                    memset(mp, 0, (size_t)O * tm * sizeof(float));
                for (i = 0; i < q.terms; i++) {
                    const int cols = (q.zb[i] - q.za[i]) * per_plane, full = i == 0 && covered;
                    const float *a = u[q.kz[i]] + p * up;
                    const float *b = v + p * pv + (ptrdiff_t)(q.iz[i] - q.first) * per_plane;
                    float *cp = mp + (ptrdiff_t)(q.za[i] - q.z0) * per_plane;
                    if (sb_wf_gemm(gemm, 0, O, cols, C, a, uo, uc, b, tv, 1, cp, tm, !full)) {
                        #pragma omp atomic write
                        failed = 1;
                    }
                }
            }
            #pragma omp for schedule(dynamic, piece_o)
            for (o = 0; o < O; o++)
                if (ok)
                    sb_wf_out_channel_at(m, pm, tm, o,
                                         y + (((ptrdiff_t)q.s * O + o) * Do + q.z0) * Ho * Wo,
                                         (ptrdiff_t)Ho * Wo, Ho, Wo, q.nz, 0, tiles_h, tile,
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

/* Whether sandbox/array/_gemm.py's product_form gives the dot-product form to an
 * (m x k) @ (k x n) product whose operands are contiguous along k (the weight gradient's
 * products here): its rule, written again, checked against it by the tests. */
static inline int sb_w3_dot_form(int m, int n, int k)
{
    const int small = m < n ? m : n, large = m < n ? n : m;
    return k >= 2 * small && !(small >= 64 && large >= 3 * small);
}

/* The weight gradient's point sums of sb_wino3d_conv_f32's convolution for the output
 * gradient g (N, O, Do, Ho, Wo): total[kz][p] (O x C; total holds 3 x P x O x C) = the
 * sum over the slabs, in slab order, of each slab's Gt[p] @ V[p]^T over the output planes
 * whose input plane z - pd + kz exists, as _winograd3d.conv3x3x3_weight_grad's split
 * form: the first slab's products added into total zeroed, every other slab's into
 * `partial` (the same size, scratch) zeroed, then added into total.  gemm, portable as
 * for sb_wino3d_conv_f32; each product takes the dot-product or the packed kernel by
 * product_form's rule; dw (not NULL): each tap's fold of total[kz] into dw[kz] (3 x O x C x
 * 3 x 3) too, in the same region, and with gw (not NULL) the folds copied into gw in the
 * weight's layout (O x C x 3 x 3 x 3: tap kz of kernel (o, c) at (o * C + c) * 27 + kz * 9).
 * Returns 0, or -1 when a buffer could not be allocated. */
static int sb_wino3d_wgrad_f32(const float *x, int N, int C, int D, int H, int W, int pd,
                               int ph, int pw, const float *g, int O, int Do, int Ho, int Wo,
                               int tile, int tiles_h, int tiles_w, const sb_w3_slab *slabs,
                               int nslabs, int gemm, int portable, float *total,
                               float *partial, float *dw, float *gw, int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const ptrdiff_t oc = (ptrdiff_t)O * C, size = 3 * points * oc;
    const int most = sb_w3_most_planes(slabs, nslabs);
    const ptrdiff_t vmax = (ptrdiff_t)(most + 2) * per_plane, gmax = (ptrdiff_t)most * per_plane;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * vmax), pg = sb_wf_pitch((ptrdiff_t)O * gmax);
    float *v = (float *)malloc((size_t)(points * pv) * sizeof(float));
    float *gt = (float *)malloc((size_t)(points * pg) * sizeof(float));
    sb_wf_sources src;
    int failed = 0;
    if (v == NULL || gt == NULL
        || sb_wf_sources_init(&src, C, H, W, ph, pw, O, Ho, Wo, tile, tiles_h, tiles_w,
                              most + 2, most, portable) != 0) {
        free(v);
        free(gt);
        return -1;
    }
    src.in.sample = (ptrdiff_t)H * W;          /* a slab's units are depth planes ... */
    src.in.channel = (ptrdiff_t)D * H * W;     /* ... of one sample */
    src.grad.sample = (ptrdiff_t)Ho * Wo;
    src.grad.channel = (ptrdiff_t)Do * Ho * Wo;
    #pragma omp parallel num_threads(num_threads)
    {
        const sb_wf_staging buf = sb_wf_staging_new(&src, most + 2, most, &failed);
        const int ok = buf.in != NULL && buf.grad != NULL;
        const int piece_c = sb_wf_piece(C + O, 1), piece_e = sb_wf_piece(size, 4096);
        int j, c, p, i, t;
        ptrdiff_t e;
        for (j = 0; j < nslabs; j++) {   /* every thread meets every worksharing loop */
            sb_w3_span q;
            sb_w3_span_of(&slabs[j], pd, D, &q);
            const ptrdiff_t tv = (ptrdiff_t)(q.last - q.first) * per_plane;
            const ptrdiff_t tg = (ptrdiff_t)q.nz * per_plane;
            float *out = j == 0 ? total : partial;
            const float *xs = x + ((ptrdiff_t)q.s * C * D + q.first) * H * W;
            const float *gs = g + ((ptrdiff_t)q.s * O * Do + q.z0) * Ho * Wo;
            #pragma omp for schedule(dynamic, piece_c)
            for (c = 0; c < C + O; c++) {
                if (!ok) continue;
                if (c < C) {
                    if (q.last > q.first)
                        sb_wf_source_channel(&src.in, xs, c, 0, q.last - q.first, 0, tiles_h,
                                             buf.in, v, pv);
                } else {
                    sb_wf_source_channel(&src.grad, gs, c - C, 0, q.nz, 0, tiles_h, buf.grad, gt,
                                         pg);
                }
            }
            #pragma omp for schedule(dynamic, 1)
            for (p = 0; p < points; p++) {  /* out[kz][p] += Gt[p] @ V[p]^T, shifted by kz planes */
                for (t = 0; t < 3; t++)
                    memset(out + ((ptrdiff_t)t * points + p) * oc, 0, (size_t)oc * sizeof(float));
                for (i = 0; i < q.terms; i++) {
                    const int cols = (q.zb[i] - q.za[i]) * per_plane;
                    const float *a = gt + p * pg + (ptrdiff_t)(q.za[i] - q.z0) * per_plane;
                    const float *b = v + p * pv + (ptrdiff_t)(q.iz[i] - q.first) * per_plane;
                    float *cp = out + ((ptrdiff_t)q.kz[i] * points + p) * oc;
                    if (sb_wf_gemm(gemm, sb_w3_dot_form(O, C, cols), O, C, cols, a, tg, 1, b, 1,
                                   tv, cp, C, 1)) {
                        #pragma omp atomic write
                        failed = 1;
                    }
                }
            }
            if (j > 0) {  /* total = ((p0 + p1) + p2) + ...: the split form's OrderedSum */
                #pragma omp for schedule(dynamic, piece_e)
                for (e = 0; e < size; e++)
                    total[e] += partial[e];
            }
        }
        if (dw != NULL) {  /* each tap's fold into dw[kz] (O x C x 3 x 3), after the barrier */
            for (t = 0; t < 3; t++)
                sb_wf_fold(total + (ptrdiff_t)t * points * oc, O, C, tile,
                           dw + (ptrdiff_t)t * oc * 9);
            if (gw != NULL) {  /* the folds (each ends in a barrier) in the weight's layout */
                #pragma omp for schedule(static)
                for (e = 0; e < oc; e++)
                    for (t = 0; t < 3; t++)
                        memcpy(gw + e * 27 + t * 9, dw + (ptrdiff_t)t * oc * 9 + e * 9,
                               9 * sizeof(float));
            }
        }
        free(buf.in);
        free(buf.grad);
    }
    sb_wf_sources_free(&src);
    free(v);
    free(gt);
    return failed ? -1 : 0;
}

#endif
