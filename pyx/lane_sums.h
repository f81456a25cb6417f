/* Sums in 16 lanes of the element type T, folded in a fixed tree and returned in double:
 * the normalisations' sums (pyx/_norm.pyx), the row sums of means and sums
 * (pyx/_elementwise.pyx) and the pointwise losses (pyx/_loss.pyx); softmax's rows
 * (pyx/_softmax.pyx) use the lane types, loads and bit masks for their 8 lanes, and the
 * depthwise rows (pyx/depthwise_rows.h) the types and masks.  A sum in double
 * throughout costs a conversion an element and twice the vectors; a block of at most
 * SB_LANE_BLOCK elements keeps what a lane of T holds to SB_LANE_BLOCK / 16 terms, and
 * the blocks are added in double by the caller (SB_BLOCKS, SB_BLOCK_SUM).
 *
 * The lanes are gcc/clang vector extensions of 32 bytes (8 floats, 4 doubles; gcc had
 * left 16 float partial sums in an array scalar): SB_LANES(T, S, s) declares 16 / lanes
 * of them, zeroed; SB_LANE_SUM adds a block's terms, 16 a step (VEXPR: the vector of
 * terms at element `at`), the rest one by one into lane i % 16 (EXPR: the term of
 * element i), SB_LANE_SUM2 two such sums in one pass; SB_LANE_FOLD folds them (lane
 * j + 8 onto lane j, then pairs: SB_LANE_FOLD8's tree) into a double.  Element i always lands
 * in lane i % 16 of its block, so the bits depend on the block, never on the threads. */
#ifndef SANDBOX_LANE_SUMS_H
#define SANDBOX_LANE_SUMS_H
#include <string.h>

#define SB_LANE_BLOCK 1024

typedef float sb_lanes_f __attribute__((vector_size(32)));
typedef double sb_lanes_d __attribute__((vector_size(32)));

/* the bits of a lane vector (what a compare of two gives: all ones where true), for the
 * bitwise selects and masks on lanes */
typedef int sb_lane_bits_f __attribute__((vector_size(32)));
typedef long long sb_lane_bits_d __attribute__((vector_size(32)));

#define SB_LANES(T, S, name) sb_lanes_##S name[16 * sizeof(T) / 32] = {{0}}
#define SB_LANE_LOAD(S, p) ({ sb_lanes_##S u_; memcpy(&u_, (p), sizeof u_); u_; })
#define SB_LANE_SUM(T, s, b, end, VEXPR, EXPR) do {                                       \
    enum { L_ = 32 / sizeof(T), NV_ = 16 / L_ };                                          \
    Py_ssize_t i = (b);                                                                   \
    for (; i + 15 < (end); i += 16)                                                       \
        for (int v = 0; v < NV_; v++) { const Py_ssize_t at = i + v * L_; s[v] += VEXPR; } \
    for (; i < (end); i++) s[(i % 16) / L_][i % L_] += EXPR;                              \
} while (0)
/* Two sums over one block in one pass, each as SB_LANE_SUM's: SVEXPR/SEXPR into s,
 * TVEXPR/TEXPR into t (the terms of one element share its loads) */
#define SB_LANE_SUM2(T, s, t, b, end, SVEXPR, TVEXPR, SEXPR, TEXPR) do {                   \
    enum { L_ = 32 / sizeof(T), NV_ = 16 / L_ };                                          \
    Py_ssize_t i = (b);                                                                   \
    for (; i + 15 < (end); i += 16)                                                       \
        for (int v = 0; v < NV_; v++) {                                                   \
            const Py_ssize_t at = i + v * L_;                                             \
            s[v] += SVEXPR;                                                               \
            t[v] += TVEXPR; }                                                             \
    for (; i < (end); i++) {                                                              \
        s[(i % 16) / L_][i % L_] += SEXPR;                                                \
        t[(i % 16) / L_][i % L_] += TEXPR; }                                              \
} while (0)
/* The lanes' fold, in one fixed tree of pairs, in vector registers (through an array on
 * the stack it had been most of a 16-value plane's sum, batch norm's on 4x4 maps):
 * SB_LANE_FOLD8(T, p), 8 lanes (an array of lane vectors: one of floats, two of doubles)
 * as ((t0+t1)+(t2+t3))+((t4+t5)+(t6+t7)), a T; SB_LANE_FOLD(T, s), the 16 lanes of
 * SB_LANES, lane j + 8 onto lane j first, then the same tree, as a double.  Always the
 * same additions in the same order, so the bits of adding the lanes one by one. */
#define SB_LANE_FOLD8(T, p)                                                               \
    ((T) (sizeof(T) == 4 ? sb_lane_fold8_fp(p) : sb_lane_fold8_dp(p)))
