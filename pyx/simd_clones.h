/* SB_CLONES: compile a small C loop twice, for AVX2 and for the baseline x86-64
 * target, and let the loader pick the clone for the CPU (gcc's target_clones, an
 * ifunc).  The extensions are built for the baseline so that they run anywhere,
 * where gcc vectorises 2 doubles or 4 floats wide at most and cannot vectorise
 * stride-2 loads at all; the hot elementwise loops carry this attribute instead.
 * Clones run the same operations in the same order (no FMA contraction is enabled
 * by "avx2"), so their results are bitwise identical. */
#ifndef SANDBOX_SIMD_CLONES_H
#define SANDBOX_SIMD_CLONES_H
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SB_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SB_CLONES
#endif
#endif
