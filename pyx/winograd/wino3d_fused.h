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

/* The depth terms of a slab, as _winograd3d._depth_terms: kz in the order 1, 0, 2, each
 * the output planes [za, zb) whose input plane z - pd + kz exists and that input plane
 * iz for za.  Returns how many (0 to 3). */
static int sb_w3_terms(int pd, int depth_in, int z0, int nz, int kz_of[3], int za_of[3],
                       int zb_of[3], int iz_of[3])
{
    static const int order[3] = {1, 0, 2};
    int i, count = 0;
    for (i = 0; i < 3; i++) {
        const int kz = order[i];
        const int za = z0 > pd - kz ? z0 : pd - kz;
        const int zb = z0 + nz < depth_in + pd - kz ? z0 + nz : depth_in + pd - kz;
        if (za < zb) {
            kz_of[count] = kz; za_of[count] = za; zb_of[count] = zb;
            iz_of[count] = za - pd + kz;
            count++;
        }
    }
    return count;
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
    int most = 1, k;
    for (k = 0; k < nslabs; k++)
        if (slabs[k].nz > most) most = slabs[k].nz;
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
            sb_wf_transform_weights(&wt[i], tile);
        for (j = 0; j < nslabs; j++) {   /* every thread meets every worksharing loop */
            const int s = slabs[j].s, z0 = slabs[j].z0, nz = slabs[j].nz;
            const int first = z0 - pd > 0 ? z0 - pd : 0;
            const int last = z0 + nz - pd + 2 < D ? z0 + nz - pd + 2 : D;
            const ptrdiff_t tv = (ptrdiff_t)(last - first) * per_plane;
            const ptrdiff_t tm = (ptrdiff_t)nz * per_plane;
            int kz[3], za[3], zb[3], iz[3];
            const int terms = sb_w3_terms(pd, D, z0, nz, kz, za, zb, iz);
            const int covered = terms > 0 && za[0] == z0 && zb[0] == z0 + nz;
            const float *xs = x + ((ptrdiff_t)s * C * D + first) * H * W;
            #pragma omp for schedule(dynamic, piece_c)
            for (c = 0; c < C; c++)
                if (ok && last > first)
                    sb_wf_source_channel(&in, xs, c, 0, last - first, 0, tiles_h, in_buf, v,
                                         pv);
            #pragma omp for schedule(dynamic, 1)
            for (p = 0; p < points; p++) {  /* M[p] (+)= U_kz[p] @ V[p] shifted by kz */
                float *mp = m + p * pm;
                if (!covered)
                    memset(mp, 0, (size_t)O * tm * sizeof(float));
                for (i = 0; i < terms; i++) {
                    const ptrdiff_t cols = (ptrdiff_t)(zb[i] - za[i]) * per_plane;
                    const int full = i == 0 && covered;
                    const int bad = gemm == 2
                        ? sb_sgemm_avx2(O, (int)cols, C, u[kz[i]] + p * up, uo, uc,
                                        v + p * pv + (ptrdiff_t)(iz[i] - first) * per_plane,
                                        tv, 1, mp + (ptrdiff_t)(za[i] - z0) * per_plane, tm,
                                        !full)
                        : sb_sgemm_avx512(O, (int)cols, C, u[kz[i]] + p * up, uo, uc,
                                          v + p * pv + (ptrdiff_t)(iz[i] - first) * per_plane,
                                          tv, 1, mp + (ptrdiff_t)(za[i] - z0) * per_plane, tm,
                                          !full);
                    if (bad) {
                        #pragma omp atomic write
                        failed = 1;
                    }
                }
            }
            #pragma omp for schedule(dynamic, piece_o)
            for (o = 0; o < O; o++)
                if (ok)
                    sb_wf_out_channel_at(m, pm, tm, o,
                                         y + (((ptrdiff_t)s * O + o) * Do + z0) * Ho * Wo,
                                         (ptrdiff_t)Ho * Wo, Ho, Wo, nz, 0, tiles_h, tile,
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
 * 3 x 3) too, in the same region.  Returns 0, or -1 when a buffer could not be allocated. */
static int sb_wino3d_wgrad_f32(const float *x, int N, int C, int D, int H, int W, int pd,
                               int ph, int pw, const float *g, int O, int Do, int Ho, int Wo,
                               int tile, int tiles_h, int tiles_w, const sb_w3_slab *slabs,
                               int nslabs, int gemm, int portable, float *total,
                               float *partial, float *dw, int num_threads)
{
    const int points = (tile + 2) * (tile + 2), per_plane = tiles_h * tiles_w;
    const ptrdiff_t oc = (ptrdiff_t)O * C, size = 3 * points * oc;
    int most = 1, k;
    for (k = 0; k < nslabs; k++)
        if (slabs[k].nz > most) most = slabs[k].nz;
    const ptrdiff_t vmax = (ptrdiff_t)(most + 2) * per_plane, gmax = (ptrdiff_t)most * per_plane;
    const ptrdiff_t pv = sb_wf_pitch((ptrdiff_t)C * vmax), pg = sb_wf_pitch((ptrdiff_t)O * gmax);
    float *v = (float *)malloc((size_t)(points * pv) * sizeof(float));
    float *gt = (float *)malloc((size_t)(points * pg) * sizeof(float));
    sb_wf_source in, grad;
    int failed = 0;
    in.off = grad.off = NULL;
    if (v == NULL || gt == NULL
        || sb_wf_source_init(&in, C, H, W, ph, pw, tile, tiles_h, tiles_w, 2, most + 2,
                             portable) != 0
        || sb_wf_source_init(&grad, O, Ho, Wo, 0, 0, tile, tiles_h, tiles_w, 0, most,
                             portable) != 0) {
        free(in.off);
        free(v);
        free(gt);
        return -1;
    }
    in.sample = (ptrdiff_t)H * W;          /* a slab's units are depth planes ... */
    in.channel = (ptrdiff_t)D * H * W;     /* ... of one sample */
    grad.sample = (ptrdiff_t)Ho * Wo;
    grad.channel = (ptrdiff_t)Do * Ho * Wo;
    #pragma omp parallel num_threads(num_threads)
    {
        const size_t in_floats = sb_wf_source_floats(&in, most + 2);
        const size_t g_floats = sb_wf_source_floats(&grad, most);
        float *in_buf = sb_wf_buffer(in_floats, 1, &failed);
        float *g_buf = sb_wf_buffer(g_floats, 1, &failed);
        const int ok = in_buf != NULL && g_buf != NULL;
        const int piece_c = sb_wf_piece(C + O, 1), piece_e = sb_wf_piece(size, 4096);
        int j, c, p, i, t;
        ptrdiff_t e;
        for (j = 0; j < nslabs; j++) {   /* every thread meets every worksharing loop */
            const int s = slabs[j].s, z0 = slabs[j].z0, nz = slabs[j].nz;
            const int first = z0 - pd > 0 ? z0 - pd : 0;
            const int last = z0 + nz - pd + 2 < D ? z0 + nz - pd + 2 : D;
            const ptrdiff_t tv = (ptrdiff_t)(last - first) * per_plane;
            const ptrdiff_t tg = (ptrdiff_t)nz * per_plane;
            int kz[3], za[3], zb[3], iz[3];
            const int terms = sb_w3_terms(pd, D, z0, nz, kz, za, zb, iz);
            float *out = j == 0 ? total : partial;
            const float *xs = x + ((ptrdiff_t)s * C * D + first) * H * W;
            const float *gs = g + ((ptrdiff_t)s * O * Do + z0) * Ho * Wo;
            #pragma omp for schedule(dynamic, piece_c)
            for (c = 0; c < C + O; c++) {
                if (!ok) continue;
                if (c < C) {
                    if (last > first)
                        sb_wf_source_channel(&in, xs, c, 0, last - first, 0, tiles_h, in_buf,
                                             v, pv);
                } else {
                    sb_wf_source_channel(&grad, gs, c - C, 0, nz, 0, tiles_h, g_buf, gt, pg);
                }
            }
            #pragma omp for schedule(dynamic, 1)
            for (p = 0; p < points; p++) {  /* out[kz][p] += Gt[p] @ V[p]^T, shifted by kz */
                for (t = 0; t < 3; t++)
                    memset(out + ((ptrdiff_t)t * points + p) * oc, 0, (size_t)oc * sizeof(float));
                for (i = 0; i < terms; i++) {
                    const int cols = (zb[i] - za[i]) * per_plane;
                    const float *a = gt + p * pg + (ptrdiff_t)(za[i] - z0) * per_plane;
                    const float *b = v + p * pv + (ptrdiff_t)(iz[i] - first) * per_plane;
                    float *cp = out + ((ptrdiff_t)kz[i] * points + p) * oc;
                    int bad = 0;
                    if (sb_w3_dot_form(O, C, cols)) {
                        if (gemm == 2)
                            sb_sgemm_dot_avx2(O, C, cols, a, tg, b, tv, cp, C, 1);
                        else
                            sb_sgemm_dot_avx512(O, C, cols, a, tg, b, tv, cp, C, 1);
                    } else {
                        bad = gemm == 2
                            ? sb_sgemm_avx2(O, C, cols, a, tg, 1, b, 1, tv, cp, C, 1)
                            : sb_sgemm_avx512(O, C, cols, a, tg, 1, b, 1, tv, cp, C, 1);
                    }
                    if (bad) {
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
        if (dw != NULL)  /* each tap's fold into dw[kz] (O x C x 3 x 3), after the barrier */
            for (t = 0; t < 3; t++)
                sb_wf_fold(total + (ptrdiff_t)t * points * oc, O, C, tile,
                           dw + (ptrdiff_t)t * oc * 9);
        free(in_buf);
        free(g_buf);
    }
    free(in.off);
    free(grad.off);
    free(v);
    free(gt);
    return failed ? -1 : 0;
}

#endif
