/* Single-precision GEMM with AVX2 + FMA register blocking:  C = op(A) @ op(B) (+ C).
 *
 * The AVX-512 kernel's counterpart (sgemm_avx512.h: why the project has a GEMM of its
 * own) for CPUs without AVX-512: most laptops, AMD before Zen 4, Intel client cores.
 * Same interface, same guarantees; the blocking sizes along K and N, the packing and
 * the thread-local buffers are sgemm_pack.h's, shared with the AVX-512 kernel.
 *
 * Layout (the classic Goto/BLIS blocking, written from the published scheme):
 *   for each block of NC = 1008 columns of B, and each block of KC = 256 rows of B
 *   (k loop, summed in order):
 *     pack B[k-block, n-block] into panels of NR = 24 columns, k-major (Bp[k][24])
 *     (when m fits one block of rows, each panel right before its micro-kernels, into
 *     one slot still in L1 when they read it: measured 1 thread, GFLOP/s, 85 -> 98 at
 *     36 x 16x16x2048, 57 -> 68 at 16x144x32768, 80 -> 89 at 16x64x4096);
 *     for each block of MC = 96 rows of A:
 *       pack A[m-block, k-block] into panels of MR = 4 rows, k-major (Ap[k][4]);
 *       for each 4 x 24 tile of C: the micro-kernel keeps the tile in 12 ymm
 *       registers and, per k, does 3 vector loads of B, 4 broadcasts of A and
 *       12 fused multiply-adds (all 16 ymm registers: 12 + 3 + 1 to broadcast into).
 * Why 4 x 24 rather than the classic 6 x 16 (also 12 accumulators): the convolutions'
 * row counts are channel counts, multiples of 4 but rarely of 6 (16 rows are 3 panels
 * of 6, 18 rows computed), and it loads 7 values per 12 FMAs instead of 8.  Measured
 * (1 thread, GFLOP/s, 6x16 -> 4x24): 51 -> 73 at 16x144x32768, 93 -> 110 at
 * 32x288x8192, 116 -> 120 at 64x576x2048, 115 -> 122 at 64x64x1152.
 * Why these blocks: a 256 x 24 panel of B (24 KiB) and a 4 x 256 panel of A (4 KiB)
 * stay in a 32 KiB L1d while a micro-kernel runs; the 96 x 256 block of packed A
 * (96 KiB) stays in L2 (256 KiB on Haswell, 512 KiB and more since) while the 24-wide
 * B panels are used against all of it; the 1 MiB block of packed B lives in L3.  KC is
 * the AVX-512 kernel's, so the packed form sums every element in the same order as
 * that kernel (one FMA chain per KC block), and the results of the two are equal.
 * A last panel of at most 16 (or 8) columns runs a narrower micro-kernel, 4 x 16 (or
 * 8 x 8 over two panels of A) instead of the full tile on zeros: a 32-column product
 * (a Winograd point's 32 tiles, the 4x4 maps of a batch of 8) had computed 48 columns.
 * Edge tiles (fewer rows, or columns short of the kernel's) are packed with zeros,
 * computed into a local tile and copied out, so the micro-kernels have no branches and
 * no masks.
 * B is not packed where its rows are contiguous and k is short (at most SB2_IN_PLACE_K:
 * a Winograd point's product, channels by tiles): a full panel is read where it lies,
 * its rows bsk apart.  Packing had copied all of B once more for 4-16 row panels of A;
 * reading in place made the UNet's convolution layers (forward and both gradients)
 * 0.95-0.98 of their time at 1 thread and 0.95 at 2, 0.90-0.94 on the 128^2 ones (Zen 3
 * VM, family 25 model 1; the same products in the same order, so the same bits).
 *
 * Every C element is the sum over k in a fixed order (KC blocks in order, k in order
 * within a block, one FMA chain from zero per block, then added to C): results do not
 * depend on threads or on where a tile starts.  Strides are in elements; A(i, k) =
 * a[i*sa0 + k*sa1], B(k, j) = b[k*sb0 + j*sb1], C(i, j) = c[i*sc0 + j] (unit column
 * stride).  The dot form below sums in 8 lanes, not 16: its results may differ from the
 * AVX-512 dot form's in the last bits.
 */
#ifndef SANDBOX_SGEMM_AVX2_H
#define SANDBOX_SGEMM_AVX2_H

