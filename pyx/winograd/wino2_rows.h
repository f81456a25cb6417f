/* The portable row and column loops of the Winograd F(2x2, 3x3) transforms
 * (pyx/winograd/_winograd.pyx), float and double.  Plain C on restrict pointer parameters so that gcc
 * vectorises them (written in Cython it could not rule out overlapping buffers and
 * left them scalar; gcc honours restrict on parameters, not on local pointers), each
 * with an AVX2 clone (SB_CLONES, simd_clones.h). */
#ifndef SANDBOX_WINO2_ROWS_H
#define SANDBOX_WINO2_ROWS_H

#include <stddef.h>
#include "simd_clones.h"

#define SB_WINO2(T, S)                                                             \
SB_CLONES static void sb_w2_in_rows_##S(const T* restrict d0, const T* restrict d1,    \
        const T* restrict d2, const T* restrict d3, T* restrict r0, T* restrict r1, \
        T* restrict r2, T* restrict r3, Py_ssize_t n) {                             \
    for (Py_ssize_t j = 0; j < n; j++) {                                            \
        r0[j] = d0[j] - d2[j]; r1[j] = d1[j] + d2[j];                               \
        r2[j] = d2[j] - d1[j]; r3[j] = d1[j] - d3[j]; } }                           \
SB_CLONES static void sb_w2_in_cols_##S(const T* restrict p, T* restrict v0,           \
        T* restrict v1, T* restrict v2, T* restrict v3, Py_ssize_t n) {             \
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        T a = p[2 * t], b = p[2 * t + 1], c = p[2 * t + 2], d = p[2 * t + 3];       \
        v0[t] = a - c; v1[t] = b + c; v2[t] = c - b; v3[t] = b - d; } }             \
SB_CLONES static void sb_w2_out_cols_##S(const T* restrict m0, const T* restrict m1,   \
        const T* restrict m2, const T* restrict m3, T* restrict a0, T* restrict a1, \
        Py_ssize_t n) {                                                             \
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        a0[t] = m0[t] + m1[t] + m2[t]; a1[t] = m1[t] - m2[t] - m3[t]; } }           \
SB_CLONES static void sb_w2_out_row_##S(const T* restrict a0, const T* restrict a1,    \
        const T* restrict a2, const T* restrict a3, T* restrict row, Py_ssize_t n) {\
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        row[2 * t] = a0[t] + a1[t] + a2[t];                                         \
        row[2 * t + 1] = a1[t] - a2[t] - a3[t]; } }                                 \
SB_CLONES static void sb_w2_grad_rows_##S(const T* restrict q0, const T* restrict q1,  \
        T* restrict r0, T* restrict r1, T* restrict r2, T* restrict r3,             \
        Py_ssize_t n) {                                                             \
    for (Py_ssize_t j = 0; j < n; j++) {                                            \
        r0[j] = q0[j]; r1[j] = q0[j] + q1[j]; r2[j] = q0[j] - q1[j];                \
        r3[j] = -q1[j]; } }                                                         \
SB_CLONES static void sb_w2_grad_cols_##S(const T* restrict p, T* restrict v0,         \
        T* restrict v1, T* restrict v2, T* restrict v3, Py_ssize_t n) {             \
    for (Py_ssize_t t = 0; t < n; t++) {                                            \
        T a = p[2 * t], b = p[2 * t + 1];                                           \
        v0[t] = a; v1[t] = a + b; v2[t] = a - b; v3[t] = -b; } }
SB_WINO2(float, f)
SB_WINO2(double, d)
/* U = G a G^T for n kernels held as 9 tap planes a[t * 64 + j] -> 16 planes u[xi * 64 + j] */
#define SB_WT2(T, S)                                                               \
SB_CLONES static void sb_w2_wt_##S(const T* restrict a, T* restrict u, Py_ssize_t n) { \
    const T h = (T)0.5;                                                             \
    for (Py_ssize_t j = 0; j < n; j++) {                                            \
        T b[4][3];                                                                  \
        for (int i = 0; i < 3; i++) {                                               \
            T a0 = a[i * 64 + j], a1 = a[(3 + i) * 64 + j], a2 = a[(6 + i) * 64 + j]; \
            b[0][i] = a0; b[1][i] = (a0 + a1 + a2) * h;                             \
            b[2][i] = (a0 - a1 + a2) * h; b[3][i] = a2; }                           \
        for (int k = 0; k < 4; k++) {                                               \
            u[(4 * k) * 64 + j] = b[k][0];                                          \
            u[(4 * k + 1) * 64 + j] = (b[k][0] + b[k][1] + b[k][2]) * h;            \
            u[(4 * k + 2) * 64 + j] = (b[k][0] - b[k][1] + b[k][2]) * h;            \
            u[(4 * k + 3) * 64 + j] = b[k][2]; } } }
SB_WT2(float, f)
SB_WT2(double, d)

#endif
