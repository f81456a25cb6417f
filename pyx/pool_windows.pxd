# Window helpers shared by the pooling kernels (_pool.pyx, _pool3d.pyx): per axis, the
# input range of output window ``o`` (stride ``s``, padding ``pad``, kernel ``k``) and the
# average's divisor.


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


cdef inline Py_ssize_t _avg_divisor(Py_ssize_t divisor, bint count_include_pad,
                                    Py_ssize_t padded, Py_ssize_t inside) noexcept nogil:
    """The average's divisor: the override, the padded window, or the in-bounds part."""
    if divisor > 0:
        return divisor
    return padded if count_include_pad else inside
