# Helpers shared by the pooling kernels (_pool.pyx, _pool3d.pyx): per axis, the input
# range of output window ``o`` (stride ``s``, padding ``pad``, kernel ``k``, dilation
# ``d`` for max pooling) and the average's divisor; and the max-pool gradient's scatter.

from libc.stdint cimport int64_t
from libc.string cimport memset

from fused cimport real


cdef inline Py_ssize_t _win_start(Py_ssize_t o, int s, int pad) noexcept nogil:
    """First input position of window ``o``, clipped at 0."""
    cdef Py_ssize_t a = o * s - pad
    return a if a > 0 else 0


cdef inline Py_ssize_t _win_stop(Py_ssize_t o, int k, int s, int pad, Py_ssize_t size) noexcept nogil:
    """One past the last input position of window ``o``, clipped at ``size``."""
    cdef Py_ssize_t b = o * s - pad + k
    return b if b < size else size


cdef inline Py_ssize_t _win_padded(Py_ssize_t o, int k, int s, int pad,
                                   Py_ssize_t size) noexcept nogil:
    """Size of window ``o`` clipped to the padded input (count_include_pad)."""
    cdef Py_ssize_t a = o * s - pad
    cdef Py_ssize_t b = a + k
    if b > size + pad:
        b = size + pad
    return b - a


cdef struct Window:
    # one axis of an average-pooling window: input positions [start, stop) and the
    # window's size clipped to the padded input
    Py_ssize_t start, stop, padded


cdef inline Window _avg_window(Py_ssize_t o, int k, int s, int pad,
                               Py_ssize_t size) noexcept nogil:
    """Window ``o`` of an average pooling along one axis."""
    cdef Window w
    w.start = _win_start(o, s, pad)
    w.stop = _win_stop(o, k, s, pad, size)
    w.padded = _win_padded(o, k, s, pad, size)
    return w


cdef inline Py_ssize_t _avg_divisor(Py_ssize_t divisor, bint count_include_pad,
                                    Py_ssize_t padded, Py_ssize_t inside) noexcept nogil:
    """The average's divisor: the override, the padded window, or the in-bounds part."""
    if divisor > 0:
        return divisor
    return padded if count_include_pad else inside


cdef inline Py_ssize_t _first_inside(Py_ssize_t start, int d) noexcept nogil:
    """First tap ``start + i * d`` (i >= 0) that is not negative."""
    while start < 0:
        start = start + d
    return start


cdef inline Py_ssize_t _dilated_stop(Py_ssize_t start, int k, int d, Py_ssize_t size) noexcept nogil:
    """One past the last tap of a dilated window starting at ``start``, clipped at ``size``."""
    cdef Py_ssize_t b = start + (k - 1) * d + 1
    return b if b < size else size


cdef inline void _scatter_plane(const real* g, const int64_t* idx, Py_ssize_t n, real* dst,
                                Py_ssize_t size) noexcept nogil:
    """``dst[0 .. size)`` = 0, then ``dst[idx[k]] += g[k]`` in order, for the ``k < n``
    whose index is inside (the max-pool gradient of one plane or volume)."""
    cdef Py_ssize_t k, j
    memset(dst, 0, size * sizeof(real))
    for k in range(n):
        j = idx[k]
        if 0 <= j < size:
            dst[j] = dst[j] + g[k]
