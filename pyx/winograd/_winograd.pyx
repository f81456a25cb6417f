# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
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

The ``avx512`` argument of every transform (IN) selects the float32 AVX-512 form
(the choice of :mod:`sandbox.runtime.simd`, passed by the wrapper); it is ignored
on a CPU without AVX-512 and for float64.  Every transform does only the channels
``ch_begin .. ch_end - 1`` (default: all), so that several calls can share one
chunk's channels.
"""

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from fused cimport real
from wino_planes cimport planes_fit, run_out_planes, run_planes
from wino_rows cimport data_cols, pad_row

cdef extern from "wino2_avx512.h" nogil:
    void sb_w2_grad_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                              float* v, Py_ssize_t pitch)
    int sb_w2_avx512_available()
    void sb_w2_in_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                            float* v, Py_ssize_t pitch)
    void sb_w2_out_plane_f32(const float* m, Py_ssize_t pitch, int tiles_h, int tiles_w,
                             float* ypl, Py_ssize_t w2)

cdef bint _HAVE_AVX512 = sb_w2_avx512_available()   # the CPU can run them


def avx512_available():
    """Whether the float32 AVX-512 transforms are built and this CPU runs them.  The
    wrappers choose per call (``avx512`` argument, from :mod:`sandbox.runtime.simd`);
    on a CPU without AVX-512 the argument is ignored."""
    return bool(_HAVE_AVX512)

# The portable inner loops live in C with ``restrict`` pointers (wino2_rows.h): written
# in Cython, GCC could not rule out that the row buffers overlap and left every loop
# scalar (measured: the 16-channel 64x64 input transform, batch 8, 1.76 ms).
cdef extern from "wino2_rows.h":
    void sb_w2_in_rows_f(const float*, const float*, const float*, const float*,
                         float*, float*, float*, float*, Py_ssize_t) noexcept nogil
    void sb_w2_in_rows_d(const double*, const double*, const double*, const double*,
                         double*, double*, double*, double*, Py_ssize_t) noexcept nogil
    void sb_w2_in_cols_f(const float*, float*, float*, float*, float*, Py_ssize_t) noexcept nogil
    void sb_w2_in_cols_d(const double*, double*, double*, double*, double*,
                         Py_ssize_t) noexcept nogil
    void sb_w2_out_cols_f(const float*, const float*, const float*, const float*,
                          float*, float*, Py_ssize_t) noexcept nogil
    void sb_w2_out_cols_d(const double*, const double*, const double*, const double*,
                          double*, double*, Py_ssize_t) noexcept nogil
    void sb_w2_out_row_f(const float*, const float*, const float*, const float*,
                         float*, Py_ssize_t) noexcept nogil
    void sb_w2_out_row_d(const double*, const double*, const double*, const double*,
                         double*, Py_ssize_t) noexcept nogil
    void sb_w2_grad_rows_f(const float*, const float*, float*, float*, float*, float*,
                           Py_ssize_t) noexcept nogil
    void sb_w2_grad_rows_d(const double*, const double*, double*, double*, double*, double*,
                           Py_ssize_t) noexcept nogil
    void sb_w2_grad_cols_f(const float*, float*, float*, float*, float*,
                           Py_ssize_t) noexcept nogil
    void sb_w2_grad_cols_d(const double*, double*, double*, double*, double*,
                           Py_ssize_t) noexcept nogil


cdef inline void _in_rows(const real* d, Py_ssize_t wp, real* r) noexcept nogil:
    """``r = B^T d`` for four rows of ``wp`` values (row k at ``d + k * wp``)."""
    if real is float:
        sb_w2_in_rows_f(d, d + wp, d + 2 * wp, d + 3 * wp, r, r + wp, r + 2 * wp, r + 3 * wp, wp)
    else:
        sb_w2_in_rows_d(d, d + wp, d + 2 * wp, d + 3 * wp, r, r + wp, r + 2 * wp, r + 3 * wp, wp)


cdef inline void _in_cols(const real* p, real* v, Py_ssize_t pitch, Py_ssize_t n) noexcept nogil:
    """``v[j * pitch + t] = (p B)[t][j]``: the four points of ``n`` stride-2 patches."""
    if real is float:
        sb_w2_in_cols_f(p, v, v + pitch, v + 2 * pitch, v + 3 * pitch, n)
    else:
        sb_w2_in_cols_d(p, v, v + pitch, v + 2 * pitch, v + 3 * pitch, n)



def input_transform(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
                    real[:, :, :] V,                 # OUT (16, C, nb*tiles_h*tiles_w)
                    Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                    Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``V = B^T d B`` for every 4x4 input patch of samples ``n0 .. n0+nb-1``.

    Per tile row: the four zero-padded input rows are combined with ``B^T`` over
    the whole row width first, then ``B`` runs along the row (stride-2 patches).
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t c1 = C if ch_end < 0 else ch_end
    cdef Py_ssize_t pitch = V.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t wp = 2 * tiles_w + 2          # padded row width covered by the tiles
    cdef Py_ssize_t n_data = data_cols(W, pw, wp)   # from column pw of the padded row
    cdef Py_ssize_t c, s, th, i, k, ih, t0
    cdef real* buf
    cdef real* p
    cdef real* r
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and planes_fit(nb, 2, tiles_h, tiles_w, 2):
            run_planes(x, V, n0, nb, ch_begin, c1, ph, pw, 2, tiles_h, tiles_w, 2,
                       sb_w2_in_plane_f32, num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(8 * wp * sizeof(real))   # 4 padded rows + 4 combined rows
        if buf != NULL:
            for c in prange(ch_begin, c1, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        for i in range(4):
                            p = buf + i * wp
                            ih = 2 * th - ph + i
                            if ih < 0 or ih >= H or n_data <= 0:
                                memset(p, 0, wp * sizeof(real))
                            else:
                                pad_row(p, wp, &x[n0 + s, c, ih, 0], pw, n_data)
                        r = buf + 4 * wp
                        _in_rows(buf, wp, r)   # rows: r = B^T d
                        t0 = (s * tiles_h + th) * tiles_w
                        for k in range(4):     # columns: V = r B
                            _in_cols(r + k * wp, &V[4 * k, c, t0], pitch, tiles_w)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")




cdef inline void _out_cols(const real* m, Py_ssize_t pitch, real* a0, real* a1,
                           Py_ssize_t n) noexcept nogil:
    """``a0 = m0 + m1 + m2``, ``a1 = m1 - m2 - m3`` with ``mk = m + 4 * k * pitch``."""
    if real is float:
        sb_w2_out_cols_f(m, m + 4 * pitch, m + 8 * pitch, m + 12 * pitch, a0, a1, n)
    else:
        sb_w2_out_cols_d(m, m + 4 * pitch, m + 8 * pitch, m + 12 * pitch, a0, a1, n)


cdef inline void _out_row(const real* a, Py_ssize_t n, real* row) noexcept nogil:
    """``row[2t] = a0 + a1 + a2``, ``row[2t+1] = a1 - a2 - a3`` (``ak = a + k * n``)."""
    if real is float:
        sb_w2_out_row_f(a, a + n, a + 2 * n, a + 3 * n, row, n)
    else:
        sb_w2_out_row_d(a, a + n, a + 2 * n, a + 3 * n, row, n)




def output_transform(const real[:, :, :] M,       # IN  (16, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,        # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t OT = M.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t o, s, th, i, t0, oh
    cdef const real* m
    cdef real* buf
    cdef real* a
    cdef real* row
    cdef Py_ssize_t wt = 2 * tiles_w
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512:
            run_out_planes(M, y, n0, nb, ch_begin, c1, 2, tiles_h, tiles_w, sb_w2_out_plane_f32,
                           num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc((8 * tiles_w + 2 * wt) * sizeof(real))  # a[2][4] rows + 2 out rows
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        t0 = (s * tiles_h + th) * tiles_w
                        m = &M[0, o, t0]
                        a = buf
                        # a[0][i] = m0i + m1i + m2i,  a[1][i] = m1i - m2i - m3i  (rows of A^T)
                        for i in range(4):
                            _out_cols(m + i * OT, OT, a + i * tiles_w, a + (4 + i) * tiles_w,
                                      tiles_w)
                        row = buf + 8 * tiles_w
                        for i in range(2):   # columns: row = a A
                            _out_row(a + 4 * i * tiles_w, tiles_w, row + i * wt)
                        oh = 2 * th
                        memcpy(&y[n0 + s, o, oh, 0], row, Wo * sizeof(real))
                        if oh + 1 < Ho:
                            memcpy(&y[n0 + s, o, oh + 1, 0], row + wt, Wo * sizeof(real))
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


cdef inline void _grad_rows(const real* q, Py_ssize_t n, real* r) noexcept nogil:
    """``r = A q`` for two rows of ``n`` values (row k at ``q + k * n``)."""
    if real is float:
        sb_w2_grad_rows_f(q, q + n, r, r + n, r + 2 * n, r + 3 * n, n)
    else:
        sb_w2_grad_rows_d(q, q + n, r, r + n, r + 2 * n, r + 3 * n, n)


cdef inline void _grad_cols(const real* p, real* v, Py_ssize_t pitch, Py_ssize_t n) noexcept nogil:
    """``v[j * pitch + t] = (p A^T)[t][j]`` for ``n`` stride-2 pairs."""
    if real is float:
        sb_w2_grad_cols_f(p, v, v + pitch, v + 2 * pitch, v + 3 * pitch, n)
    else:
        sb_w2_grad_cols_d(p, v, v + pitch, v + 2 * pitch, v + 3 * pitch, n)




def grad_transform(const real[:, :, :, ::1] g,   # IN  (N, O, Ho, Wo)
                   real[:, :, :] Gt,                # OUT (16, O, nb*tiles_h*tiles_w)
                   Py_ssize_t n0, Py_ssize_t nb,
                   Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``Gt = A q A^T`` for every 2x2 output-gradient tile ``q`` (zero past ``Ho``/``Wo``).

    With ``V`` from :func:`input_transform`, the weight gradient of the tile is
    ``G^T (V ⊙ Gt) G`` (the adjoint of F(2x2, 3x3) in the weight), so
    ``dW = G^T (sum_t Gt[:, :, t] V[:, :, t]^T) G``: 16 GEMMs over tiles.
    ``A = [[1, 0], [1, 1], [1, -1], [0, -1]]``.  Per tile row, as in
    :func:`input_transform`: the two (zero-padded) gradient rows are combined with
    ``A`` over the whole width, then ``A^T`` runs along the row.
    """
    cdef Py_ssize_t O = g.shape[1], Ho = g.shape[2], Wo = g.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t pitch = Gt.strides[0] // sizeof(real)
    cdef Py_ssize_t wt = 2 * tiles_w
    cdef Py_ssize_t o, s, th, i, k, oh, t0
    cdef real* buf
    cdef real* p
    cdef real* r
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and planes_fit(nb, 2, tiles_h, tiles_w, 0):
            run_planes(g, Gt, n0, nb, ch_begin, c1, 0, 0, 2, tiles_h, tiles_w, 0,
                       sb_w2_grad_plane_f32, num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(6 * wt * sizeof(real))   # 2 padded rows + 4 combined rows
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                for s in range(nb):
                    for th in range(tiles_h):
                        for i in range(2):
                            p = buf + i * wt
                            oh = 2 * th + i
                            if oh >= Ho:
                                memset(p, 0, wt * sizeof(real))
                            else:
                                pad_row(p, wt, &g[n0 + s, o, oh, 0], 0, Wo)
                        r = buf + 2 * wt
                        _grad_rows(buf, wt, r)   # rows: r = A q
                        t0 = (s * tiles_h + th) * tiles_w
                        for k in range(4):       # columns: Gt = r A^T
                            _grad_cols(r + k * wt, &Gt[4 * k, o, t0], pitch, tiles_w)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")
