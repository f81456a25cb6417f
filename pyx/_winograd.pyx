# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Winograd F(2x2, 3x3) transforms for 3x3 stride-1 convolution (kernel contract: pyx/fused.pxd).

Output tile ``t = (s, th, tw)`` (sample ``s`` of the chunk, tile row/column)
covers outputs ``[2*th, 2*th+2) x [2*tw, 2*tw+2)``; its 4x4 input patch ``d``
starts at row ``2*th - ph`` and column ``2*tw - pw`` (zero outside the input)::

    V[xi, c, t] = (B^T d B)[xi]        B^T = [[1, 0, -1, 0], [0, 1, 1, 0],
                                              [0, -1, 1, 0], [0, 1, 0, -1]]
    M[xi] = U[xi] @ V[xi]              (GEMM in numpy; U = G w G^T per (o, c))
    y[s, o, 2th:2th+2, 2tw:2tw+2] = A^T M A,   A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

``xi = 4 * i + j`` indexes the 4x4 transformed tile.  The 16 point planes of ``V``,
``M`` and ``Gt`` may lie a padded pitch apart (``strides[0]``): a pitch that is a
multiple of 4 KiB makes the 16 streams alias in the cache.  So those arrays are
declared strided (``[:, :, :]``); each (rows, tiles) point plane must still be
C-contiguous (the wrapper's buffers are).  Tiles are numbered
``t = (s * tiles_h + th) * tiles_w + tw``.  Every ``prange`` iteration owns one
channel (input transform) or one output channel (output transform): results
are bitwise identical for any thread count.
"""

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from fused cimport real


def input_transform(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
                    real[:, :, :] V,                 # OUT (16, C, nb*tiles_h*tiles_w)
                    Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                    Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``V = B^T d B`` for every 4x4 input patch of samples ``n0 .. n0+nb-1``.

    Per tile row: the four zero-padded input rows are combined with ``B^T`` over
    the whole row width first, then ``B`` runs along the row (stride-2 patches).
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t pitch = V.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t wp = 2 * tiles_w + 2          # padded row width covered by the tiles
    cdef Py_ssize_t lo = pw, hi                   # columns [lo, hi) of the padded row hold data
    cdef Py_ssize_t c, s, th, tw, i, k, j, ih, t0, n_data
    cdef real* buf
    cdef real* p
    cdef real* r
    cdef real* v
    hi = pw + W
    if hi > wp:
        hi = wp
    n_data = hi - lo
    cdef int[1] failed
    failed[0] = 0
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(8 * wp * sizeof(real))   # 4 padded rows + 4 combined rows
        if buf != NULL:
            for c in prange(C, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        for i in range(4):
                            p = buf + i * wp
                            ih = 2 * th - ph + i
                            if ih < 0 or ih >= H or n_data <= 0:
                                memset(p, 0, wp * sizeof(real))
                            else:
                                if lo > 0:
                                    memset(p, 0, lo * sizeof(real))
                                memcpy(p + lo, &x[n0 + s, c, ih, 0], n_data * sizeof(real))
                                if hi < wp:
                                    memset(p + hi, 0, (wp - hi) * sizeof(real))
                        r = buf + 4 * wp
                        for j in range(wp):   # rows: r = B^T d
                            r[j] = buf[j] - buf[2 * wp + j]
                            r[wp + j] = buf[wp + j] + buf[2 * wp + j]
                            r[2 * wp + j] = buf[2 * wp + j] - buf[wp + j]
                            r[3 * wp + j] = buf[wp + j] - buf[3 * wp + j]
                        t0 = (s * tiles_h + th) * tiles_w
                        for k in range(4):    # columns: V = r B
                            p = r + k * wp
                            v = &V[4 * k, c, t0]
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw] - p[2 * tw + 2]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw + 1] + p[2 * tw + 2]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw + 2] - p[2 * tw + 1]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw + 1] - p[2 * tw + 3]
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


def output_transform(const real[:, :, :] M,       # IN  (16, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,        # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t OT = M.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t o, s, th, tw, i, t0, oh
    cdef const real* m
    cdef real* buf
    cdef real* a
    cdef real* row
    cdef Py_ssize_t wt = 2 * tiles_w
    cdef int[1] failed
    failed[0] = 0
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc((8 * tiles_w + 2 * wt) * sizeof(real))  # a[2][4] rows + 2 out rows
        if buf != NULL:
            for o in prange(O, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        t0 = (s * tiles_h + th) * tiles_w
                        m = &M[0, o, t0]
                        a = buf
                        # a[0][i] = m0i + m1i + m2i,  a[1][i] = m1i - m2i - m3i  (rows of A^T)
                        for i in range(4):
                            for tw in range(tiles_w):
                                a[i * tiles_w + tw] = (m[i * OT + tw] + m[(4 + i) * OT + tw]
                                                       + m[(8 + i) * OT + tw])
                                a[(4 + i) * tiles_w + tw] = (m[(4 + i) * OT + tw]
                                                             - m[(8 + i) * OT + tw]
                                                             - m[(12 + i) * OT + tw])
                        row = buf + 8 * tiles_w
                        for i in range(2):
                            for tw in range(tiles_w):
                                row[i * wt + 2 * tw] = (a[(4 * i) * tiles_w + tw]
                                                        + a[(4 * i + 1) * tiles_w + tw]
                                                        + a[(4 * i + 2) * tiles_w + tw])
                                row[i * wt + 2 * tw + 1] = (a[(4 * i + 1) * tiles_w + tw]
                                                            - a[(4 * i + 2) * tiles_w + tw]
                                                            - a[(4 * i + 3) * tiles_w + tw])
                        oh = 2 * th
                        memcpy(&y[n0 + s, o, oh, 0], row, Wo * sizeof(real))
                        if oh + 1 < Ho:
                            memcpy(&y[n0 + s, o, oh + 1, 0], row + wt, Wo * sizeof(real))
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


def grad_transform(const real[:, :, :, ::1] g,   # IN  (N, O, Ho, Wo)
                   real[:, :, :] Gt,                # OUT (16, O, nb*tiles_h*tiles_w)
                   Py_ssize_t n0, Py_ssize_t nb,
                   Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``Gt = A q A^T`` for every 2x2 output-gradient tile ``q`` (zero past ``Ho``/``Wo``).

    With ``V`` from :func:`input_transform`, the weight gradient of the tile is
    ``G^T (V ⊙ Gt) G`` (the adjoint of F(2x2, 3x3) in the weight), so
    ``dW = G^T (sum_t Gt[:, :, t] V[:, :, t]^T) G``: 16 GEMMs over tiles.
    ``A = [[1, 0], [1, 1], [1, -1], [0, -1]]``.  Per tile row, as in
    :func:`input_transform`: the two (zero-padded) gradient rows are combined with
    ``A`` over the whole width, then ``A^T`` runs along the row.
    """
    cdef Py_ssize_t O = g.shape[1], Ho = g.shape[2], Wo = g.shape[3]
    cdef Py_ssize_t pitch = Gt.strides[0] // sizeof(real)
    cdef Py_ssize_t wt = 2 * tiles_w
    cdef Py_ssize_t o, s, th, tw, i, j, k, oh, t0
    cdef real* buf
    cdef real* p
    cdef real* r
    cdef real* v
    cdef int[1] failed
    failed[0] = 0
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(6 * wt * sizeof(real))   # 2 padded rows + 4 combined rows
        if buf != NULL:
            for o in prange(O, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        for i in range(2):
                            p = buf + i * wt
                            oh = 2 * th + i
                            if oh >= Ho:
                                memset(p, 0, wt * sizeof(real))
                            else:
                                memcpy(p, &g[n0 + s, o, oh, 0], Wo * sizeof(real))
                                if Wo < wt:
                                    memset(p + Wo, 0, (wt - Wo) * sizeof(real))
                        r = buf + 2 * wt
                        for j in range(wt):   # rows: r = A q
                            r[j] = buf[j]
                            r[wt + j] = buf[j] + buf[wt + j]
                            r[2 * wt + j] = buf[j] - buf[wt + j]
                            r[3 * wt + j] = -buf[wt + j]
                        t0 = (s * tiles_h + th) * tiles_w
                        for k in range(4):    # columns: Gt = r A^T
                            p = r + k * wt
                            v = &Gt[4 * k, o, t0]
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw] + p[2 * tw + 1]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw] - p[2 * tw + 1]
                            v = v + pitch
                            for tw in range(tiles_w):
                                v[tw] = -p[2 * tw + 1]
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


