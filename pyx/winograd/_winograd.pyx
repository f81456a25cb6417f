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

from fused cimport real
from wino_planes cimport planes_fit, run_out_planes, run_planes
from wino_portable cimport (grad_channel, in_channel, out_channel, sb_wp_grad_floats,
                             sb_wp_in_floats, sb_wp_out_floats)

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

# The portable transforms of one channel live in C (wino_portable.h, declared and
# dispatched in wino_portable.pxd), shared with the fused form (wino_fused.h); their inner
# loops have restrict pointers (wino2_rows.h): written in Cython, GCC could not rule out
# that the row buffers overlap and left every loop scalar (measured: the 16-channel 64x64
# input transform, batch 8, 1.76 ms).


include "avx2_rows.pxi"


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
    cdef Py_ssize_t sn = x.strides[0] // sizeof(real)
    cdef Py_ssize_t c
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and planes_fit(nb, 2, tiles_h, tiles_w, 2):
            run_planes(x, V, n0, nb, ch_begin, c1, ph, pw, 2, tiles_h, tiles_w, 2,
                       sb_w2_in_plane_f32, num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_in_floats(2, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for c in prange(ch_begin, c1, schedule="static"):
                in_channel(2, &x[n0, c, 0, 0], sn, <int> H, <int> W, <int> nb, ph, pw,
                           <int> tiles_h, <int> tiles_w, buf, &V[0, c, 0], pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")




def output_transform(const real[:, :, :] M,       # IN  (16, O, nb*tiles_h*tiles_w)
                     real[:, :, :, ::1] y,        # OUT (N, O, Ho, Wo); samples n0.. overwritten
                     Py_ssize_t n0, Py_ssize_t nb,
                     Py_ssize_t tiles_h, Py_ssize_t tiles_w, int num_threads,
        bint avx512, Py_ssize_t ch_begin=0, Py_ssize_t ch_end=-1):
    """``y = A^T M A`` per tile (outputs past ``Ho``/``Wo`` dropped)."""
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t c1 = O if ch_end < 0 else ch_end
    cdef Py_ssize_t OT = M.strides[0] // sizeof(real)   # between points (may be padded)
    cdef Py_ssize_t sn = y.strides[0] // sizeof(real)
    cdef Py_ssize_t o
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512:
            run_out_planes(M, y, n0, nb, ch_begin, c1, 2, tiles_h, tiles_w, sb_w2_out_plane_f32,
                           num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_out_floats(2, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                out_channel(2, &M[0, o, 0], OT, &y[n0, o, 0, 0], sn, <int> Ho, <int> Wo, <int> nb,
                            <int> tiles_h, <int> tiles_w, buf)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")


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
    cdef Py_ssize_t sn = g.strides[0] // sizeof(real)
    cdef Py_ssize_t o
    cdef real* buf
    cdef int[1] failed
    failed[0] = 0
    if real is float:
        if avx512 and _HAVE_AVX512 and planes_fit(nb, 2, tiles_h, tiles_w, 0):
            run_planes(g, Gt, n0, nb, ch_begin, c1, 0, 0, 2, tiles_h, tiles_w, 0,
                       sb_w2_grad_plane_f32, num_threads)
            return
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(sb_wp_grad_floats(2, <int> tiles_w) * sizeof(real))
        if buf != NULL:
            for o in prange(ch_begin, c1, schedule="static"):
                grad_channel(2, &g[n0, o, 0, 0], sn, <int> Ho, <int> Wo, <int> nb, <int> tiles_h,
                             <int> tiles_w, buf, &Gt[0, o, 0], pitch)
        else:
            failed[0] = 1
        free(buf)
    if failed[0]:
        raise MemoryError("winograd transform: could not allocate a row buffer")
