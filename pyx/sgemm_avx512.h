/* Single-precision GEMM with AVX-512 register blocking:  C = op(A) @ op(B) (+ C).
 *
 * Why it exists: numpy's OpenBLAS picks its kernels at load time, and a machine
 * may pin it to an older core type (OPENBLAS_CORETYPE=Haswell on this project's
 * 2-core Zen 5 machines: AVX2, half the FMA width the core has).  PyTorch's
 * oneDNN generates AVX-512 code whatever that variable says, so on such machines
 * a BLAS-bound convolution starts at half its speed.  This file gives the
 * convolutions one float32 GEMM of their own that uses the 512-bit FMA units
 * when the CPU has them (checked at run time; the caller falls back to BLAS).
 *
 * Layout (the classic Goto/BLIS blocking, written from the published scheme):
 *   for each block of KC rows of B (k loop, summed in order):
 *     pack B[k-block, :] into panels of NR = 32 columns, k-major (Bp[k][32]);
 *     for each block of MC rows of A:
 *       pack A[m-block, k-block] into panels of MR = 12 rows, k-major (Ap[k][12]);
 *       for each 12 x 32 tile of C: the micro-kernel keeps the tile in 24 zmm
 *       registers and, per k, does 2 vector loads of B, 12 broadcasts of A and
 *       24 fused multiply-adds.
 * Edge tiles (fewer than 12 rows or 32 columns) are packed with zeros, computed
 * into a local tile and copied out, so the micro-kernel has no branches.
 *
 * Every C element is the sum over k in a fixed order (KC blocks in order, k in
 * order within a block): results do not depend on threads or on where a tile
 * starts.  Strides are in elements; A(i, k) = a[i*sa0 + k*sa1], B(k, j) =
 * b[k*sb0 + j*sb1], C(i, j) = c[i*sc0 + j] (unit column stride).
 */
#ifndef SANDBOX_SGEMM_AVX512_H
#define SANDBOX_SGEMM_AVX512_H

#include "sgemm_pack.h"  /* SB_KC, SB_MC, SB_NC, the buffers and the packing */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define SB_SGEMM_X86 1
#include <immintrin.h>
#else
#define SB_SGEMM_X86 0
#endif

#define SB_MR 12
#define SB_NR 32
/* SB_KC 256, SB_MC 144 (12 panels of 12 rows: 144 KiB of packed A, L2), SB_NC 1024
 * (1 MiB of packed B): sgemm_pack.h */

/* 1 when this CPU can run the AVX-512 kernel. */
static int sb_sgemm_avx512_available(void)
{
#if SB_SGEMM_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 1 : 0;
#else
    return 0;
#endif
}

#if SB_SGEMM_X86

/* The micro-kernels: C[0:R, 0:32] (row stride ldc) = or += A Bp for R = 12 or 8, where
 * A(r, k) = ap[k*ask + r] (a packed panel: ask = R; or, unpacked, a transposed
 * operand whose R rows are adjacent in memory) and B(k, j) = bp[k*bsk + j] (a packed
 * panel: bsk = 32; or 32 columns of a row-major B read in place).  Columns outside
 * the masks ma (0-15) and mb (16-31) are neither read nor written. */
#define SB_ROWS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define SB_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define SB_DECL(r) __m512 c##r##a = _mm512_setzero_ps(), c##r##b = _mm512_setzero_ps();
#define SB_FMA(r) { __m512 av = _mm512_set1_ps(ap[r]);            \
                    c##r##a = _mm512_fmadd_ps(av, b0, c##r##a);   \
                    c##r##b = _mm512_fmadd_ps(av, b1, c##r##b); }