#define SB_LANE_FOLD(T, s)                                                                \
    (sizeof(T) == 4 ? (double) sb_lane_fold16_fp(s) : sb_lane_fold16_dp(s))

#if defined(__clang__)
#define SB_SHUFFLE_F(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#define SB_SHUFFLE_D(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SB_SHUFFLE_F(a, b, ...) __builtin_shuffle(a, b, (sb_lane_bits_f){__VA_ARGS__})
#define SB_SHUFFLE_D(a, b, ...) __builtin_shuffle(a, b, (sb_lane_bits_d){__VA_ARGS__})
#endif

/* 8 float lanes t0..t7: pairs (t0+t1, t2+t3, t4+t5, t6+t7), then ((t0+t1)+(t2+t3)) and
 * ((t4+t5)+(t6+t7)), then their sum, in float */
static inline __attribute__((always_inline, unused)) float sb_lane_fold8_f(sb_lanes_f h)
{
    const sb_lanes_f p = SB_SHUFFLE_F(h, h, 0, 2, 4, 6, 0, 2, 4, 6)
                         + SB_SHUFFLE_F(h, h, 1, 3, 5, 7, 1, 3, 5, 7);
    const sb_lanes_f q = SB_SHUFFLE_F(p, p, 0, 2, 0, 2, 0, 2, 0, 2)
                         + SB_SHUFFLE_F(p, p, 1, 3, 1, 3, 1, 3, 1, 3);
    return q[0] + q[1];
}

/* 8 double lanes, t0..t3 in a and t4..t7 in b: the same tree */
static inline __attribute__((always_inline, unused)) double sb_lane_fold8_d(sb_lanes_d a,
                                                                             sb_lanes_d b)
{
    const sb_lanes_d p = SB_SHUFFLE_D(a, b, 0, 2, 4, 6) + SB_SHUFFLE_D(a, b, 1, 3, 5, 7);
    const sb_lanes_d q = SB_SHUFFLE_D(p, p, 0, 2, 0, 2) + SB_SHUFFLE_D(p, p, 1, 3, 1, 3);
    return q[0] + q[1];
}

/* The folds of lane vectors in memory (an array of them: read with memcpy, which
 * compiles to register loads and lets the macros above take either element type) */
static inline __attribute__((always_inline, unused)) float sb_lane_fold8_fp(const void *p)
{
    sb_lanes_f h;
    memcpy(&h, p, sizeof h);
    return sb_lane_fold8_f(h);
}

static inline __attribute__((always_inline, unused)) double sb_lane_fold8_dp(const void *p)
{
    sb_lanes_d v[2];
    memcpy(v, p, sizeof v);
    return sb_lane_fold8_d(v[0], v[1]);
}

/* 16 lanes: lane j + 8 onto lane j (floats: 0-7 and 8-15 in two vectors; doubles: 0-3,
 * 4-7, 8-11, 12-15 in four), then the tree */
static inline __attribute__((always_inline, unused)) float sb_lane_fold16_fp(const void *p)
{
    sb_lanes_f v[2];
    memcpy(v, p, sizeof v);
    return sb_lane_fold8_f(v[0] + v[1]);
}

static inline __attribute__((always_inline, unused)) double sb_lane_fold16_dp(const void *p)
{
    sb_lanes_d v[4];
    memcpy(v, p, sizeof v);
    return sb_lane_fold8_d(v[0] + v[2], v[1] + v[3]);
}

/* Runs SUM_A_BLOCK (which reads b, end) for each block [b, end) of SB_LANE_BLOCK
 * elements of [0, n) */
#define SB_BLOCKS(n, SUM_A_BLOCK) do {                                                    \
    for (Py_ssize_t b = 0; b < (n); b += SB_LANE_BLOCK) {                                 \
        const Py_ssize_t end = b + SB_LANE_BLOCK < (n) ? b + SB_LANE_BLOCK : (n);         \
        SUM_A_BLOCK; } } while (0)
/* SB_BLOCK_SUM(T, S) defines sb_sum_##S(p, n): sum(p[0..n)) in 16 lanes of T by blocks,
 * the blocks added in double (the caller includes simd_clones.h for SB_CLONES) */
#define SB_BLOCK_SUM(T, S)                                                                \
SB_CLONES static double sb_sum_##S(const T* restrict p, Py_ssize_t n) {                  \
    double total = 0;                                                                     \
    SB_BLOCKS(n, SB_LANES(T, S, s);                                                       \
              SB_LANE_SUM(T, s, b, end, SB_LANE_LOAD(S, p + at), p[i]);                   \
              total += SB_LANE_FOLD(T, s));                                               \
    return total; }

#endif
