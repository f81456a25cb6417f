# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""The weight side of the Winograd convolutions (kernel contract: pyx/fused.pxd).

``weight_transform`` turns 3x3 kernels into the ``(M+2)**2`` points of F(MxM, 3x3)
(``U = G w G^T``), ``weight_grad_fold`` folds the points of a weight gradient back onto
the taps (``dW = G^T P G``, its adjoint), for M = 2 and 4 (from the number of points); the matrices ``G`` are in
``_winograd.pyx``, which holds the data-side transforms.  Each
kernel or channel run is one ``prange`` iteration's: results are bitwise identical for
any thread count.
"""

from cython.parallel cimport prange

from fused cimport real

# The transform and the fold themselves are in C (wino_weights.h), shared with the
# convolutions that run them inside their own OpenMP region (wino_fused.h).
cdef extern from "wino_weights.h" nogil:
    void sb_weight_run_f(const float* w, Py_ssize_t O, Py_ssize_t C, Py_ssize_t ks, int tile,
                         int flip, int c_major, Py_ssize_t k, float* u, Py_ssize_t su,
                         Py_ssize_t sr)
    void sb_weight_run_d(const double* w, Py_ssize_t O, Py_ssize_t C, Py_ssize_t ks, int tile,
                         int flip, int c_major, Py_ssize_t k, double* u, Py_ssize_t su,
                         Py_ssize_t sr)
    void sb_fold_row_f(const float* p, Py_ssize_t sp, Py_ssize_t so, Py_ssize_t sc,
                       Py_ssize_t C, int tile, Py_ssize_t o, float* dw)
    void sb_fold_row_d(const double* p, Py_ssize_t sp, Py_ssize_t so, Py_ssize_t sc,
                       Py_ssize_t C, int tile, Py_ssize_t o, double* dw)


# ------------------------------------------------------------------ both tile sizes

def weight_transform(const real[:, :, :, :] w,     # IN  (O, C, 3, 3), 3x3 kernels contiguous
                     real[:, :, :] U,              # OUT (P, O, C), or (P, C, O) if c_major
                     bint flip, bint c_major, int num_threads):
    """``U[xi, o, c] = (G w[o, c] G^T)[xi]`` for the ``P = 16`` points of F(2x2, 3x3)
    (``G = [[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]]``) or the 36 of F(4x4,
    3x3) (``G`` in _winograd.pyx, computed in double and rounded once), from
    ``U.shape[0]``.

    With ``flip`` the kernels are flipped first (``w[o, c, 2-k, 2-l]``: the input
    gradient's kernel, whose matrix is the transpose).  With ``c_major`` the output is
    stored ``U[xi, c, o]`` instead: either storage serves either GEMM operand.

    ``w``: each 3x3 kernel contiguous, the kernels ``w.strides[1]`` apart and rows ``C``
    kernels apart (C-contiguous, or one depth tap ``w5[:, :, kz]`` of a C-contiguous 3x3x3
    weight, read in place; the caller's ``_winograd._kernels_in_place`` sees to it).
    """
    cdef Py_ssize_t O = w.shape[0], C = w.shape[1]
    cdef Py_ssize_t ks = w.strides[1] // sizeof(real)   # between kernels: 9, or 27 (a tap)
    cdef Py_ssize_t su = U.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t sr = U.strides[1] // sizeof(real)   # between runs
    cdef Py_ssize_t k
    cdef int tile = 4 if U.shape[0] == 36 else 2
    with nogil:
        for k in prange(C if c_major else O, schedule="static", num_threads=num_threads):
            if real is float:
                sb_weight_run_f(&w[0, 0, 0, 0], O, C, ks, tile, flip, c_major, k, &U[0, 0, 0],
                                su, sr)
            else:
                sb_weight_run_d(&w[0, 0, 0, 0], O, C, ks, tile, flip, c_major, k, &U[0, 0, 0],
                                su, sr)


def weight_grad_fold(const real[:, :, :] P,     # IN  (16 or 36, O, C)
                     real[:, :, :, ::1] dW,     # OUT (O, C, 3, 3)
                     int num_threads):
    """``dW[o, c] = G^T P[:, o, c] G``: the adjoint of the weight transform, folding the
    16 (F(2x2, 3x3)) or 36 (F(4x4, 3x3)) Winograd points back onto the 3x3 taps."""
    cdef Py_ssize_t O = dW.shape[0], C = dW.shape[1]
    cdef Py_ssize_t o
    cdef Py_ssize_t sp = P.strides[0] // sizeof(real), so = P.strides[1] // sizeof(real)
    cdef Py_ssize_t sc = P.strides[2] // sizeof(real)   # 1: runs of contiguous channels
    cdef int tile = 4 if P.shape[0] == 36 else 2
    with nogil:
        for o in prange(O, schedule="static", num_threads=num_threads):
            if real is float:
                sb_fold_row_f(&P[0, 0, 0], sp, so, sc, C, tile, o, &dW[0, 0, 0, 0])
            else:
                sb_fold_row_d(&P[0, 0, 0], sp, so, sc, C, tile, o, &dW[0, 0, 0, 0])
