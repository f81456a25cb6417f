# The switch of the float32 AVX2 tile rows (the input, output and output-gradient transforms
# of F(4x4), wino4_avx2.h, and F(2x2), wino2_avx2.h), included by each module that compiles
# wino_portable.h (each has its own copy of the flag).

from wino_portable cimport sb_wino_avx2_rows, sb_wino_rows_fast_f

cdef extern from "wino4_avx2.h" nogil:
    int sb_w4_avx2_cpu "sb_w4_avx2_available"()


def avx2_rows(on=None):
    """Whether this module's float32 Winograd transforms (input, output and output
    gradient) run the AVX2 tile rows (F(4x4): wino4_avx2.h, F(2x2): wino2_avx2.h), chosen by the CPU like the loops' AVX2 clones, the same bits as the row
    loops; ``on`` sets it for this module (tests compare the two); returns the previous
    value."""
    cdef int previous = sb_wino_rows_fast_f()
    if on is not None:
        global sb_wino_avx2_rows
        sb_wino_avx2_rows = 1 if (on and sb_w4_avx2_cpu()) else 0
    return bool(previous)
