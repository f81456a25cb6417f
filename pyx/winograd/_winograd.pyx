# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""The data side of the Winograd convolutions F(2x2, 3x3) and F(4x4, 3x3) for 3x3
stride-1 convolution (kernel contract: pyx/fused.pxd); the weight side is
``_winograd_weights.pyx``.  The tile size follows from the number of points of the
arrays given (16: F(2x2), 36: F(4x4)).

Output tile ``t = (s, th, tw)`` (sample ``s`` of the chunk, tile row/column) of size
``m`` (2 or 4) covers outputs ``[m*th, m*th+m) x [m*tw, m*tw+m)``; its ``(m+2)^2``
input patch ``d`` starts at row ``m*th - ph`` and column ``m*tw - pw`` (zero outside
the input)::

    V[xi, c, t] = (B^T d B)[xi]     M[xi] = U[xi] @ V[xi]     y_tile = A^T M A
    U[xi, o, c] = (G w[o, c] G^T)[xi]                          xi = (m+2) * i + j

F(2x2, 3x3)::

    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]

F(4x4, 3x3) (interpolation points 0, 1, -1, 2, -2, infinity)::

    B^T = [[4,  0, -5,  0, 1, 0],     G = [[ 1/4,     0,    0],    A^T = [[1, 1,  1, 1,  1, 0],
           [0, -4, -4,  1, 1, 0],          [-1/6,  -1/6, -1/6],           [0, 1, -1, 2, -2, 0],
           [0,  4, -4, -1, 1, 0],          [-1/6,   1/6, -1/6],           [0, 1,  1, 4,  4, 0],
           [0, -2, -1,  2, 1, 0],          [1/24, 1/12,  1/6],            [0, 1, -1, 8, -8, 1]]
           [0,  2, -1, -2, 1, 0],          [1/24, -1/12, 1/6],
           [0,  4,  0, -5, 0, 1]]          [   0,     0,    1]]

F(4x4) needs 36 multiplies per 16 outputs and channel pair instead of 144 (1.78x
fewer GEMM flops than F(2x2)), at a larger float32 rounding error (the factors reach 8
and 1/24; tests bound it against the float64 reference).

