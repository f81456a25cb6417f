# conv_direct.h for the kernels in Cython: the direct 3x3 convolution of a few input
# channels, a row of outputs and a task's weight gradient, in their AVX2 and AVX-512
# forms (the first layers of _im2col.pyx, and of _vol2col.pyx with the depth taps as
# channels).

cdef extern from "conv_direct.h" nogil:
    int SB_C3_MAX_K
    int sb_c3_available()
    int sb_c3_avx512_available()
    void sb_c3_row_f32(const float* x, int C, int H, int W, const float* w, int O, int ph,
                       int pw, int h, int Wo, float* y, Py_ssize_t y_plane)
    void sb_c3_row_f32_avx512(const float* x, int C, int H, int W, const float* w, int O,
                              int ph, int pw, int h, int Wo, float* y, Py_ssize_t y_plane)
    int sb_c3_wgrad_f32(const float* x, int C, int H, int W, const float* g, int O, int ph,
                        int pw, int h0, int h1, int Wo, Py_ssize_t g_plane, float* part)
    int sb_c3_wgrad_f32_avx512(const float* x, int C, int H, int W, const float* g, int O,
                               int ph, int pw, int h0, int h1, int Wo, Py_ssize_t g_plane,
                               float* part)
    void sb_c3_sum_parts(const float* part, Py_ssize_t tasks, Py_ssize_t n, float* dw,
                         int num_threads)