#include "sgemm_pack.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define SB_SGEMM_AVX2_X86 1
#include <immintrin.h>
#else
#define SB_SGEMM_AVX2_X86 0
#endif

#define SB2_MR 4
#define SB2_NR 24
#define SB2_MC 96   /* 24 panels of 4 rows: 96 x 256 x 4 B = 96 KiB of packed A (L2) */
#define SB2_NC 1008 /* 42 panels of 24 columns (SB_NC = 1024 is not a multiple of 24) */
#define SB2_IN_PLACE_K 64  /* B read unpacked up to this k (its panel: 6 KiB, in L1) */

/* 1 when this CPU can run the AVX2 kernel (AVX2 and FMA). */
static int sb_sgemm_avx2_available(void)
{
#if SB_SGEMM_AVX2_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
#else
    return 0;
#endif
}

#if SB_SGEMM_AVX2_X86

/* The micro-kernels: C[0:R, 0:8V] (row stride ldc) = or += A Bp, where A(r, k) =
 * ap0[k*ask + r] for rows 0-3 (a packed panel: ask = 4; or, unpacked, a transposed
 * operand whose 4 rows are adjacent in memory) and ap1[k*ask + r - 4] for rows 4-7 (the
 * next panel of A, in the same form), and B(k, j) = bp[k*bsk + j] (a packed panel: bsk
 * = 24; or, unpacked, adjacent columns of B's rows, bsk apart).  One macro makes every
 * shape: ROWS(X) lists the R rows, VECS(X, r) the V vectors of 8 columns. */
