/* The portable row and column loops of the Winograd F(4x4, 3x3) transforms
 * (pyx/winograd/_winograd.pyx), float and double.  Plain C on restrict pointer parameters so that gcc
 * vectorises them (written in Cython it could not rule out overlapping buffers and
 * left them scalar; gcc honours restrict on parameters, not on local pointers), each
 * with an AVX2 clone (SB_CLONES, simd_clones.h). */
#ifndef SANDBOX_WINO4_ROWS_H
#define SANDBOX_WINO4_ROWS_H

#include <stddef.h>
#include "simd_clones.h"

#define SB_R(T) T* restrict
#define SB_C(T) const T* restrict
#define SB_WINO4(T, S)                                                             \
SB_CLONES static void sb_w4_split_##S(SB_C(T) p, SB_R(T) q0, SB_R(T) q1, SB_R(T) q2,   \
        SB_R(T) q3, Py_ssize_t L) {                                                 \
    for (Py_ssize_t t = 0; t < L; t++) {                                            \
        q0[t] = p[4 * t]; q1[t] = p[4 * t + 1];                                     \
        q2[t] = p[4 * t + 2]; q3[t] = p[4 * t + 3]; } }                             \
SB_CLONES static void sb_w4_in_rows_##S(SB_C(T) d0, SB_C(T) d1, SB_C(T) d2, SB_C(T) d3, \
        SB_C(T) d4, SB_C(T) d5, SB_R(T) r0, SB_R(T) r1, SB_R(T) r2, SB_R(T) r3,     \
        SB_R(T) r4, SB_R(T) r5, Py_ssize_t n) {                                     \
    for (Py_ssize_t j = 0; j < n; j++) {                                            \
        r0[j] = (T)4 * d0[j] - (T)5 * d2[j] + d4[j];                                \
        r1[j] = d3[j] + d4[j] - (T)4 * (d1[j] + d2[j]);                             \
        r2[j] = (T)4 * (d1[j] - d2[j]) + d4[j] - d3[j];                             \
        r3[j] = (T)2 * (d3[j] - d1[j]) + d4[j] - d2[j];                             \
        r4[j] = (T)2 * (d1[j] - d3[j]) + d4[j] - d2[j];                             \
        r5[j] = (T)4 * d1[j] - (T)5 * d3[j] + d5[j]; } }                            \
SB_CLONES static void sb_w4_in_cols_##S(SB_C(T) q0, SB_C(T) q1, SB_C(T) q2, SB_C(T) q3, \
        SB_R(T) v0, SB_R(T) v1, SB_R(T) v2, SB_R(T) v3, SB_R(T) v4, SB_R(T) v5,     \
        Py_ssize_t n) {                                                             \
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        v0[t] = (T)4 * q0[t] - (T)5 * q2[t] + q0[t + 1];                            \
        v1[t] = q3[t] + q0[t + 1] - (T)4 * (q1[t] + q2[t]);                         \
        v2[t] = (T)4 * (q1[t] - q2[t]) + q0[t + 1] - q3[t];                         \
        v3[t] = (T)2 * (q3[t] - q1[t]) + q0[t + 1] - q2[t];                         \
        v4[t] = (T)2 * (q1[t] - q3[t]) + q0[t + 1] - q2[t];                         \
        v5[t] = (T)4 * q1[t] - (T)5 * q3[t] + q1[t + 1]; } }                        \
SB_CLONES static void sb_w4_out_cols_##S(SB_C(T) m0, SB_C(T) m1, SB_C(T) m2,           \
        SB_C(T) m3, SB_C(T) m4, SB_C(T) m5, SB_R(T) a0, SB_R(T) a1, SB_R(T) a2,     \
        SB_R(T) a3, Py_ssize_t n) {                                                 \
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        a0[t] = m0[t] + m1[t] + m2[t] + m3[t] + m4[t];                              \
        a1[t] = m1[t] - m2[t] + (T)2 * (m3[t] - m4[t]);                             \
        a2[t] = m1[t] + m2[t] + (T)4 * (m3[t] + m4[t]);                             \
        a3[t] = m1[t] - m2[t] + (T)8 * (m3[t] - m4[t]) + m5[t]; } }                 \
