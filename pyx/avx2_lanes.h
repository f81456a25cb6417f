/* Plain stores of the first n (<= 8) lanes of an AVX2 vector: 8, then 4, 2 and 1 lanes.
 * AVX2's masked store (vmaskmovps) costs many cycles on AMD's Zen, and some kernels store
 * tails on every row: the Winograd tile rows of 16-wide maps (pyx/winograd/wino4_avx2.h,
 * wino2_avx2.h; with masked stores the F(4x4) output-gradient transform had been 31 % of
 * the 32->64@16 weight gradient: perf record of a loop of calls, batch 8, 1 thread, AMD
 * EPYC family 25 model 1), a first layer's output rows (conv_direct.h). */
#ifndef SANDBOX_AVX2_LANES_H
#define SANDBOX_AVX2_LANES_H
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2")))
static inline void sb_store_first8(float *dst, __m256 v, int n)
{
    __m128 q = _mm256_castps256_ps128(v);
    if (n >= 8) {
        _mm256_storeu_ps(dst, v);
        return;
    }
    if (n >= 4) {
        _mm_storeu_ps(dst, q);
        q = _mm256_extractf128_ps(v, 1);
        dst += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)dst, q);
        q = _mm_movehl_ps(q, q);
        dst += 2;
        n -= 2;
    }
    if (n) _mm_store_ss(dst, q);
}

#endif
#endif
