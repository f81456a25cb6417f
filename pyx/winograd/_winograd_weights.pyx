# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""The weight side of the Winograd convolutions (kernel contract: pyx/fused.pxd).

``weight_transform`` turns 3x3 kernels into the ``(M+2)**2`` points of F(MxM, 3x3)
(``U = G w G^T``), ``weight_grad_fold`` folds the points of a weight gradient back onto
the taps (``dW = G^T P G``, its adjoint), for M = 2 and 4 (from the number of points); the matrices ``G`` are in
``_winograd.pyx`` and ``_winograd4.pyx``, which hold the data-side transforms.  Each
kernel or channel run is one ``prange`` iteration's: results are bitwise identical for
any thread count.
"""

from cython.parallel cimport prange

from fused cimport real

# The transform itself is in C (wino_weights.h), shared with the convolutions that run it
# inside their own OpenMP region (wino_fused.h).
cdef extern from "wino_weights.h" nogil:
    void sb_weight_run_f(const float* w, Py_ssize_t O, Py_ssize_t C, int tile, int flip,
                         int c_major, Py_ssize_t k, float* u, Py_ssize_t su, Py_ssize_t sr)
    void sb_weight_run_d(const double* w, Py_ssize_t O, Py_ssize_t C, int tile, int flip,
                         int c_major, Py_ssize_t k, double* u, Py_ssize_t su, Py_ssize_t sr)


# ------------------------------------------------------------------ F(2x2, 3x3)

cdef inline void w2_fold_kernel(const real* p, Py_ssize_t sp, real* d) noexcept nogil:
    """``d = G^T P G`` (3x3, row-major) for the 4x4 tile ``P[xi] = p[xi * sp]``."""
    cdef real b[3][4]
    cdef real half = 0.5
    cdef Py_ssize_t i, k
    for i in range(4):   # b = G^T P (3 x 4)
        b[0][i] = p[i * sp] + (p[(4 + i) * sp] + p[(8 + i) * sp]) * half
        b[1][i] = (p[(4 + i) * sp] - p[(8 + i) * sp]) * half
        b[2][i] = (p[(4 + i) * sp] + p[(8 + i) * sp]) * half + p[(12 + i) * sp]
    for k in range(3):   # d = b G
        d[3 * k] = b[k][0] + (b[k][1] + b[k][2]) * half
        d[3 * k + 1] = (b[k][1] - b[k][2]) * half
        d[3 * k + 2] = (b[k][1] + b[k][2]) * half + b[k][3]


cdef inline void w2_fold_run(const real* p, Py_ssize_t sp, Py_ssize_t count,
                           real* d) noexcept nogil:
    """:func:`w2_fold_kernel` for ``count`` consecutive tiles ``p + j`` (``P[xi] = p[xi * sp + j]``)
    into ``d[9 * j:9 * j + 9]``, 16 tiles at a time with the tiles innermost (contiguous
    vector operations; the same arithmetic per tile as :func:`w2_fold_kernel`)."""
    cdef real b[3][4][16]
    cdef real half = 0.5
    cdef Py_ssize_t j0, nb, i, k, l
    cdef const real* q
    for j0 in range(0, count, 16):
        nb = count - j0 if count - j0 < 16 else 16
        q = p + j0
        for i in range(4):   # b = G^T P (3 x 4)
            for l in range(nb):
                b[0][i][l] = q[i * sp + l] + (q[(4 + i) * sp + l] + q[(8 + i) * sp + l]) * half
                b[1][i][l] = (q[(4 + i) * sp + l] - q[(8 + i) * sp + l]) * half
                b[2][i][l] = (q[(4 + i) * sp + l] + q[(8 + i) * sp + l]) * half + q[(12 + i) * sp + l]
        for k in range(3):   # d = b G
            for l in range(nb):
                d[9 * (j0 + l) + 3 * k] = b[k][0][l] + (b[k][1][l] + b[k][2][l]) * half
                d[9 * (j0 + l) + 3 * k + 1] = (b[k][1][l] - b[k][2][l]) * half
                d[9 * (j0 + l) + 3 * k + 2] = (b[k][1][l] + b[k][2][l]) * half + b[k][3][l]




# ------------------------------------------------------------------ F(4x4, 3x3)

cdef inline void w4_fold_gt(double v0, double v1, double v2, double v3, double v4, double v5,
                          double* t) noexcept nogil:
    """``t = G^T v`` for one column of 6 points."""
    t[0] = v0 / 4 - (v1 + v2) / 6 + (v3 + v4) / 24
    t[1] = (v2 - v1) / 6 + (v3 - v4) / 12
    t[2] = (v3 + v4 - v1 - v2) / 6 + v5


cdef inline void w4_fold_kernel(const real* p, Py_ssize_t sp, real* d) noexcept nogil:
    """``d = G^T P G`` (3x3, row-major) for the 6x6 tile ``P[xi] = p[xi * sp]``, in double."""
    cdef double b[6][3]
    cdef double t[3]
    cdef Py_ssize_t j, k
    for j in range(6):   # b[j] = G^T P[:, j]
        w4_fold_gt(p[j * sp], p[(6 + j) * sp], p[(12 + j) * sp], p[(18 + j) * sp],
                 p[(24 + j) * sp], p[(30 + j) * sp], b[j])
    for k in range(3):   # d[k] = b[:, k] G
        w4_fold_gt(b[0][k], b[1][k], b[2][k], b[3][k], b[4][k], b[5][k], t)
        d[3 * k] = <real> t[0]
        d[3 * k + 1] = <real> t[1]
        d[3 * k + 2] = <real> t[2]


cdef inline void w4_fold_run(const real* p, Py_ssize_t sp, Py_ssize_t count,
                           real* d) noexcept nogil:
    """:func:`w4_fold_kernel` for ``count`` consecutive tiles ``p + j`` (``P[xi] = p[xi * sp + j]``)
    into ``d[9 * j:9 * j + 9]``, 16 tiles at a time with the tiles innermost, so every
    step is a contiguous vector operation (same arithmetic per tile)."""
    cdef double b[6][3][16]
    cdef double v[6][16]
    cdef double t0, t1, t2
    cdef Py_ssize_t j0, nb, i, j, k, l
    for j0 in range(0, count, 16):
        nb = count - j0 if count - j0 < 16 else 16
        for j in range(6):   # b[j] = G^T P[:, j]
            for i in range(6):
                for l in range(nb):
                    v[i][l] = p[(6 * i + j) * sp + j0 + l]
            for l in range(nb):
                b[j][0][l] = v[0][l] / 4 - (v[1][l] + v[2][l]) / 6 + (v[3][l] + v[4][l]) / 24
                b[j][1][l] = (v[2][l] - v[1][l]) / 6 + (v[3][l] - v[4][l]) / 12
                b[j][2][l] = (v[3][l] + v[4][l] - v[1][l] - v[2][l]) / 6 + v[5][l]
        for k in range(3):   # d[k] = b[:, k] G
            for l in range(nb):
                t0 = (b[0][k][l] / 4 - (b[1][k][l] + b[2][k][l]) / 6
                      + (b[3][k][l] + b[4][k][l]) / 24)
                t1 = (b[2][k][l] - b[1][k][l]) / 6 + (b[3][k][l] - b[4][k][l]) / 12
                t2 = (b[3][k][l] + b[4][k][l] - b[1][k][l] - b[2][k][l]) / 6 + b[5][k][l]
                d[9 * (j0 + l) + 3 * k] = <real> t0
                d[9 * (j0 + l) + 3 * k + 1] = <real> t1
                d[9 * (j0 + l) + 3 * k + 2] = <real> t2


# ------------------------------------------------------------------ both tile sizes

def weight_transform(const real[:, :, :, ::1] w,   # IN  (O, C, 3, 3)
                     real[:, :, :] U,              # OUT (P, O, C), or (P, C, O) if c_major
                     bint flip, bint c_major, int num_threads):
    """``U[xi, o, c] = (G w[o, c] G^T)[xi]`` for the ``P = 16`` points of F(2x2, 3x3)
    (``G = [[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]]``) or the 36 of F(4x4,
    3x3) (``G`` in _winograd4.pyx, computed in double and rounded once), from
    ``U.shape[0]``.

    With ``flip`` the kernels are flipped first (``w[o, c, 2-k, 2-l]``: the input
    gradient's kernel, whose matrix is the transpose).  With ``c_major`` the output is
    stored ``U[xi, c, o]`` instead: either storage serves either GEMM operand.
    """
    cdef Py_ssize_t O = w.shape[0], C = w.shape[1]
    cdef Py_ssize_t su = U.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t sr = U.strides[1] // sizeof(real)   # between runs
    cdef Py_ssize_t k
    cdef int tile = 4 if U.shape[0] == 36 else 2
    with nogil:
        for k in prange(C if c_major else O, schedule="static", num_threads=num_threads):
            if real is float:
                sb_weight_run_f(&w[0, 0, 0, 0], O, C, tile, flip, c_major, k, &U[0, 0, 0], su,
                                sr)
            else:
                sb_weight_run_d(&w[0, 0, 0, 0], O, C, tile, flip, c_major, k, &U[0, 0, 0], su,
                                sr)


def weight_grad_fold(const real[:, :, :] P,     # IN  (16 or 36, O, C)
                     real[:, :, :, ::1] dW,     # OUT (O, C, 3, 3)
                     int num_threads):
    """``dW[o, c] = G^T P[:, o, c] G``: the adjoint of the weight transform, folding the
    16 (F(2x2, 3x3)) or 36 (F(4x4, 3x3)) Winograd points back onto the 3x3 taps."""
    cdef Py_ssize_t O = dW.shape[0], C = dW.shape[1]
    cdef Py_ssize_t o, c
    cdef Py_ssize_t sp = P.strides[0] // sizeof(real)
    cdef bint f4 = P.shape[0] == 36
    cdef bint runs = P.strides[2] == sizeof(real)   # runs need contiguous channels
    with nogil:
        for o in prange(O, schedule="static", num_threads=num_threads):
            if runs:
                if f4:
                    w4_fold_run(&P[0, o, 0], sp, C, &dW[o, 0, 0, 0])
                else:
                    w2_fold_run(&P[0, o, 0], sp, C, &dW[o, 0, 0, 0])
            else:
                for c in range(C):
                    if f4:
                        w4_fold_kernel(&P[0, o, c], sp, &dW[o, c, 0, 0])
                    else:
                        w2_fold_kernel(&P[0, o, c], sp, &dW[o, c, 0, 0])
