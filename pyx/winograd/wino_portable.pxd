# The portable Winograd transforms of one channel (wino_portable.h), for _winograd.pyx:
# their declarations, and one inline dispatch per transform on the tile
# size (2: F(2x2, 3x3), 4: F(4x4, 3x3)) and the fused float type.

from fused cimport real

cdef extern from "wino_portable.h" nogil:
    int sb_wino_rows_fast_f()
    int sb_wino_avx2_rows  # 1: the float32 transforms' tile rows on AVX2 (-1: not decided)
    size_t sb_wp_in_floats(int tile, int tiles_w)
    size_t sb_wp_grad_floats(int tile, int tiles_w)
    size_t sb_wp_out_floats(int tile, int tiles_w)
    void sb_w2_in_channel_f(const float*, Py_ssize_t, int, int, int, int, int, int, int, int,
                            float*, float*, Py_ssize_t)
    void sb_w2_in_channel_d(const double*, Py_ssize_t, int, int, int, int, int, int, int, int,
                            double*, double*, Py_ssize_t)
    void sb_w4_in_channel_f(const float*, Py_ssize_t, int, int, int, int, int, int, int, int,
                            float*, float*, Py_ssize_t)
    void sb_w4_in_channel_d(const double*, Py_ssize_t, int, int, int, int, int, int, int, int,
                            double*, double*, Py_ssize_t)
    void sb_w2_grad_channel_f(const float*, Py_ssize_t, int, int, int, int, int, int, float*,
                              float*, Py_ssize_t)
    void sb_w2_grad_channel_d(const double*, Py_ssize_t, int, int, int, int, int, int, double*,
                              double*, Py_ssize_t)
    void sb_w4_grad_channel_f(const float*, Py_ssize_t, int, int, int, int, int, int, float*,
                              float*, Py_ssize_t)
    void sb_w4_grad_channel_d(const double*, Py_ssize_t, int, int, int, int, int, int, double*,
                              double*, Py_ssize_t)
    void sb_w2_out_channel_f(const float*, Py_ssize_t, float*, Py_ssize_t, int, int, int, int,
                             int, int, float*)
    void sb_w2_out_channel_d(const double*, Py_ssize_t, double*, Py_ssize_t, int, int, int, int,
                             int, int, double*)
    void sb_w4_out_channel_f(const float*, Py_ssize_t, float*, Py_ssize_t, int, int, int, int,
                             int, int, float*)
    void sb_w4_out_channel_d(const double*, Py_ssize_t, double*, Py_ssize_t, int, int, int, int,
                             int, int, double*)


cdef inline void in_channel(int tile, const real* x, Py_ssize_t sn, int H, int W, int nb,
                            int ph, int pw, int tiles_h, int tiles_w, real* buf, real* v,
                            Py_ssize_t pitch) noexcept nogil:
    """V of one channel of ``nb`` samples (``x``: its plane in the first, ``sn`` apart),
    every tile row, into ``v`` (points ``pitch`` apart); ``buf``: sb_wp_in_floats."""
    if real is float:
        (sb_w4_in_channel_f if tile == 4 else sb_w2_in_channel_f)(
            x, sn, H, W, nb, ph, pw, 0, tiles_h, tiles_w, buf, v, pitch)
    else:
        (sb_w4_in_channel_d if tile == 4 else sb_w2_in_channel_d)(
            x, sn, H, W, nb, ph, pw, 0, tiles_h, tiles_w, buf, v, pitch)


cdef inline void grad_channel(int tile, const real* g, Py_ssize_t sn, int Ho, int Wo, int nb,
                              int tiles_h, int tiles_w, real* buf, real* v,
                              Py_ssize_t pitch) noexcept nogil:
    """Gt of one output-gradient channel, as :func:`in_channel` (``buf``:
    sb_wp_grad_floats)."""
    if real is float:
        (sb_w4_grad_channel_f if tile == 4 else sb_w2_grad_channel_f)(
            g, sn, Ho, Wo, nb, 0, tiles_h, tiles_w, buf, v, pitch)
    else:
        (sb_w4_grad_channel_d if tile == 4 else sb_w2_grad_channel_d)(
            g, sn, Ho, Wo, nb, 0, tiles_h, tiles_w, buf, v, pitch)


cdef inline void out_channel(int tile, const real* m, Py_ssize_t pitch, real* y, Py_ssize_t sn,
                             int Ho, int Wo, int nb, int tiles_h, int tiles_w,
                             real* buf) noexcept nogil:
    """y of one output channel of ``nb`` samples from its points ``m`` (``buf``:
    sb_wp_out_floats)."""
    if real is float:
        (sb_w4_out_channel_f if tile == 4 else sb_w2_out_channel_f)(
            m, pitch, y, sn, Ho, Wo, nb, 0, tiles_h, tiles_w, buf)
    else:
        (sb_w4_out_channel_d if tile == 4 else sb_w2_out_channel_d)(
            m, pitch, y, sn, Ho, Wo, nb, 0, tiles_h, tiles_w, buf)