SB_CLONES static void sb_w4_out_row_##S(SB_C(T) a0, SB_C(T) a1, SB_C(T) a2, SB_C(T) a3, \
        SB_C(T) a4, SB_C(T) a5, SB_R(T) row, Py_ssize_t n) {                        \
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        row[4 * t] = a0[t] + a1[t] + a2[t] + a3[t] + a4[t];                         \
        row[4 * t + 1] = a1[t] - a2[t] + (T)2 * (a3[t] - a4[t]);                    \
        row[4 * t + 2] = a1[t] + a2[t] + (T)4 * (a3[t] + a4[t]);                    \
        row[4 * t + 3] = a1[t] - a2[t] + (T)8 * (a3[t] - a4[t]) + a5[t]; } }
SB_WINO4(float, f)
SB_WINO4(double, d)
/* r = A q for A = [[1,0,0,0],[1,1,1,1],[1,-1,1,-1],[1,2,4,8],[1,-2,4,-8],[0,0,0,1]] */
#define SB_WINO4G(T, S)                                                            \
SB_CLONES static void sb_w4_a_##S(SB_C(T) q0, SB_C(T) q1, SB_C(T) q2, SB_C(T) q3,      \
        SB_R(T) r0, SB_R(T) r1, SB_R(T) r2, SB_R(T) r3, SB_R(T) r4, SB_R(T) r5,     \
        Py_ssize_t n) {                                                             \
    for (Py_ssize_t j = 0; j < n; j++) {                                            \
        T e = q0[j] + q2[j], o = q1[j] + q3[j];                                     \
        T e4 = q0[j] + (T)4 * q2[j], o8 = (T)2 * q1[j] + (T)8 * q3[j];              \
        r0[j] = q0[j]; r1[j] = e + o; r2[j] = e - o;                                \
        r3[j] = e4 + o8; r4[j] = e4 - o8; r5[j] = q3[j]; } }
SB_WINO4G(float, f)
SB_WINO4G(double, d)
/* U = G a G^T of F(4x4, 3x3), in double and rounded once, for n kernels held as 9 tap
 * planes a[t * 64 + j] (t = 3 * row + column) -> 36 planes u[xi * 64 + j]; G is in
 * _winograd.pyx.  Each lane runs the scalar sequence of operations (the divisions
 * included: no reciprocals), so vectorised across kernels it gives the same bits. */
#define SB_WT4(T, S)                                                               \
SB_CLONES static void sb_w4_wt_##S(const T* restrict a, T* restrict u, Py_ssize_t n) { \
    for (Py_ssize_t j = 0; j < n; j++) {                                            \
        double b[6][3];                                                             \
        for (int i = 0; i < 3; i++) {   /* b = G a (columns) */                     \
            double w0 = a[i * 64 + j], w1 = a[(3 + i) * 64 + j];                    \
            double w2 = a[(6 + i) * 64 + j];                                        \
            b[0][i] = w0 / 4.0;                                                     \
            b[1][i] = (-((w0 + w1) + w2)) / 6.0;                                    \
            b[2][i] = (-((w0 - w1) + w2)) / 6.0;                                    \
            b[3][i] = ((w0 / 24.0) + (w1 / 12.0)) + (w2 / 6.0);                     \
            b[4][i] = ((w0 / 24.0) - (w1 / 12.0)) + (w2 / 6.0);                     \
            b[5][i] = w2; }                                                         \
        for (int k = 0; k < 6; k++) {   /* u = b G^T (rows) */                      \
            double w0 = b[k][0], w1 = b[k][1], w2 = b[k][2];                        \
            u[(6 * k) * 64 + j] = (T)(w0 / 4.0);                                    \
            u[(6 * k + 1) * 64 + j] = (T)((-((w0 + w1) + w2)) / 6.0);               \
            u[(6 * k + 2) * 64 + j] = (T)((-((w0 - w1) + w2)) / 6.0);               \
            u[(6 * k + 3) * 64 + j] = (T)(((w0 / 24.0) + (w1 / 12.0)) + (w2 / 6.0)); \
            u[(6 * k + 4) * 64 + j] = (T)(((w0 / 24.0) - (w1 / 12.0)) + (w2 / 6.0)); \
            u[(6 * k + 5) * 64 + j] = (T)w2; } } }
SB_WT4(float, f)
SB_WT4(double, d)

#endif