The point planes of ``V``, ``M`` and ``Gt`` may lie a padded pitch apart
(``strides[0]``): a pitch that is a multiple of 4 KiB makes the streams alias in the
cache.  So those arrays are declared strided (``[:, :, :]``); each (rows, tiles) point
plane must still be C-contiguous (the wrapper's buffers are).  Tiles are numbered
``t = (s * tiles_h + th) * tiles_w + tw``.  Every ``prange`` iteration owns one channel
(input transform) or one output channel (output transform): results are bitwise
identical for any thread count.

The ``avx512`` argument of every transform (IN) selects the float32 AVX-512 form (the
choice of :mod:`sandbox.runtime.simd`, passed by the wrapper); it is ignored on a CPU
without AVX-512 and for float64.  Every transform does only the channels ``ch_begin ..
ch_end - 1`` (default: all), so that several calls can share one chunk's channels.
"""

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from fused cimport real
from wino_planes cimport (planes_fit, run_out_planes, run_planes, sb_out_plane_fn,
                          sb_plane_fn)
from wino_portable cimport (grad_channel, in_channel, out_channel, sb_wp_grad_floats,
                             sb_wp_in_floats, sb_wp_out_floats)
from wino_rows cimport data_cols

cdef extern from "wino2_avx512.h" nogil:
    int sb_w2_avx512_available()
    void sb_w2_in_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                            float* v, Py_ssize_t pitch)
    void sb_w2_grad_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                              float* v, Py_ssize_t pitch)
    void sb_w2_out_plane_f32(const float* m, Py_ssize_t pitch, int tiles_h, int tiles_w,
                             float* ypl, Py_ssize_t w2)

cdef extern from "wino4_avx512.h" nogil:
    int sb_w4_avx512_available()
    void sb_w4_in_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                            float* v, Py_ssize_t pitch)
    void sb_w4_grad_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                              float* v, Py_ssize_t pitch)
    void sb_w4_out_plane_f32(const float* m, Py_ssize_t pitch, int tiles_h, int tiles_w,
                             float* ypl, Py_ssize_t w4)
    Py_ssize_t SB_W4_ROW_FLOATS(Py_ssize_t tiles_w)
    void sb_w4_in_rows_channel(const float* x, Py_ssize_t sn, int H, int W, int nb, int ph,
                               int pw, int n_data, int th0, int th1, int tiles_w, float* buf,
                               Py_ssize_t rs, float* v, Py_ssize_t pitch)

# the CPU can run the AVX-512 transforms of both tile sizes
cdef bint _HAVE_AVX512 = sb_w2_avx512_available() and sb_w4_avx512_available()


def avx512_available():
    """Whether the float32 AVX-512 transforms are built and this CPU runs them.  The
    wrappers choose per call (``avx512`` argument, from :mod:`sandbox.runtime.simd`);
    on a CPU without AVX-512 the argument is ignored."""
    return bool(_HAVE_AVX512)

# The portable transforms of one channel live in C (wino_portable.h, declared and
# dispatched on the tile size in wino_portable.pxd, shared with the fused form): their
# loops have restrict pointers (wino2_rows.h, wino4_rows.h): written in Cython, GCC could
# not rule out that the row buffers overlap and left every loop scalar (measured: the
# 16-channel 64x64 F(2x2) input transform, batch 8, 1.76 ms).


include "avx2_rows.pxi"


cdef inline int _tile(Py_ssize_t points):
    """The output tile of ``points`` points: 2 (16) or 4 (36)."""
    return 4 if points == 36 else 2


def input_transform(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
                    real[:, :, :] V,                 # OUT (P, C, nb*tiles_h*tiles_w)
                    Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                    Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``V = B^T d B`` for every input patch of samples ``n0 .. n0+nb-1``.

    Per tile row, every loop but one runs over contiguous memory (so the compiler
    vectorises it): the zero-padded input rows are split into their column phases
    ``D[i][l][tw] = row_i[m*tw + l]`` (the one strided pass), ``B^T`` combines the
    rows, then ``B`` combines phases.  On AVX-512, F(4x4) on rows of 16 tiles or more
    runs by tile rows (:func:`_input_rows_avx512`), shorter rows and F(2x2) gather
    their tiles from a padded plane (wino_planes.h).
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t c1 = C if ch_end < 0 else ch_end
    cdef Py_ssize_t pitch = V.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t sn = x.strides[0] // sizeof(real)
    cdef int tile = _tile(V.shape[0])
    cdef sb_plane_fn plane = sb_w4_in_plane_f32 if tile == 4 else sb_w2_in_plane_f32
    cdef Py_ssize_t c
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and tile == 4 and tiles_w >= 16:
            _input_rows_avx512(x, V, n0, nb, ph, pw, tiles_h, tiles_w, num_threads, ch_begin,
                               c1)
            return
        if avx512 and _HAVE_AVX512 and planes_fit(nb, tile, tiles_h, tiles_w, 2):
            run_planes(x, V, n0, nb, ch_begin, c1, ph, pw, tile, tiles_h, tiles_w, 2, plane,
                       num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_in_floats(tile, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for c in prange(ch_begin, c1, schedule="static"):
                in_channel(tile, &x[n0, c, 0, 0], sn, <int> H, <int> W, <int> nb, ph, pw,
                           <int> tiles_h, <int> tiles_w, buf, &V[0, c, 0], pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


cdef void _input_rows_avx512(const float[:, :, :, ::1] x, float[:, :, :] V,
                             Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                             Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
                             Py_ssize_t ch_begin, Py_ssize_t ch_end):
    """:func:`input_transform` of F(4x4) for float32 on AVX-512: one call of
    ``sb_w4_in_tilerow_f32`` (wino4_avx512.h) per tile row, by
    ``sb_w4_in_rows_channel``.  Each thread keeps six zero-padded row buffers (their
    padding is zeroed once: only the data columns are ever rewritten) and one zero row
    for rows outside the image."""
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t pitch = V.strides[0] // sizeof(float)
    cdef Py_ssize_t rs = SB_W4_ROW_FLOATS(tiles_w)     # readable length of a padded row
    cdef Py_ssize_t n_data = data_cols(W, pw, rs)
    cdef Py_ssize_t c
    cdef float* buf
    cdef int[1] failed
    failed[0] = 0
    with nogil, parallel(num_threads=num_threads):
        buf = <float*> malloc(7 * rs * sizeof(float))   # six row buffers + a zero row
        if buf != NULL:
            memset(buf, 0, 7 * rs * sizeof(float))
            for c in prange(ch_begin, ch_end, schedule="static"):
                sb_w4_in_rows_channel(&x[n0, c, 0, 0], x.strides[0] // sizeof(float), <int> H,
                                      <int> W, <int> nb, ph, pw, <int> n_data, 0,
                                      <int> tiles_h, <int> tiles_w, buf, rs, &V[0, c, 0],
                                      pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


def output_transform(const real[:, :, :] M,       # IN  (P, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,        # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t OT = M.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t sn = y.strides[0] // sizeof(real)
    cdef int tile = _tile(M.shape[0])
    cdef sb_out_plane_fn plane = sb_w4_out_plane_f32 if tile == 4 else sb_w2_out_plane_f32
    cdef Py_ssize_t o
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512:
            run_out_planes(M, y, n0, nb, ch_begin, c1, tile, tiles_h, tiles_w, plane,
                           num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_out_floats(tile, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                out_channel(tile, &M[0, o, 0], OT, &y[n0, o, 0, 0], sn, <int> Ho, <int> Wo,
                            <int> nb, <int> tiles_h, <int> tiles_w, buf)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


def grad_transform(const real[:, :, :, ::1] g,   # IN  (N, O, Ho, Wo)
                   real[:, :, :] Gt,                # OUT (P, O, nb*tiles_h*tiles_w)
                   Py_ssize_t n0, Py_ssize_t nb,
                   Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``Gt = A q A^T`` for every output-gradient tile ``q`` (zero past ``Ho``/``Wo``),
    ``A`` the transpose of ``A^T`` above.

    With ``V`` from :func:`input_transform`, the weight gradient of the tile is
    ``G^T (V ⊙ Gt) G`` (the adjoint of F(m x m, 3x3) in the weight), so
    ``dW = G^T (sum_t Gt[:, :, t] V[:, :, t]^T) G``: one GEMM over tiles a point (see
    ``_winograd_weights.weight_grad_fold``).  Per tile row, as in
    :func:`input_transform`: the (zero-padded) gradient rows are split into column
    phases, ``A`` combines the rows, then ``A`` again the phases of each row.
    """
    cdef Py_ssize_t O = g.shape[1], Ho = g.shape[2], Wo = g.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t pitch = Gt.strides[0] // sizeof(real)
    cdef Py_ssize_t sn = g.strides[0] // sizeof(real)
    cdef int tile = _tile(Gt.shape[0])
    cdef sb_plane_fn plane = sb_w4_grad_plane_f32 if tile == 4 else sb_w2_grad_plane_f32
    cdef Py_ssize_t o
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and planes_fit(nb, tile, tiles_h, tiles_w, 0):
            run_planes(g, Gt, n0, nb, ch_begin, c1, 0, 0, tile, tiles_h, tiles_w, 0, plane,
                       num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_grad_floats(tile, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                grad_channel(tile, &g[n0, o, 0, 0], sn, <int> Ho, <int> Wo, <int> nb,
                             <int> tiles_h, <int> tiles_w, buf, &Gt[0, o, 0], pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")
