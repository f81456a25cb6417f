# The row geometry of the AVX-512 row-form Winograd transform (F(4x4) in _winograd.pyx).  The
# portable transforms are in C (wino_portable.h).


cdef inline Py_ssize_t data_cols(Py_ssize_t w, Py_ssize_t lo, Py_ssize_t wp) noexcept nogil:
    """How many of a row's ``w`` values fit a padded row of ``wp`` from column ``lo``."""
    return w if lo + w <= wp else wp - lo
