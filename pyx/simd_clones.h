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
#define SB_CLONES __attribute__((target_clones("avx2", "default"), unused))
#else
#define SB_CLONES
#endif

/* sb_clear_upper_state: vzeroupper on a CPU with AVX, nothing elsewhere.  Code built
 * for the baseline target runs legacy SSE instructions, and after a library call that
 * returned with the upper halves of the vector registers dirty (PyTorch 2.13's CPU
 * bicubic grid_sample does), every one of them pays a state penalty: measured here,
 * the sandbox's 2-D bicubic grid sampling ran 3x slower right after such a call.
 * Kernels call this once at entry, on the calling thread. */
#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("avx"))) static inline void sb_vzeroupper_avx(void) {
    __builtin_ia32_vzeroupper();
}
static inline void sb_clear_upper_state(void) {
    if (__builtin_cpu_supports("avx")) sb_vzeroupper_avx();
}
#else
static inline void sb_clear_upper_state(void) {}
#endif
#endif
