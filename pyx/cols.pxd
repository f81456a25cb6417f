# Helpers shared by the column kernels (_im2col.pyx, _vol2col.pyx): which output
# positions of a strided, padded window row read inside the input, and the copy of one
# such row into its column row and the sum back.

from libc.string cimport memcpy, memset

from fused cimport real

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


cdef inline void _unfold_row(const real* src, real* dst, Py_ssize_t off, int sw, Py_ssize_t lo,
                             Py_ssize_t hi, Py_ssize_t wo) noexcept nogil:
    """``dst[ow] = src[ow * sw - off]`` for ``lo <= ow < hi`` (lo < hi), 0 for the other
    ``ow < wo``: one output row of a tap, from its input row ``src``."""
    cdef Py_ssize_t ow
    if lo > 0:
        memset(dst, 0, lo * sizeof(real))
    if sw == 1:
        memcpy(dst + lo, src + lo - off, (hi - lo) * sizeof(real))
    else:
        for ow in range(lo, hi):
            dst[ow] = src[ow * sw - off]
    if hi < wo:
        memset(dst + hi, 0, (wo - hi) * sizeof(real))


cdef inline void _fold_row(const real* src, real* row, int sw, Py_ssize_t lo,
                           Py_ssize_t hi) noexcept nogil:
    """The adjoint of :func:`_unfold_row` on the inside part: ``row[ow * sw] += src[ow]``
    for ``lo <= ow < hi``, with ``row`` the input row shifted by ``-off``."""
    cdef Py_ssize_t ow
    if sw == 1:
        for ow in range(lo, hi):
            row[ow] = row[ow] + src[ow]
    else:
        for ow in range(lo, hi):
            row[ow * sw] = row[ow * sw] + src[ow]
