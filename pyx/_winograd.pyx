# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Winograd F(2x2, 3x3) transforms for 3x3 stride-1 convolution (kernel contract: pyx/fused.pxd).

Output tile ``t = (s, th, tw)`` (sample ``s`` of the chunk, tile row/column)
covers outputs ``[2*th, 2*th+2) x [2*tw, 2*tw+2)``; its 4x4 input patch ``d``
starts at row ``2*th - ph`` and column ``2*tw - pw`` (zero outside the input)::

    V[xi, c, t] = (B^T d B)[xi]        B^T = [[1, 0, -1, 0], [0, 1, 1, 0],
                                              [0, -1, 1, 0], [0, 1, 0, -1]]
    M[xi] = U[xi] @ V[xi]              (GEMM in numpy; U = G w G^T per (o, c))
    y[s, o, 2th:2th+2, 2tw:2tw+2] = A^T M A,   A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

``xi = 4 * i + j`` indexes the 4x4 transformed tile.  Tiles are numbered
``t = (s * tiles_h + th) * tiles_w + tw``.  Every ``prange`` iteration owns one
channel (input transform) or one output channel (output transform): results
are bitwise identical for any thread count.
"""

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from fused cimport real


def input_transform(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
                    real[:, :, ::1] V,              # OUT (16, C, nb*tiles_h*tiles_w)
                    Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                    Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``V = B^T d B`` for every 4x4 input patch of samples ``n0 .. n0+nb-1``.

    Per tile row: the four zero-padded input rows are combined with ``B^T`` over
    the whole row width first, then ``B`` runs along the row (stride-2 patches).
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t T = V.shape[2]
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
                            v = v + C * T
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw + 1] + p[2 * tw + 2]
                            v = v + C * T
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw + 2] - p[2 * tw + 1]
                            v = v + C * T
                            for tw in range(tiles_w):
                                v[tw] = p[2 * tw + 1] - p[2 * tw + 3]
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


def output_transform(const real[:, :, ::1] M,    # IN  (16, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,        # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t OT = M.shape[1] * M.shape[2]
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
                   real[:, :, ::1] Gt,             # OUT (16, O, nb*tiles_h*tiles_w)
                   Py_ssize_t n0, Py_ssize_t nb,
                   Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads):
    """``Gt = A q A^T`` for every 2x2 output-gradient tile ``q`` (zero past ``Ho``/``Wo``).

    With ``V`` from :func:`input_transform`, the weight gradient of the tile is
    ``G^T (V ⊙ Gt) G`` (the adjoint of F(2x2, 3x3) in the weight), so
    ``dW = G^T (sum_t Gt[:, :, t] V[:, :, t]^T) G``: 16 GEMMs over tiles.
    ``A = [[1, 0], [1, 1], [1, -1], [0, -1]]``.
    """
    cdef Py_ssize_t O = g.shape[1], Ho = g.shape[2], Wo = g.shape[3]
    cdef Py_ssize_t OT = Gt.shape[1] * Gt.shape[2]
    cdef Py_ssize_t o, s, th, tw, i, t, oh, ow
    cdef real q00, q01, q10, q11
    cdef real r[4][2]
    cdef real* dst
    with nogil:
        for o in prange(O, schedule="static", num_threads=num_threads):
            for s in range(nb):
                for th in range(tiles_h):
                    oh = 2 * th
                    for tw in range(tiles_w):
                        ow = 2 * tw
                        t = (s * tiles_h + th) * tiles_w + tw
                        q00 = g[n0 + s, o, oh, ow]
                        q01 = g[n0 + s, o, oh, ow + 1] if ow + 1 < Wo else 0
                        q10 = g[n0 + s, o, oh + 1, ow] if oh + 1 < Ho else 0
                        q11 = g[n0 + s, o, oh + 1, ow + 1] if (oh + 1 < Ho and ow + 1 < Wo) else 0
                        # rows: r = A q  (4 x 2)
                        r[0][0] = q00
                        r[0][1] = q01
                        r[1][0] = q00 + q10
                        r[1][1] = q01 + q11
                        r[2][0] = q00 - q10
                        r[2][1] = q01 - q11
                        r[3][0] = -q10
                        r[3][1] = -q11
                        dst = &Gt[0, o, t]
                        for i in range(4):   # columns: r A^T
                            dst[(4 * i) * OT] = r[i][0]
                            dst[(4 * i + 1) * OT] = r[i][0] + r[i][1]
                            dst[(4 * i + 2) * OT] = r[i][0] - r[i][1]
                            dst[(4 * i + 3) * OT] = -r[i][1]
