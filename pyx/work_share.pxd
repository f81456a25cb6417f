# work_share.h for the kernels in Cython: a parallel loop's items in static shares of
# three quarters, then the rest in pieces as threads come free (see the header for the
# rule, and for keeping the loop variables private in a `with parallel()` block).

cdef extern from "work_share.h" nogil:
    ctypedef struct sb_share:
        Py_ssize_t total
    void sb_share_init(sb_share* s, Py_ssize_t total)
    void sb_share_first(const sb_share* s, Py_ssize_t* i, Py_ssize_t* end)
    int sb_share_take(sb_share* s, Py_ssize_t* i, Py_ssize_t* end)
