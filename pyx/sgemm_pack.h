/* What the float32 GEMMs (sgemm_avx512.h, sgemm_avx2.h) share: the blocking sizes
 * along K and N, the thread-local packing buffers, and the packing of A and B panels
 * (plain copies: packing never changes a value, only where it is stored).
 *
 * Strides are in elements; A(i, k) = a[i*sa0 + k*sa1], B(k, j) = b[k*sb0 + j*sb1].
 */
#ifndef SANDBOX_SGEMM_PACK_H
#define SANDBOX_SGEMM_PACK_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SB_KC 256
#define SB_MC 144  /* the most rows of A packed at once: 144 x 256 x 4 B = 144 KiB (L2) */
#define SB_NC 1024 /* columns of B packed at once: 1024 x 256 x 4 B = 1 MiB */

/* Stand-ins for a kernel pair where it cannot be compiled (not x86 with GCC-compatible
 * intrinsics): the GEMM reports failure, the dot form does nothing; callers check the
 * kernel's availability first. */
#define SB_SGEMM_STUBS(GEMM, DOT)                                                          \
static void DOT(int m, int n, int kdim, const float *a, ptrdiff_t lda, const float *bt,    \
                ptrdiff_t ldb, float *c, ptrdiff_t ldc, int accumulate)                    \
{                                                                                          \
    (void)m; (void)n; (void)kdim; (void)a; (void)lda; (void)bt; (void)ldb; (void)c;        \
    (void)ldc; (void)accumulate;                                                           \
}                                                                                          \
static int GEMM(int m, int n, int kdim, const float *a, ptrdiff_t sa0, ptrdiff_t sa1,      \
                const float *b, ptrdiff_t sb0, ptrdiff_t sb1, float *c, ptrdiff_t sc0,     \
                int accumulate)                                                            \
{                                                                                          \
    (void)m; (void)n; (void)kdim; (void)a; (void)sa0; (void)sa1; (void)b; (void)sb0;       \
    (void)sb1; (void)c; (void)sc0; (void)accumulate;                                       \
    return -1;                                                                             \
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))  /* the kernels' targets */
#include <immintrin.h>

/* This thread's packing buffers (SB_MC x SB_KC floats of A, SB_NC x SB_KC of B),
 * allocated on first use and kept (a fresh 1 MiB block per call cost more than a
 * small GEMM: glibc returns such blocks to the kernel on free, so every call paid its
 * page faults again).  At most 1.2 MiB per thread that ever runs a GEMM, whichever
 * kernels it runs (one GEMM at a time per thread). */
static int sb_buffers(float **ap, float **bp)
{
    static __thread float *tls_ap = NULL, *tls_bp = NULL;
    if (tls_ap == NULL) {
        tls_ap = (float *)aligned_alloc(64, (size_t)SB_MC * SB_KC * sizeof(float));
        tls_bp = (float *)aligned_alloc(64, (size_t)SB_NC * SB_KC * sizeof(float));
        if (tls_ap == NULL || tls_bp == NULL) {
            free(tls_ap);
            free(tls_bp);
            tls_ap = tls_bp = NULL;
            return -1;
        }
    }
    *ap = tls_ap;
    *bp = tls_bp;
    return 0;
}

/* B(k0.., j0..) -> kc x NR panel, k-major (bp[k*NR + j]), zero beyond nr columns. */
static inline void sb_pack_b(const float *b, ptrdiff_t sb0, ptrdiff_t sb1, int kc, int nr,
                             int NR, float *bp)
{
    int k, j;
    if (sb1 == 1) {
        for (k = 0; k < kc; k++) {
            const float *src = b + k * sb0;
            float *dst = bp + (ptrdiff_t)k * NR;
            memcpy(dst, src, (size_t)nr * sizeof(float));
            for (j = nr; j < NR; j++) dst[j] = 0.0f;
        }
    } else {
        for (j = 0; j < nr; j++) {
            const float *src = b + j * sb1;
            for (k = 0; k < kc; k++) bp[(ptrdiff_t)k * NR + j] = src[k * sb0];
        }
        for (j = nr; j < NR; j++)
            for (k = 0; k < kc; k++) bp[(ptrdiff_t)k * NR + j] = 0.0f;
    }
}

/* A(i0.., k0..) -> kc x MR panel, k-major (ap[k*MR + r]), zero beyond mr rows. */
static void sb_pack_a(const float *a, ptrdiff_t sa0, ptrdiff_t sa1, int mr, int kc, int MR,
                      float *ap)
{
    int k, r;
    if (sa0 == 1) {
        for (k = 0; k < kc; k++) {
            const float *src = a + k * sa1;
            float *dst = ap + (ptrdiff_t)k * MR;
            for (r = 0; r < mr; r++) dst[r] = src[r];
            for (r = mr; r < MR; r++) dst[r] = 0.0f;
        }
    } else {
        for (r = 0; r < mr; r++) {
            const float *src = a + r * sa0;
            for (k = 0; k < kc; k++) ap[(ptrdiff_t)k * MR + r] = src[k * sa1];
        }
        for (r = mr; r < MR; r++)
            for (k = 0; k < kc; k++) ap[(ptrdiff_t)k * MR + r] = 0.0f;
    }
}

/* Adds (acc) or copies the first mr x nr values of a local tile (row stride ldt) into C. */
static inline void sb_tile_out(const float *tile, int ldt, int mr, int nr, float *c,
                               ptrdiff_t sc0, int acc)
{
    int i, j;
    for (i = 0; i < mr; i++) {
        float *row = c + i * sc0;
        if (acc)
            for (j = 0; j < nr; j++) row[j] += tile[i * ldt + j];
        else
            for (j = 0; j < nr; j++) row[j] = tile[i * ldt + j];
    }
}

/* The products with nothing to sum: 1 when C needs no more (m or n is 0, or k is 0:
 * C is then zeroed, or kept when accumulating), 0 when the GEMM has work to do. */
static int sb_gemm_trivial(int m, int n, int kdim, float *c, ptrdiff_t sc0, int accumulate)
{
    int i;
    if (m <= 0 || n <= 0) return 1;
    if (kdim > 0) return 0;
    if (!accumulate)
        for (i = 0; i < m; i++) memset(c + i * sc0, 0, (size_t)n * sizeof(float));
    return 1;
}

/* The sum of a vector's 8 lanes by a fixed tree: 8 -> 4 -> 2 -> 1. */
__attribute__((target("avx")))
static inline float sb_hsum8(__m256 s8)
{
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
}
#endif

#endif