#define SB_STORE(r) { float *row = c + (r) * ldc;                                              \
                      if (accumulate) {                                                         \
                          c##r##a = _mm512_add_ps(_mm512_maskz_loadu_ps(ma, row), c##r##a);      \
                          c##r##b = _mm512_add_ps(_mm512_maskz_loadu_ps(mb, row + 16), c##r##b); \
                      }                                                                         \
                      _mm512_mask_storeu_ps(row, ma, c##r##a);                                  \
                      _mm512_mask_storeu_ps(row + 16, mb, c##r##b); }
#define SB_KERNEL(NAME, ROWS)                                                                  \
__attribute__((target("avx512f")))                                                             \
static void NAME(int kc, const float *ap, ptrdiff_t ask, const float *bp, ptrdiff_t bsk,      \
                 float *c, ptrdiff_t ldc, int accumulate, __mmask16 ma, __mmask16 mb)          \
{                                                                                              \
    ROWS(SB_DECL)                                                                              \
    int k;                                                                                     \
    for (k = 0; k < kc; k++) {                                                                 \
        __m512 b0 = _mm512_loadu_ps(bp);                                                       \
        __m512 b1 = _mm512_loadu_ps(bp + 16);                                                  \
        ROWS(SB_FMA)                                                                           \
        ap += ask;                                                                             \
        bp += bsk;                                                                             \
    }                                                                                          \
    ROWS(SB_STORE)                                                                             \
}
SB_KERNEL(sb_kernel_12x32, SB_ROWS12)
SB_KERNEL(sb_kernel_8x32, SB_ROWS8)
#undef SB_KERNEL
#undef SB_STORE
#undef SB_FMA
#undef SB_DECL
#undef SB_ROWS8
#undef SB_ROWS12

/* The lanes of a panel of nr <= 32 columns: the first 16 (lo) and the next 16 (hi). */
static inline __mmask16 sb_panel_lo(int nr)
{
    return (__mmask16)(nr >= 16 ? 0xFFFFu : (1u << nr) - 1u);
}

static inline __mmask16 sb_panel_hi(int nr)
{
    return (__mmask16)(nr >= 32 ? 0xFFFFu : nr <= 16 ? 0u : (1u << (nr - 16)) - 1u);
}

/* sb_pack_b's panel for a row-major B (sb1 == 1): each of the kc rows' nr <= 32 values
 * with two 16-float loads (masked past nr, which zero the rest) and two aligned stores,
 * where sb_pack_b called memcpy for 128 bytes and zeroed the tail a float at a time (the
 * C library's copies, these and the Winograd transforms' rows, were 7-9 % of a user UNet
 * step's perf samples at 1 thread and 6 % at 2, AMD EPYC family 26 model 2; see
 * wino_planes.h). */
__attribute__((target("avx512f")))
static inline void sb_pack_b_rows_avx512(const float *b, ptrdiff_t sb0, int kc, int nr,
                                         float *bp)
{
    const __mmask16 lo = sb_panel_lo(nr), hi = sb_panel_hi(nr);
    for (int k = 0; k < kc; k++) {
        const float *src = b + k * sb0;
        _mm512_store_ps(bp + (ptrdiff_t)k * SB_NR, _mm512_maskz_loadu_ps(lo, src));
        _mm512_store_ps(bp + (ptrdiff_t)k * SB_NR + 16, _mm512_maskz_loadu_ps(hi, src + 16));
    }
}

/* C (m x n) = op(A) (m x k) @ op(B) (k x n), or += when accumulate.  Returns 0,
 * or -1 when the packing buffers cannot be allocated (C is then untouched).
 * Panels of A have 12 rows, or 8 when m is a multiple of 8 but not of 12 and at
 * most 128 (channel counts 16, 32, 64, 128: no zero rows computed; measured 1.2-1.4x
 * on such GEMMs, while on large ones 12 rows keep more in registers: 8 rows lost
 * 20 % at m = 2048). */
__attribute__((target("avx512f")))
static int sb_sgemm_avx512(int m, int n, int kdim,
                           const float *a, ptrdiff_t sa0, ptrdiff_t sa1,
                           const float *b, ptrdiff_t sb0, ptrdiff_t sb1,
                           float *c, ptrdiff_t sc0, int accumulate)
{
    int MR = (m % 12 != 0 && m % 8 == 0 && m <= 128) ? 8 : SB_MR;
    int MC = MR == 8 ? 144 - 144 % 8 : SB_MC;
    /* with at most two row panels each B value is used by at most two micro-kernel
     * calls, so packing B would cost as much as using it: row-major B is read in place */
    int b_direct = sb1 == 1 && m <= 2 * MR;
    float *bp, *ap;
    float tile[SB_MR * SB_NR] __attribute__((aligned(64)));
    int jc, pc, ic, jr, ir;

    if (sb_gemm_trivial(m, n, kdim, c, sc0, accumulate)) return 0;
    if (sb_buffers(&ap, &bp) != 0) return -1;
    for (jc = 0; jc < n; jc += SB_NC) {
      int nc = n - jc < SB_NC ? n - jc : SB_NC;
      int n_panels = (nc + SB_NR - 1) / SB_NR;
      for (pc = 0; pc < kdim; pc += SB_KC) {
        int kc = kdim - pc < SB_KC ? kdim - pc : SB_KC;
        int acc = accumulate || pc > 0;
        for (jr = 0; jr < n_panels; jr++) {
            int nr = nc - jr * SB_NR < SB_NR ? nc - jr * SB_NR : SB_NR;
            if (b_direct && nr == SB_NR) continue;  /* read in place, below */
            if (sb1 == 1)
                sb_pack_b_rows_avx512(b + pc * sb0 + jc + jr * SB_NR, sb0, kc, nr,
                                      bp + (ptrdiff_t)jr * SB_NR * kc);
            else
                sb_pack_b(b + pc * sb0 + (ptrdiff_t)(jc + jr * SB_NR) * sb1, sb0, sb1, kc, nr,
                          SB_NR, bp + (ptrdiff_t)jr * SB_NR * kc);
        }
        for (ic = 0; ic < m; ic += MC) {
            int mc = m - ic < MC ? m - ic : MC;
            int m_panels = (mc + MR - 1) / MR;
            for (ir = 0; ir < m_panels; ir++) {
                int mr = mc - ir * MR < MR ? mc - ir * MR : MR;
                if (mr == MR && sa0 == 1) continue;  /* read in place, below */
                sb_pack_a(a + (ptrdiff_t)(ic + ir * MR) * sa0 + pc * sa1, sa0, sa1, mr, kc, MR,
                          ap + (ptrdiff_t)ir * MR * kc);
            }
            for (jr = 0; jr < n_panels; jr++) {
                int nr = nc - jr * SB_NR < SB_NR ? nc - jr * SB_NR : SB_NR;
                __mmask16 ma = sb_panel_lo(nr), mb = sb_panel_hi(nr);
                const float *bpanel = bp + (ptrdiff_t)jr * SB_NR * kc;
                ptrdiff_t bsk = SB_NR;
                if (b_direct && nr == SB_NR) {
                    bpanel = b + pc * sb0 + jc + (ptrdiff_t)jr * SB_NR;
                    bsk = sb0;
                }
                for (ir = 0; ir < m_panels; ir++) {
                    int mr = mc - ir * MR < MR ? mc - ir * MR : MR;
                    const float *apanel = ap + (ptrdiff_t)ir * MR * kc;
                    ptrdiff_t ask = MR;
                    float *ctile = c + (ptrdiff_t)(ic + ir * MR) * sc0 + jc + (ptrdiff_t)jr * SB_NR;
                    if (mr == MR && sa0 == 1) {  /* MR adjacent rows: no packing needed */
                        apanel = a + (ptrdiff_t)(ic + ir * MR) + pc * sa1;
                        ask = sa1;
                    }
                    if (mr == MR) {
                        if (MR == 8)
                            sb_kernel_8x32(kc, apanel, ask, bpanel, bsk, ctile, sc0, acc, ma, mb);
                        else
                            sb_kernel_12x32(kc, apanel, ask, bpanel, bsk, ctile, sc0, acc, ma, mb);
                    } else {   /* last rows: a full panel into a local tile, then copied */
                        if (MR == 8)
                            sb_kernel_8x32(kc, apanel, ask, bpanel, bsk, tile, SB_NR, 0, 0xFFFF, 0xFFFF);
                        else
                            sb_kernel_12x32(kc, apanel, ask, bpanel, bsk, tile, SB_NR, 0, 0xFFFF, 0xFFFF);
                        sb_tile_out(tile, SB_NR, mr, nr, ctile, sc0, acc);
                    }
                }
            }
        }
      }
    }
    return 0;
}

/* Dot-product form for long K and few rows and columns (the weight gradients:
 * M and N are channel counts, K is pixels):  C = A @ Bt^T with A (m x k) and Bt
 * (n x k) both contiguous along k.  No packing: 4 x 4 blocks of C keep 16 vector
 * accumulators along k (16 lanes each), reduced at the end.  Every element is
 * computed the same way whatever block it falls in (same lanes, same tail mask,
 * same reduction tree), so results do not depend on the blocking. */
__attribute__((target("avx512f")))
static inline float sb_hsum(__m512 v)
{
    /* fixed tree: 16 -> 8 -> 4 -> 2 -> 1 */
    __m256 lo = _mm512_castps512_ps256(v);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
    return sb_hsum8(_mm256_add_ps(lo, hi));  /* then 8 -> 4 -> 2 -> 1 */
}

__attribute__((target("avx512f")))
static void sb_dot_block(int rows, int cols, int kdim, const float *a, ptrdiff_t lda,
                         const float *bt, ptrdiff_t ldb, float *c, ptrdiff_t ldc, int accumulate)
{
    /* rows, cols <= 4; unused accumulators cost nothing once the compiler drops them */
    __m512 acc[4][4];
    int i, j, k;
    int full = kdim & ~15;
    __mmask16 tail = (__mmask16)((1u << (kdim - full)) - 1u);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_ps();
    if (rows == 4 && cols == 4) {
        for (k = 0; k < full; k += 16) {
            __m512 a0 = _mm512_loadu_ps(a + k), a1 = _mm512_loadu_ps(a + lda + k);
            __m512 a2 = _mm512_loadu_ps(a + 2 * lda + k), a3 = _mm512_loadu_ps(a + 3 * lda + k);
            for (j = 0; j < 4; j++) {
                __m512 b = _mm512_loadu_ps(bt + j * ldb + k);
                acc[0][j] = _mm512_fmadd_ps(a0, b, acc[0][j]);
                acc[1][j] = _mm512_fmadd_ps(a1, b, acc[1][j]);
                acc[2][j] = _mm512_fmadd_ps(a2, b, acc[2][j]);
                acc[3][j] = _mm512_fmadd_ps(a3, b, acc[3][j]);
            }
        }
    } else {
        for (k = 0; k < full; k += 16)
            for (i = 0; i < rows; i++) {
                __m512 av = _mm512_loadu_ps(a + i * lda + k);
                for (j = 0; j < cols; j++)
                    acc[i][j] = _mm512_fmadd_ps(av, _mm512_loadu_ps(bt + j * ldb + k), acc[i][j]);
            }
    }
    if (tail)
        for (i = 0; i < rows; i++) {
            __m512 av = _mm512_maskz_loadu_ps(tail, a + i * lda + full);
            for (j = 0; j < cols; j++)
                acc[i][j] = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(tail, bt + j * ldb + full),
                                            acc[i][j]);
        }
    for (i = 0; i < rows; i++)
        for (j = 0; j < cols; j++) {
            float s = sb_hsum(acc[i][j]);
            c[i * ldc + j] = accumulate ? c[i * ldc + j] + s : s;
        }
}

__attribute__((target("avx512f")))
static void sb_sgemm_dot_avx512(int m, int n, int kdim, const float *a, ptrdiff_t lda,
                                const float *bt, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                                int accumulate)
{
    int i, j;
    for (i = 0; i < m; i += 4)
        for (j = 0; j < n; j += 4)
            sb_dot_block(m - i < 4 ? m - i : 4, n - j < 4 ? n - j : 4, kdim, a + i * lda, lda,
                         bt + j * ldb, ldb, c + i * ldc + j, ldc, accumulate);
}

#else  /* not x86 with GCC-compatible intrinsics */

SB_SGEMM_STUBS(sb_sgemm_avx512, sb_sgemm_dot_avx512)

#endif
#endif
