# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Winograd F(4x4, 3x3) transforms for 3x3 stride-1 convolution (kernel contract: pyx/fused.pxd).

The layout is that of ``pyx/_winograd.pyx`` with 4x4 output tiles and 36 points:
tile ``t = (s * tiles_h + th) * tiles_w + tw`` covers outputs
``[4*th, 4*th+4) x [4*tw, 4*tw+4)``; its 6x6 input patch ``d`` starts at row
``4*th - ph``, column ``4*tw - pw`` (zero outside the input)::

    V[xi, c, t] = (B^T d B)[xi]     M[xi] = U[xi] @ V[xi]     y_tile = A^T M A
    U[xi, o, c] = (G w[o, c] G^T)[xi]                          xi = 6 * i + j

with (interpolation points 0, 1, -1, 2, -2, infinity)::

    B^T = [[4,  0, -5,  0, 1, 0],     G = [[ 1/4,     0,    0],    A^T = [[1, 1,  1, 1,  1, 0],
           [0, -4, -4,  1, 1, 0],          [-1/6,  -1/6, -1/6],           [0, 1, -1, 2, -2, 0],
           [0,  4, -4, -1, 1, 0],          [-1/6,   1/6, -1/6],           [0, 1,  1, 4,  4, 0],
           [0, -2, -1,  2, 1, 0],          [1/24, 1/12,  1/6],            [0, 1, -1, 8, -8, 1]]
           [0,  2, -1, -2, 1, 0],          [1/24, -1/12, 1/6],
           [0,  4,  0, -5, 0, 1]]          [   0,     0,    1]]