cdef inline void _transform_kernel(const real* w, Py_ssize_t sk, Py_ssize_t si,
                                   real* u, Py_ssize_t su) noexcept nogil:
    """``u[xi * su] = (G a G^T)[xi]`` for the 3x3 kernel ``a[k][i] = w[k * sk + i * si]``
    (local arrays here, so every OpenMP thread has its own)."""
    cdef real b[4][3]
    cdef real half = 0.5
    cdef Py_ssize_t i, k
    for i in range(3):   # b = G a (columns)
        b[0][i] = w[i * si]
        b[1][i] = (w[i * si] + w[sk + i * si] + w[2 * sk + i * si]) * half
        b[2][i] = (w[i * si] - w[sk + i * si] + w[2 * sk + i * si]) * half
        b[3][i] = w[2 * sk + i * si]
    for k in range(4):   # u = b G^T (rows)
        u[(4 * k) * su] = b[k][0]
        u[(4 * k + 1) * su] = (b[k][0] + b[k][1] + b[k][2]) * half
        u[(4 * k + 2) * su] = (b[k][0] - b[k][1] + b[k][2]) * half
        u[(4 * k + 3) * su] = b[k][2]


cdef inline void _fold_kernel(const real* p, Py_ssize_t sp, real* d) noexcept nogil:
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


