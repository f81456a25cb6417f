# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""Winograd F(4x4, 3x3) transforms for 3x3 stride-1 convolution (kernel contract: pyx/fused.pxd).

The layout is that of ``pyx/winograd/_winograd.pyx`` with 4x4 output tiles and 36 points:
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

The transforms' ``avx512``, ``ch_begin`` and ``ch_end`` arguments are those of
``_winograd.pyx``.
"""

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from fused cimport real
from wino_planes cimport planes_fit, run_out_planes, run_planes
from wino_portable cimport (grad_channel, in_channel, out_channel, sb_wp_grad_floats,
                             sb_wp_in_floats, sb_wp_out_floats)
from wino_rows cimport data_cols

cdef extern from "wino4_avx512.h" nogil:
    void sb_w4_in_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                            float* v, Py_ssize_t pitch)
    void sb_w4_grad_plane_f32(const float* pad, Py_ssize_t wp, const int* off, int ntiles,
                              float* v, Py_ssize_t pitch)
    int sb_w4_avx512_available()
    void sb_w4_in_tilerow_f32(const float* const* rows, int ntiles, float* v, Py_ssize_t pitch)
    void sb_w4_out_plane_f32(const float* m, Py_ssize_t pitch, int tiles_h, int tiles_w,
                             float* ypl, Py_ssize_t w4)
    Py_ssize_t SB_W4_ROW_FLOATS(Py_ssize_t tiles_w)
    void sb_w4_in_rows_channel(const float* x, Py_ssize_t sn, int H, int W, int nb, int ph,
                               int pw, int n_data, int th0, int th1, int tiles_w, float* buf,
                               Py_ssize_t rs, float* v, Py_ssize_t pitch)

cdef bint _HAVE_AVX512 = sb_w4_avx512_available()   # the CPU can run them


def avx512_available():
    """Whether this module's float32 AVX-512 transforms are built and this CPU runs them
    (as ``_winograd.avx512_available``)."""
    return bool(_HAVE_AVX512)

# The portable transforms of one channel are in C (wino_portable.h, shared with the fused
# form; see _winograd.pyx for why C).


include "avx2_rows.pxi"


def input_transform(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
                    real[:, :, :] V,                # OUT (36, C, nb*tiles_h*tiles_w)
                    Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                    Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``V = B^T d B`` for every 6x6 input patch of samples ``n0 .. n0+nb-1``.

    Per tile row, every loop but one runs over contiguous memory (so the compiler
    vectorises it): the six zero-padded input rows are split into their four
    column phases ``D[i][l][tw] = row_i[4*tw + l]`` (the one strided pass), ``B^T``
    combines the rows, then ``B`` combines phases (``row[4*tw + 4]`` is phase 0
    at ``tw + 1``).
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t c1 = C if ch_end < 0 else ch_end
    cdef Py_ssize_t pitch = V.strides[0] // sizeof(real)
    cdef Py_ssize_t sn = x.strides[0] // sizeof(real)
    cdef Py_ssize_t c
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and tiles_w >= 16:
            _input_transform_avx512(x, V, n0, nb, ph, pw, tiles_h, tiles_w, num_threads,
                                    ch_begin, c1)
            return
        if avx512 and _HAVE_AVX512 and planes_fit(nb, 4, tiles_h, tiles_w, 2):
            # short tile rows: 16 tiles across rows, gathered from a padded plane
            run_planes(x, V, n0, nb, ch_begin, c1, ph, pw, 4, tiles_h, tiles_w, 2,
                       sb_w4_in_plane_f32, num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_in_floats(4, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for c in prange(ch_begin, c1, schedule="static"):
                in_channel(4, &x[n0, c, 0, 0], sn, <int> H, <int> W, <int> nb, ph, pw,
                           <int> tiles_h, <int> tiles_w, buf, &V[0, c, 0], pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")




cdef void _input_transform_avx512(const float[:, :, :, ::1] x, float[:, :, :] V,
                                  Py_ssize_t n0, Py_ssize_t nb, int ph, int pw,
                                  Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
                                  Py_ssize_t ch_begin, Py_ssize_t ch_end):
    """:func:`input_transform` for float32 on AVX-512: one call of
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




def output_transform(const real[:, :, :] M,       # IN  (36, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,         # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t OT = M.strides[0] // sizeof(real)
    cdef Py_ssize_t sn = y.strides[0] // sizeof(real)
    cdef Py_ssize_t o
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512:
            run_out_planes(M, y, n0, nb, ch_begin, c1, 4, tiles_h, tiles_w, sb_w4_out_plane_f32,
                           num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_out_floats(4, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                out_channel(4, &M[0, o, 0], OT, &y[n0, o, 0, 0], sn, <int> Ho, <int> Wo, <int> nb,
                            <int> tiles_h, <int> tiles_w, buf)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")



def grad_transform(const real[:, :, :, ::1] g,   # IN  (N, O, Ho, Wo)
                   real[:, :, :] Gt,               # OUT (36, O, nb*tiles_h*tiles_w)
                   Py_ssize_t n0, Py_ssize_t nb,
                   Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``Gt = A q A^T`` for every 4x4 output-gradient tile ``q`` (zero past ``Ho``/``Wo``),
    ``A`` = the transpose of ``A^T`` above: with ``V`` from :func:`input_transform`,
    ``dW = G^T (sum_t Gt[:, :, t] V[:, :, t]^T) G`` (see
    ``_winograd_weights.weight_grad_fold``).

    Per tile row: the four gradient rows are split into column phases, ``A``
    combines the rows, then ``A`` again combines the phases of each row.
    """
    cdef Py_ssize_t O = g.shape[1], Ho = g.shape[2], Wo = g.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t pitch = Gt.strides[0] // sizeof(real)
    cdef Py_ssize_t sn = g.strides[0] // sizeof(real)
    cdef Py_ssize_t o
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and planes_fit(nb, 4, tiles_h, tiles_w, 0):
            run_planes(g, Gt, n0, nb, ch_begin, c1, 0, 0, 4, tiles_h, tiles_w, 0,
                       sb_w4_grad_plane_f32, num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_grad_floats(4, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                grad_channel(4, &g[n0, o, 0, 0], sn, <int> Ho, <int> Wo, <int> nb, <int> tiles_h,
                             <int> tiles_w, buf, &Gt[0, o, 0], pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")
