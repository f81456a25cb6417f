# The zero-padded row copies of the portable (row-buffer) Winograd transforms, shared by
# _winograd.pyx and _winograd4.pyx.

from libc.string cimport memcpy, memset

from fused cimport real


cdef inline Py_ssize_t data_cols(Py_ssize_t w, Py_ssize_t lo, Py_ssize_t wp) noexcept nogil:
    """How many of a row's ``w`` values fit a padded row of ``wp`` from column ``lo``."""
    return w if lo + w <= wp else wp - lo


cdef inline void pad_row(real* p, Py_ssize_t wp, const real* src, Py_ssize_t lo,
                         Py_ssize_t n) noexcept nogil:
    """``p[0 .. wp)`` = ``src[0 .. n)`` at column ``lo``, zero around it (``lo + n <= wp``)."""
    if lo > 0:
        memset(p, 0, lo * sizeof(real))
    memcpy(p + lo, src, n * sizeof(real))
    if lo + n < wp:
        memset(p + lo + n, 0, (wp - lo - n) * sizeof(real))
