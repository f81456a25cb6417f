# The plane driver of the gathered Winograd transforms (wino_planes.h), for both tile
# sizes of _winograd.pyx.

from libc.limits cimport INT_MAX

cdef extern from "wino_planes.h" nogil:
    ctypedef void (*sb_plane_fn)(const float*, Py_ssize_t, const int*, int, float*,
                                 Py_ssize_t) noexcept nogil
    int sb_wino_planes(const float* x, Py_ssize_t sn, Py_ssize_t sc, int rows, int cols,
                       int n0, int nb, int c0, int c1, int ph, int pw, int tile, int tiles_h,
                       int tiles_w, int halo, sb_plane_fn fn, float* v, Py_ssize_t vc,
                       Py_ssize_t pitch, int num_threads)
    ctypedef void (*sb_out_plane_fn)(const float*, Py_ssize_t, int, int, float*,
                                     Py_ssize_t) noexcept nogil
    int sb_wino_out_planes(const float* m, Py_ssize_t mc, Py_ssize_t pitch, float* y,
                           Py_ssize_t sn, Py_ssize_t sc, int rows, int cols, int n0, int nb,
                           int c0, int c1, int tile, int tiles_h, int tiles_w,
                           sb_out_plane_fn fn, int num_threads)


cdef inline int run_planes(const float[:, :, :, ::1] x, float[:, :, :] V, Py_ssize_t n0,
                           Py_ssize_t nb, Py_ssize_t c0, Py_ssize_t c1, int ph, int pw,
                           int tile, Py_ssize_t tiles_h, Py_ssize_t tiles_w, int halo,
                           sb_plane_fn fn, int num_threads) except -1:
    """``fn`` over the (sample, channel) planes of ``x`` into ``V`` (see wino_planes.h):
    ``halo`` 2 for input transforms (padding ``ph``, ``pw``), 0 for output gradients."""
    cdef int status
    with nogil:
        status = sb_wino_planes(&x[0, 0, 0, 0], x.strides[0] // sizeof(float),
                                x.strides[1] // sizeof(float), <int> x.shape[2],
                                <int> x.shape[3], <int> n0, <int> nb, <int> c0, <int> c1,
                                ph, pw, tile, <int> tiles_h, <int> tiles_w, halo, fn,
                                &V[0, 0, 0], V.strides[1] // sizeof(float),
                                V.strides[0] // sizeof(float), num_threads)
    if status != 0:
        raise MemoryError("winograd transform: could not allocate a plane buffer")
    return 0


cdef inline bint planes_fit(Py_ssize_t nb, int tile, Py_ssize_t tiles_h, Py_ssize_t tiles_w,
                            int halo) noexcept nogil:
    """Whether :func:`run_planes` can take these blocks: its tile offsets are ``int``."""
    return nb * (tile * tiles_h + halo) * (tile * tiles_w + halo) <= INT_MAX


cdef inline int run_out_planes(const float[:, :, :] M, float[:, :, :, ::1] y, Py_ssize_t n0,
                               Py_ssize_t nb, Py_ssize_t c0, Py_ssize_t c1, int tile,
                               Py_ssize_t tiles_h, Py_ssize_t tiles_w, sb_out_plane_fn fn,
                               int num_threads) except -1:
    """``fn`` over the (sample, channel) output planes of ``y`` from ``M`` (wino_planes.h)."""
    cdef int status
    with nogil:
        status = sb_wino_out_planes(&M[0, 0, 0], M.strides[1] // sizeof(float),
                                    M.strides[0] // sizeof(float), &y[0, 0, 0, 0],
                                    y.strides[0] // sizeof(float), y.strides[1] // sizeof(float),
                                    <int> y.shape[2], <int> y.shape[3], <int> n0, <int> nb,
                                    <int> c0, <int> c1, tile, <int> tiles_h, <int> tiles_w, fn,
                                    num_threads)
    if status != 0:
        raise MemoryError("winograd transform: could not allocate a plane buffer")
    return 0
