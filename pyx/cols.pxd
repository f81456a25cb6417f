# Index helpers shared by the column kernels (_im2col.pyx, _vol2col.pyx): which output
# positions of a strided, padded window row read inside the input.

cdef inline Py_ssize_t _ceil_div(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """ceil(a / b) for b > 0 and any sign of a."""
    if a <= 0:
        return -((-a) // b)
    return (a + b - 1) // b


cdef inline Py_ssize_t _valid_lo(Py_ssize_t off, Py_ssize_t s, Py_ssize_t n_out) noexcept nogil:
    """First output position o with o * s - off >= 0 (clipped to [0, n_out])."""
    cdef Py_ssize_t a = _ceil_div(off, s)
    if a < 0:
        return 0
    return a if a < n_out else n_out


cdef inline Py_ssize_t _valid_hi(Py_ssize_t off, Py_ssize_t s, Py_ssize_t size,
                                 Py_ssize_t n_out) noexcept nogil:
    """One past the last output position o with o * s - off < size (clipped to [0, n_out])."""
    cdef Py_ssize_t b = _ceil_div(size + off, s)
    if b < 0:
        return 0
    return b if b < n_out else n_out