#define SB2_R4(X) X(0) X(1) X(2) X(3)
#define SB2_R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define SB2_V1(X, r) X(r, 0)
#define SB2_V2(X, r) X(r, 0) X(r, 1)
#define SB2_V3(X, r) X(r, 0) X(r, 1) X(r, 2)
#define SB2_APTR(r) ((r) < 4 ? ap0 + (r) : ap1 + ((r) - 4))
#define SB2_DECL1(r, v) __m256 c##r##_##v = _mm256_setzero_ps();
#define SB2_FMA1(r, v) c##r##_##v = _mm256_fmadd_ps(av, b##v, c##r##_##v);
#define SB2_LOADB(r, v) __m256 b##v = _mm256_loadu_ps(bp + 8 * (v));
#define SB2_ADD1(r, v) c##r##_##v = _mm256_add_ps(_mm256_loadu_ps(row + 8 * (v)), c##r##_##v);
#define SB2_STORE1(r, v) _mm256_storeu_ps(row + 8 * (v), c##r##_##v);
#define SB2_KERNEL(NAME, ROWS, VECS)                                                       \
__attribute__((target("avx2,fma")))                                                       \
static void NAME(int kc, const float *ap0, const float *ap1, ptrdiff_t ask,                \
                 const float *bp, ptrdiff_t bsk, float *c, ptrdiff_t ldc, int accumulate)  \
{                                                                                          \
    int k;                                                                                 \
    ROWS(SB2_DECL_ROW_##VECS)                                                              \
    for (k = 0; k < kc; k++) {                                                             \
        VECS(SB2_LOADB, 0)                                                                 \
        ROWS(SB2_FMA_ROW_##VECS)                                                           \
        ap0 += ask;                                                                        \
        ap1 += ask;                                                                        \
        bp += bsk;                                                                         \
    }                                                                                      \
    ROWS(SB2_STORE_ROW_##VECS)                                                             \
}
#define SB2_DECL_ROW_SB2_V1(r) SB2_V1(SB2_DECL1, r)
#define SB2_DECL_ROW_SB2_V2(r) SB2_V2(SB2_DECL1, r)
#define SB2_DECL_ROW_SB2_V3(r) SB2_V3(SB2_DECL1, r)
#define SB2_FMA_ROW(VECS, r) { __m256 av = _mm256_broadcast_ss(SB2_APTR(r)); VECS(SB2_FMA1, r) }
#define SB2_FMA_ROW_SB2_V1(r) SB2_FMA_ROW(SB2_V1, r)
#define SB2_FMA_ROW_SB2_V2(r) SB2_FMA_ROW(SB2_V2, r)
#define SB2_FMA_ROW_SB2_V3(r) SB2_FMA_ROW(SB2_V3, r)
#define SB2_STORE_ROW(VECS, r) { float *row = c + (r) * ldc;                             \
                                 if (accumulate) { VECS(SB2_ADD1, r) }                   \
                                 VECS(SB2_STORE1, r) }
#define SB2_STORE_ROW_SB2_V1(r) SB2_STORE_ROW(SB2_V1, r)
#define SB2_STORE_ROW_SB2_V2(r) SB2_STORE_ROW(SB2_V2, r)
#define SB2_STORE_ROW_SB2_V3(r) SB2_STORE_ROW(SB2_V3, r)
/* the full tile: 12 accumulators, 3 loads of B and 4 broadcasts of A per k */
SB2_KERNEL(sb_kernel_4x24, SB2_R4, SB2_V3)
/* Narrow last panels of B (at most 16 or 8 columns), which the full tile would compute
 * as 24 (two thirds wasted on a 32-column product, a Winograd point's 32 tiles on 4x4
 * maps): 8 accumulators each, so that the 4-cycle fused multiply-adds still overlap
 * (two rows' panels at once for 8 columns).  Each element is the same FMA chain as in
 * the full tile, so the results do not change. */
SB2_KERNEL(sb_kernel_4x16, SB2_R4, SB2_V2)
SB2_KERNEL(sb_kernel_8x8, SB2_R8, SB2_V1)
SB2_KERNEL(sb_kernel_4x8, SB2_R4, SB2_V1)
#undef SB2_KERNEL
#undef SB2_R4
#undef SB2_R8
#undef SB2_V1
#undef SB2_V2
#undef SB2_V3
#undef SB2_APTR
#undef SB2_DECL1
#undef SB2_FMA1
#undef SB2_LOADB
#undef SB2_ADD1
#undef SB2_STORE1
#undef SB2_DECL_ROW_SB2_V1
#undef SB2_DECL_ROW_SB2_V2
#undef SB2_DECL_ROW_SB2_V3
#undef SB2_FMA_ROW
#undef SB2_FMA_ROW_SB2_V1
#undef SB2_FMA_ROW_SB2_V2
#undef SB2_FMA_ROW_SB2_V3
#undef SB2_STORE_ROW
#undef SB2_STORE_ROW_SB2_V1
#undef SB2_STORE_ROW_SB2_V2
#undef SB2_STORE_ROW_SB2_V3

/* Packing from transposed operands by 8 x 8 (B) and 4 x 8 (A) register transposes.  A
 * weight gradient's product (C = G V^T: A's rows and B's columns each contiguous along
 * k) packs both operands against their storage order, which sgemm_pack.h's loops do an
 * element at a time: 11 % of a 128->128@8 weight gradient (perf record of a loop of
 * calls, batch 8, 1 thread, AMD EPYC family 25 model 1).  The packed panels are the same values, so the products do not change. */

/* The 8 x 8 transpose: y[i] lane j = x[j] lane i. */
__attribute__((target("avx2")))
static inline void sb2_transpose8(const __m256 x[8], __m256 y[8])
{
    __m256 u[8], v[8];
    for (int i = 0; i < 4; i++) {
        u[2 * i] = _mm256_unpacklo_ps(x[2 * i], x[2 * i + 1]);
        u[2 * i + 1] = _mm256_unpackhi_ps(x[2 * i], x[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        v[4 * i] = _mm256_shuffle_ps(u[4 * i], u[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        v[4 * i + 1] = _mm256_shuffle_ps(u[4 * i], u[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        v[4 * i + 2] = _mm256_shuffle_ps(u[4 * i + 1], u[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        v[4 * i + 3] = _mm256_shuffle_ps(u[4 * i + 1], u[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        y[i] = _mm256_permute2f128_ps(v[i], v[4 + i], 0x20);
        y[4 + i] = _mm256_permute2f128_ps(v[i], v[4 + i], 0x31);
    }
}

/* sb_pack_b's panel (kc x NR, k-major, zero past nr columns) from B with contiguous
 * columns (sb0 == 1): 8 columns x 8 rows at a time. */
__attribute__((target("avx2")))
static void sb2_pack_b_cols(const float *b, ptrdiff_t sb1, int kc, int nr, float *bp)
{
    int j0 = 0, k;
    for (; j0 + 8 <= nr; j0 += 8) {
        for (k = 0; k + 8 <= kc; k += 8) {
            __m256 x[8], y[8];
            for (int j = 0; j < 8; j++) x[j] = _mm256_loadu_ps(b + (j0 + j) * sb1 + k);
            sb2_transpose8(x, y);
            for (int i = 0; i < 8; i++) _mm256_storeu_ps(bp + (ptrdiff_t)(k + i) * SB2_NR + j0, y[i]);
        }
        for (; k < kc; k++)
            for (int j = 0; j < 8; j++) bp[(ptrdiff_t)k * SB2_NR + j0 + j] = b[(j0 + j) * sb1 + k];
    }
    for (int j = j0; j < SB2_NR; j++)
        for (k = 0; k < kc; k++)
            bp[(ptrdiff_t)k * SB2_NR + j] = j < nr ? b[j * sb1 + k] : 0.0f;
}

/* sb_pack_a's panel (kc x 4, k-major) of 4 rows contiguous along k (sa1 == 1): 4 rows x 8
 * values at a time, by the in-lane 4 x 4 transpose (halves: k .. k+3 | k+4 .. k+7). */
__attribute__((target("avx2")))
static void sb2_pack_a_rows(const float *a, ptrdiff_t sa0, int kc, float *ap)
{
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
        const __m256 r0 = _mm256_loadu_ps(a + k), r1 = _mm256_loadu_ps(a + sa0 + k);
        const __m256 r2 = _mm256_loadu_ps(a + 2 * sa0 + k), r3 = _mm256_loadu_ps(a + 3 * sa0 + k);
        const __m256 u0 = _mm256_unpacklo_ps(r0, r1), u1 = _mm256_unpackhi_ps(r0, r1);
        const __m256 u2 = _mm256_unpacklo_ps(r2, r3), u3 = _mm256_unpackhi_ps(r2, r3);
        /* y0 = (k | k+4), y1 = (k+1 | k+5), y2 = (k+2 | k+6), y3 = (k+3 | k+7): 4 rows each */
        const __m256 y0 = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 y1 = _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2));
        const __m256 y2 = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0));
        const __m256 y3 = _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2));
        float *dst = ap + (ptrdiff_t)k * SB2_MR;
        _mm256_storeu_ps(dst, _mm256_permute2f128_ps(y0, y1, 0x20));
        _mm256_storeu_ps(dst + 8, _mm256_permute2f128_ps(y2, y3, 0x20));
        _mm256_storeu_ps(dst + 16, _mm256_permute2f128_ps(y0, y1, 0x31));
        _mm256_storeu_ps(dst + 24, _mm256_permute2f128_ps(y2, y3, 0x31));
    }
    for (; k < kc; k++)
        for (int r = 0; r < SB2_MR; r++) ap[(ptrdiff_t)k * SB2_MR + r] = a[r * sa0 + k];
}

/* sb_pack_b, or sb2_pack_b_cols where B's columns are contiguous. */
__attribute__((target("avx2")))
static inline void sb2_pack_b(const float *b, ptrdiff_t sb0, ptrdiff_t sb1, int kc, int nr,
                              float *bp)
{
    if (sb0 == 1 && sb1 != 1)
        sb2_pack_b_cols(b, sb1, kc, nr, bp);
    else
        sb_pack_b(b, sb0, sb1, kc, nr, SB2_NR, bp);
}

/* sb_pack_a, or sb2_pack_a_rows for a full panel of rows contiguous along k. */
__attribute__((target("avx2")))
static inline void sb2_pack_a(const float *a, ptrdiff_t sa0, ptrdiff_t sa1, int mr, int kc,
                              float *ap)
{
    if (sa1 == 1 && sa0 != 1 && mr == SB2_MR)
        sb2_pack_a_rows(a, sa0, kc, ap);
    else
        sb_pack_a(a, sa0, sa1, mr, kc, SB2_MR, ap);
}

/* C (m x n) = op(A) (m x k) @ op(B) (k x n), or += when accumulate.  Returns 0, or -1
 * when the packing buffers cannot be allocated (C is then untouched). */
__attribute__((target("avx2,fma")))
static int sb_sgemm_avx2(int m, int n, int kdim,
                         const float *a, ptrdiff_t sa0, ptrdiff_t sa1,
                         const float *b, ptrdiff_t sb0, ptrdiff_t sb1,
                         float *c, ptrdiff_t sc0, int accumulate)
{
    float *bp, *ap;
    float tile[2 * SB2_MR * SB2_NR] __attribute__((aligned(32)));  /* 8 x 8 in 24 columns */
    int jc, pc, ic, jr, ir;
    /* with one block of rows, each B panel is packed right before its micro-kernels run
     * (into one slot, still in L1 when they read it) instead of all panels first */
    int fused = m <= SB2_MC;
    /* B's rows contiguous and few (short k, a Winograd point's channels): a full panel is
     * read where it lies, its kc rows of 24 columns small enough to stay in L1 across
     * the row panels; packing copied all of B once more (same products, same order) */
    int in_place = sb1 == 1 && kdim <= SB2_IN_PLACE_K;

    if (sb_gemm_trivial(m, n, kdim, c, sc0, accumulate)) return 0;
    if (sb_buffers(&ap, &bp) != 0) return -1;
    for (jc = 0; jc < n; jc += SB2_NC) {
      int nc = n - jc < SB2_NC ? n - jc : SB2_NC;
      int n_panels = (nc + SB2_NR - 1) / SB2_NR;
      for (pc = 0; pc < kdim; pc += SB_KC) {
        int kc = kdim - pc < SB_KC ? kdim - pc : SB_KC;
        int acc = accumulate || pc > 0;
        for (jr = 0; jr < n_panels && !fused && !in_place; jr++) {
            int nr = nc - jr * SB2_NR < SB2_NR ? nc - jr * SB2_NR : SB2_NR;
            sb2_pack_b(b + pc * sb0 + (ptrdiff_t)(jc + jr * SB2_NR) * sb1, sb0, sb1, kc, nr,
                       bp + (ptrdiff_t)jr * SB2_NR * kc);
        }
        for (ic = 0; ic < m; ic += SB2_MC) {
            int mc = m - ic < SB2_MC ? m - ic : SB2_MC;
            int m_panels = (mc + SB2_MR - 1) / SB2_MR;
            for (ir = 0; ir < m_panels; ir++) {
                int mr = mc - ir * SB2_MR < SB2_MR ? mc - ir * SB2_MR : SB2_MR;
                if (mr == SB2_MR && sa0 == 1) continue;  /* read in place, below */
                sb2_pack_a(a + (ptrdiff_t)(ic + ir * SB2_MR) * sa0 + pc * sa1, sa0, sa1, mr, kc,
                           ap + (ptrdiff_t)ir * SB2_MR * kc);
            }
            for (jr = 0; jr < n_panels; jr++) {
                int nr = nc - jr * SB2_NR < SB2_NR ? nc - jr * SB2_NR : SB2_NR;
                int vecs = (nr + 7) / 8;  /* 3: the full tile; 1, 2: a narrow kernel */
                const float *bpanel = fused ? bp : bp + (ptrdiff_t)jr * SB2_NR * kc;
                ptrdiff_t bsk = SB2_NR;
                if (in_place && nr == SB2_NR) {
                    bpanel = b + pc * sb0 + jc + (ptrdiff_t)jr * SB2_NR;
                    bsk = sb0;
                } else if (fused || in_place) {
                    bpanel = bp;
                    sb2_pack_b(b + pc * sb0 + (ptrdiff_t)(jc + jr * SB2_NR) * sb1, sb0, sb1, kc,
                               nr, bp);
                }
                for (ir = 0; ir < m_panels; ) {
                    int mr = mc - ir * SB2_MR < SB2_MR ? mc - ir * SB2_MR : SB2_MR;
                    int mr1 = mc - (ir + 1) * SB2_MR < SB2_MR ? mc - (ir + 1) * SB2_MR : SB2_MR;
                    /* 8 columns or fewer: this panel of A and the next in one 8 x 8
                     * kernel, when both are read the same way (their steps agree) */
                    int two = vecs == 1 && ir + 1 < m_panels && !(sa0 == 1 && mr1 < SB2_MR);
                    int rows = two ? mr + mr1 : mr;
                    const float *ap0 = ap + (ptrdiff_t)ir * SB2_MR * kc, *ap1;
                    ptrdiff_t ask = SB2_MR, next = SB2_MR * kc;  /* the next panel of A */
                    float *ctile = c + (ptrdiff_t)(ic + ir * SB2_MR) * sc0 + jc
                                   + (ptrdiff_t)jr * SB2_NR;
                    /* a full tile stored in place; an edge computed locally, then copied */
                    int whole = rows == (two ? 2 : 1) * SB2_MR && nr == 8 * vecs;
                    float *dst = whole ? ctile : tile;
                    ptrdiff_t ldd = whole ? sc0 : SB2_NR;
                    if (mr == SB2_MR && sa0 == 1) {  /* 4 adjacent rows: no packing needed */
                        ap0 = a + (ptrdiff_t)(ic + ir * SB2_MR) + pc * sa1;
                        ask = sa1;
                        next = SB2_MR;
                    }
                    ap1 = ap0 + next;
                    if (vecs == 3)
                        sb_kernel_4x24(kc, ap0, ap1, ask, bpanel, bsk, dst, ldd, whole && acc);
                    else if (vecs == 2)
                        sb_kernel_4x16(kc, ap0, ap1, ask, bpanel, bsk, dst, ldd, whole && acc);
                    else if (two)
                        sb_kernel_8x8(kc, ap0, ap1, ask, bpanel, bsk, dst, ldd, whole && acc);
                    else
                        sb_kernel_4x8(kc, ap0, ap1, ask, bpanel, bsk, dst, ldd, whole && acc);
                    if (!whole) sb_tile_out(tile, SB2_NR, rows, nr, ctile, sc0, acc);
                    ir += two ? 2 : 1;
                }
            }
        }
      }
    }
    return 0;
}

/* Dot-product form for long K and few rows and columns (the weight gradients):
 * C = A @ Bt^T with A (m x k) and Bt (n x k) both contiguous along k.  No packing:
 * 3 x 4 blocks of C keep 12 vector accumulators along k (8 lanes each; with 3 loads
 * of A and one of B, the 16 ymm registers), reduced at the end.  Every element is
 * computed the same way whatever block it falls in (same lanes, same tail mask, same
 * reduction tree), so results do not depend on the blocking. */
__attribute__((target("avx2,fma")))
static void sb_dot_block_avx2(int rows, int cols, int kdim, const float *a, ptrdiff_t lda,
                              const float *bt, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                              int accumulate)
{
    /* rows <= 3, cols <= 4 */
    __m256 acc[3][4];
    int i, j, k;
    int full = kdim & ~7;
    __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(kdim - full),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (i = 0; i < 3; i++)
        for (j = 0; j < 4; j++) acc[i][j] = _mm256_setzero_ps();
    if (rows == 3 && cols == 4) {
        for (k = 0; k < full; k += 8) {
            __m256 a0 = _mm256_loadu_ps(a + k), a1 = _mm256_loadu_ps(a + lda + k);
            __m256 a2 = _mm256_loadu_ps(a + 2 * lda + k);
            for (j = 0; j < 4; j++) {
                __m256 b = _mm256_loadu_ps(bt + j * ldb + k);
                acc[0][j] = _mm256_fmadd_ps(a0, b, acc[0][j]);
                acc[1][j] = _mm256_fmadd_ps(a1, b, acc[1][j]);
                acc[2][j] = _mm256_fmadd_ps(a2, b, acc[2][j]);
            }
        }
    } else {
        for (k = 0; k < full; k += 8)
            for (i = 0; i < rows; i++) {
                __m256 av = _mm256_loadu_ps(a + i * lda + k);
                for (j = 0; j < cols; j++)
                    acc[i][j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(bt + j * ldb + k), acc[i][j]);
            }
    }
    if (kdim > full)
        for (i = 0; i < rows; i++) {
            __m256 av = _mm256_maskload_ps(a + i * lda + full, tail);
            for (j = 0; j < cols; j++)
                acc[i][j] = _mm256_fmadd_ps(av, _mm256_maskload_ps(bt + j * ldb + full, tail),
                                            acc[i][j]);
        }
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            float s = sb_hsum8(acc[i][j]);
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + s : s;
        }
}

__attribute__((target("avx2,fma")))
static void sb_sgemm_dot_avx2(int m, int n, int kdim, const float *a, ptrdiff_t lda,
                              const float *bt, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                              int accumulate)
{
    int i, j;
    for (i = 0; i < m; i += 3)
        for (j = 0; j < n; j += 4)
            sb_dot_block_avx2(m - i < 3 ? m - i : 3, n - j < 4 ? n - j : 4, kdim, a + i * lda,
                              lda, bt + j * ldb, ldb, c + i * ldc + j, ldc, accumulate);
}

#else  /* not x86 with GCC-compatible intrinsics */

SB_SGEMM_STUBS(sb_sgemm_avx2, sb_sgemm_dot_avx2)

#endif
#endif