36 multiplies per 16 outputs and channel pair instead of 144: 1.78x fewer GEMM
flops than F(2x2, 3x3), at a larger float32 rounding error (the factors reach 8
and 1/24; tests bound it against the float64 reference).  Every ``prange``
iteration owns one channel or one output channel: results are bitwise identical
for any thread count.  The 36 point planes may lie a padded pitch apart
(``strides[0]``, see ``_winograd.pyx``); each point plane is C-contiguous.
"""

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from fused cimport real


def input_transform(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
                    real[:, :, :] V,                # OUT (36, C, nb*tiles_h*tiles_w)
                    Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                    Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``V = B^T d B`` for every 6x6 input patch of samples ``n0 .. n0+nb-1``.

    Per tile row, every loop but one runs over contiguous memory (so the compiler
    vectorises it): the six zero-padded input rows are split into their four
    column phases ``D[i][l][tw] = row_i[4*tw + l]`` (the one strided pass), ``B^T``
    combines the rows, then ``B`` combines phases (``row[4*tw + 4]`` is phase 0
    at ``tw + 1``).  Measured at 16 channels 64x64, batch 8: 2.6 ms with
    stride-4 loops, see docs/convolution.md for the current figure.
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t pitch = V.strides[0] // sizeof(real)
    cdef real c2 = 2, c4 = 4, c5 = 5   # typed: a literal would make Cython compute in double
    cdef Py_ssize_t L = tiles_w + 1                 # phase length (one extra for the tail)
    cdef Py_ssize_t wp = 4 * L                      # padded row width
    cdef Py_ssize_t lo = pw, hi
    cdef Py_ssize_t c, s, th, tw, i, k, j, l, ih, t0, n_data
    cdef real* buf
    cdef real* p
    cdef real* dph
    cdef real* r
    cdef real* v
    cdef real* q0
    cdef real* q1
    cdef real* q2
    cdef real* q3
    hi = pw + W
    if hi > wp:
        hi = wp
    n_data = hi - lo
    cdef int[1] failed
    failed[0] = 0
    with nogil, parallel(num_threads=num_threads):
        # one padded row + D (6 rows x 4 phases x L) + R (6 rows x 4 phases x L)
        buf = <real*> malloc((wp + 48 * L) * sizeof(real))
        if buf != NULL:
            for c in prange(C, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        for i in range(6):
                            dph = buf + wp + i * wp          # D[i]: 4 phases of L
                            ih = 4 * th - ph + i
                            if ih < 0 or ih >= H or n_data <= 0:
                                memset(dph, 0, wp * sizeof(real))
                                continue
                            p = buf
                            if lo > 0:
                                memset(p, 0, lo * sizeof(real))
                            memcpy(p + lo, &x[n0 + s, c, ih, 0], n_data * sizeof(real))
                            if hi < wp:
                                memset(p + hi, 0, (wp - hi) * sizeof(real))
                            for l in range(4):
                                for tw in range(L):
                                    dph[l * L + tw] = p[4 * tw + l]
                        p = buf + wp
                        r = buf + wp + 24 * L
                        for j in range(wp):   # rows: R = B^T D (all phases at once)
                            r[j] = c4 * p[j] - c5 * p[2 * wp + j] + p[4 * wp + j]
                            r[wp + j] = p[3 * wp + j] + p[4 * wp + j] - c4 * (p[wp + j] + p[2 * wp + j])
                            r[2 * wp + j] = c4 * (p[wp + j] - p[2 * wp + j]) + p[4 * wp + j] - p[3 * wp + j]
                            r[3 * wp + j] = c2 * (p[3 * wp + j] - p[wp + j]) + p[4 * wp + j] - p[2 * wp + j]
                            r[4 * wp + j] = c2 * (p[wp + j] - p[3 * wp + j]) + p[4 * wp + j] - p[2 * wp + j]
                            r[5 * wp + j] = c4 * p[wp + j] - c5 * p[3 * wp + j] + p[5 * wp + j]
                        t0 = (s * tiles_h + th) * tiles_w
                        for k in range(6):    # columns: V = R B, over the phases
                            q0 = r + k * wp
                            q1 = q0 + L
                            q2 = q1 + L
                            q3 = q2 + L
                            v = &V[6 * k, c, t0]
                            for tw in range(tiles_w):
                                v[tw] = c4 * q0[tw] - c5 * q2[tw] + q0[tw + 1]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = q3[tw] + q0[tw + 1] - c4 * (q1[tw] + q2[tw])
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = c4 * (q1[tw] - q2[tw]) + q0[tw + 1] - q3[tw]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = c2 * (q3[tw] - q1[tw]) + q0[tw + 1] - q2[tw]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = c2 * (q1[tw] - q3[tw]) + q0[tw + 1] - q2[tw]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = c4 * q1[tw] - c5 * q3[tw] + q1[tw + 1]
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


def output_transform(const real[:, :, :] M,       # IN  (36, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,         # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t OT = M.strides[0] // sizeof(real)
    cdef real c2 = 2, c4 = 4, c8 = 8   # typed: a literal would make Cython compute in double
    cdef Py_ssize_t o, s, th, tw, i, j, t0, oh
    cdef const real* m
    cdef real* buf
    cdef real* a
    cdef real* row
    cdef real m0, m1, m2, m3, m4, m5
    cdef Py_ssize_t wt = 4 * tiles_w
    cdef int[1] failed
    failed[0] = 0
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc((24 * tiles_w + 4 * wt) * sizeof(real))  # a[4][6] rows + 4 rows
        if buf != NULL:
            for o in prange(O, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        t0 = (s * tiles_h + th) * tiles_w
                        m = &M[0, o, t0]
                        a = buf
                        # a[i][j] = sum_k A^T[i][k] M[6k + j]: rows of A^T over the 6 point rows
                        for j in range(6):
                            for tw in range(tiles_w):
                                m0 = m[j * OT + tw]
                                m1 = m[(6 + j) * OT + tw]
                                m2 = m[(12 + j) * OT + tw]
                                m3 = m[(18 + j) * OT + tw]
                                m4 = m[(24 + j) * OT + tw]
                                m5 = m[(30 + j) * OT + tw]
                                a[j * tiles_w + tw] = m0 + m1 + m2 + m3 + m4
                                a[(6 + j) * tiles_w + tw] = m1 - m2 + c2 * (m3 - m4)
                                a[(12 + j) * tiles_w + tw] = m1 + m2 + c4 * (m3 + m4)
                                a[(18 + j) * tiles_w + tw] = m1 - m2 + c8 * (m3 - m4) + m5
                        row = buf + 24 * tiles_w
                        for i in range(4):
                            for tw in range(tiles_w):
                                m0 = a[(6 * i) * tiles_w + tw]
                                m1 = a[(6 * i + 1) * tiles_w + tw]
                                m2 = a[(6 * i + 2) * tiles_w + tw]
                                m3 = a[(6 * i + 3) * tiles_w + tw]
                                m4 = a[(6 * i + 4) * tiles_w + tw]
                                m5 = a[(6 * i + 5) * tiles_w + tw]
                                row[i * wt + 4 * tw] = m0 + m1 + m2 + m3 + m4
                                row[i * wt + 4 * tw + 1] = m1 - m2 + c2 * (m3 - m4)
                                row[i * wt + 4 * tw + 2] = m1 + m2 + c4 * (m3 + m4)
                                row[i * wt + 4 * tw + 3] = m1 - m2 + c8 * (m3 - m4) + m5
                        for i in range(4):
                            oh = 4 * th + i
                            if oh < Ho:
                                memcpy(&y[n0 + s, o, oh, 0], row + i * wt, Wo * sizeof(real))
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


cdef inline void _transform_kernel(const real* w, Py_ssize_t sk, Py_ssize_t si,
                                   real* u, Py_ssize_t su) noexcept nogil:
    """``u[xi * su] = (G a G^T)[xi]`` for ``a[k][i] = w[k * sk + i * si]``, in double."""
    cdef double b[6][3]
    cdef double w0, w1, w2
    cdef Py_ssize_t i, k
    for i in range(3):   # b = G a (columns)
        w0 = w[i * si]
        w1 = w[sk + i * si]
        w2 = w[2 * sk + i * si]
        b[0][i] = w0 / 4
        b[1][i] = -(w0 + w1 + w2) / 6
        b[2][i] = -(w0 - w1 + w2) / 6
        b[3][i] = w0 / 24 + w1 / 12 + w2 / 6
        b[4][i] = w0 / 24 - w1 / 12 + w2 / 6
        b[5][i] = w2
    for k in range(6):   # u = b G^T (rows)
        w0 = b[k][0]
        w1 = b[k][1]
        w2 = b[k][2]
        u[(6 * k) * su] = <real> (w0 / 4)
        u[(6 * k + 1) * su] = <real> (-(w0 + w1 + w2) / 6)
        u[(6 * k + 2) * su] = <real> (-(w0 - w1 + w2) / 6)
        u[(6 * k + 3) * su] = <real> (w0 / 24 + w1 / 12 + w2 / 6)
        u[(6 * k + 4) * su] = <real> (w0 / 24 - w1 / 12 + w2 / 6)
        u[(6 * k + 5) * su] = <real> w2


cdef inline void _transform_run(const real* w, Py_ssize_t step, bint flip, Py_ssize_t count,
                                real* u, Py_ssize_t su) noexcept nogil:
    """Transform ``count`` kernels ``w + j * step`` (flipped if ``flip``) into
    ``u[xi * su + j]`` through a local block (contiguous runs per point)."""
    cdef real blk[36 * 32]
    cdef Py_ssize_t j0, j, nb, xi
    for j0 in range(0, count, 32):
        nb = count - j0 if count - j0 < 32 else 32
        for j in range(nb):
            if flip:   # start at w[2, 2] and walk backwards
                _transform_kernel(w + (j0 + j) * step + 8, -3, -1, blk + j, 32)
            else:
                _transform_kernel(w + (j0 + j) * step, 3, 1, blk + j, 32)
        for xi in range(36):
            memcpy(u + xi * su + j0, blk + xi * 32, nb * sizeof(real))


def weight_transform(const real[:, :, :, ::1] w,   # IN  (O, C, 3, 3)
                     real[:, :, :] U,                # OUT (36, O, C), or (36, C, O) if flipped
                     bint flip_transpose, int num_threads):
    """``U[xi, o, c] = (G w[o, c] G^T)[xi]`` (computed in double, rounded once).

    With ``flip_transpose``: ``U[xi, c, o] = (G w'[c, o] G^T)[xi]`` with
    ``w'[c, o, k, l] = w[o, c, 2-k, 2-l]`` (the input gradient's kernel).
    """
    cdef Py_ssize_t O = w.shape[0], C = w.shape[1]
    cdef Py_ssize_t su = U.strides[0] // sizeof(real)
    cdef Py_ssize_t o, c
    with nogil:
        if flip_transpose:
            for c in prange(C, schedule="static", num_threads=num_threads):
                _transform_run(&w[0, c, 0, 0], 9 * C, True, O, &U[0, c, 0], su)
        else:
            for o in prange(O, schedule="static", num_threads=num_threads):
                _transform_run(&w[o, 0, 0, 0], 9, False, C, &U[0, o, 0], su)