cdef inline void _transform_run(const real* w, Py_ssize_t step, bint flip, Py_ssize_t count,
                                real* u, Py_ssize_t su) noexcept nogil:
    """Transform ``count`` kernels ``w + j * step`` (3x3, row-major; flipped if ``flip``)
    into ``u[xi * su + j]``.  Goes through a small local block so that the 16 output
    rows are written as contiguous runs (16 single-float streams ``su`` apart alias
    in the cache when ``su`` is a multiple of 4 KiB: measured 11.8 ms instead of
    0.3 ms for 128x384 kernels)."""
    cdef real blk[16 * 64]
    cdef Py_ssize_t j0, j, nb, xi
    for j0 in range(0, count, 64):
        nb = count - j0 if count - j0 < 64 else 64
        for j in range(nb):
            if flip:   # start at w[2, 2] and walk backwards
                _transform_kernel(w + (j0 + j) * step + 8, -3, -1, blk + j, 64)
            else:
                _transform_kernel(w + (j0 + j) * step, 3, 1, blk + j, 64)
        for xi in range(16):
            memcpy(u + xi * su + j0, blk + xi * 64, nb * sizeof(real))


def weight_transform(const real[:, :, :, ::1] w,   # IN  (O, C, 3, 3)
                     real[:, :, :] U,                 # OUT (16, O, C), or (16, C, O) if flipped
                     bint flip_transpose, int num_threads):
    """``U[xi, o, c] = (G w[o, c] G^T)[xi]``, ``G = [[1, 0, 0], [.5, .5, .5], [.5, -.5, .5],
    [0, 0, 1]]``.

    With ``flip_transpose`` the kernel of the input gradient is transformed instead:
    ``U[xi, c, o] = (G w'[c, o] G^T)[xi]`` with ``w'[c, o, k, l] = w[o, c, 2-k, 2-l]``.
    """
    cdef Py_ssize_t O = w.shape[0], C = w.shape[1]
    cdef Py_ssize_t su = U.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t o, c
    with nogil:
        if flip_transpose:
            for c in prange(C, schedule="static", num_threads=num_threads):
                _transform_run(&w[0, c, 0, 0], 9 * C, True, O, &U[0, c, 0], su)
        else:
            for o in prange(O, schedule="static", num_threads=num_threads):
                _transform_run(&w[o, 0, 0, 0], 9, False, C, &U[0, o, 0], su)


def weight_grad_fold(const real[:, :, :] P,        # IN  (16, O, C)
                     real[:, :, :, ::1] dW,        # OUT (O, C, 3, 3)
                     int num_threads):
    """``dW[o, c] = G^T P[:, o, c] G`` (``P`` as a 4x4 tile): the adjoint of
    :func:`weight_transform`, folding the 16 Winograd points back onto the 3x3 taps."""
    cdef Py_ssize_t O = dW.shape[0], C = dW.shape[1]
    cdef Py_ssize_t o, c
    with nogil:
        for o in prange(O, schedule="static", num_threads=num_threads):
            for c in range(C):
                _fold_kernel(&P[0, o, c], P.strides[0] // sizeof(real), &dW[o, c, 0, 0])
