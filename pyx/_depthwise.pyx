# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Depthwise convolution (groups == in channels == out channels): each channel of each
# sample is convolved with its own kernel, a stencil over one plane (2-D) or volume
# (3-D, 2-D being depth 1), where im2col builds a column buffer kernel-size times the
# input and runs a product of one row per group.  Arrays are (N, C, D, H, W); weights
# (C, kd, kh, kw); stride, padding and dilation per axis.  With every stride 1,
# correlate and weight_dots run the rows of depthwise_rows.h over each volume copied
# into a zero-padded box.  Otherwise the loops below walk the taps: for each, the
# block of output rows and columns whose input lies inside the volume (``_span`` per
# axis), and a primitive (C, below) runs over that block row by row.  Kernel
# contract: pyx/fused.pxd; the forward and the input gradient own a (sample, channel)
# volume each, the weight gradient a channel (its samples in order, sums in double):
# the same bits for any thread count.

from cython.parallel cimport prange, threadid

from fused cimport real

cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from *:
    """
    /* One tap over a block of rows: rows r < m of the output (row pitch yp) take the
     * input's rows (pitch xp), n outputs a row at input stride s.
     * y[r][i] += w * x[r][i * s] (the forward), out[r][i * s] += w * g[r][i] (the
     * input gradient) and sum(g[r][i] * x[r][i * s]) in double (the weight gradient). */
    #define SB_DEPTHWISE(T, S)                                                         \
    SB_CLONES static void sb_dw_gather_##S(T* restrict y, const T* restrict x, T w,    \
            Py_ssize_t m, Py_ssize_t n, Py_ssize_t yp, Py_ssize_t xp, Py_ssize_t s) {  \
        for (Py_ssize_t r = 0; r < m; r++) {                                           \
            T* restrict yr = y + r * yp; const T* restrict xr = x + r * xp;            \
            if (s == 1) { for (Py_ssize_t i = 0; i < n; i++) yr[i] += w * xr[i]; }     \
            else { for (Py_ssize_t i = 0; i < n; i++) yr[i] += w * xr[i * s]; } } }    \
    SB_CLONES static void sb_dw_scatter_##S(T* restrict out, const T* restrict g, T w, \
            Py_ssize_t m, Py_ssize_t n, Py_ssize_t op, Py_ssize_t gp, Py_ssize_t s) {  \
        for (Py_ssize_t r = 0; r < m; r++) {                                           \
            T* restrict o = out + r * op; const T* restrict gr = g + r * gp;           \
            if (s == 1) { for (Py_ssize_t i = 0; i < n; i++) o[i] += w * gr[i]; }      \
            else { for (Py_ssize_t i = 0; i < n; i++) o[i * s] += w * gr[i]; } } }     \
    /* the dot in 16 partial sums (one sum's add latency bound the loop to an element  \
     * every 4 cycles), lane k taking the outputs i = k mod 16 of every row, folded in  \
     * a fixed tree */                                                                 \
    SB_CLONES static double sb_dw_dot_##S(const T* restrict g, const T* restrict x,    \
            Py_ssize_t m, Py_ssize_t n, Py_ssize_t gp, Py_ssize_t xp, Py_ssize_t s) {  \
        double acc[16] = {0}, t[8];                                                    \
        Py_ssize_t body = n - n % 16;                                                  \
        for (Py_ssize_t r = 0; r < m; r++) {                                           \
            const T* restrict gr = g + r * gp; const T* restrict xr = x + r * xp;      \
            Py_ssize_t i = 0;                                                          \
            if (s == 1) {                                                              \
                for (; i < body; i += 16)                                              \
                    for (int k = 0; k < 16; k++) acc[k] += (double) gr[i + k] * xr[i + k]; \
            } else {                                                                   \
                for (; i < body; i += 16)                                              \
                    for (int k = 0; k < 16; k++)                                       \
                        acc[k] += (double) gr[i + k] * xr[(i + k) * s]; }              \
            for (; i < n; i++) acc[i % 16] += (double) gr[i] * xr[i * s]; }            \
        for (int k = 0; k < 8; k++) t[k] = acc[k] + acc[k + 8];                        \
        return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])); }
    SB_DEPTHWISE(float, f)
    SB_DEPTHWISE(double, d)
    """
    void sb_dw_gather_f(float* y, const float* x, float w, Py_ssize_t m, Py_ssize_t n,
                        Py_ssize_t yp, Py_ssize_t xp, Py_ssize_t s) noexcept nogil
    void sb_dw_gather_d(double* y, const double* x, double w, Py_ssize_t m, Py_ssize_t n,
                        Py_ssize_t yp, Py_ssize_t xp, Py_ssize_t s) noexcept nogil
    void sb_dw_scatter_f(float* out, const float* g, float w, Py_ssize_t m, Py_ssize_t n,
                         Py_ssize_t op, Py_ssize_t gp, Py_ssize_t s) noexcept nogil
    void sb_dw_scatter_d(double* out, const double* g, double w, Py_ssize_t m, Py_ssize_t n,
                         Py_ssize_t op, Py_ssize_t gp, Py_ssize_t s) noexcept nogil
    double sb_dw_dot_f(const float* g, const float* x, Py_ssize_t m, Py_ssize_t n,
                       Py_ssize_t gp, Py_ssize_t xp, Py_ssize_t s) noexcept nogil
    double sb_dw_dot_d(const double* g, const double* x, Py_ssize_t m, Py_ssize_t n,
                       Py_ssize_t gp, Py_ssize_t xp, Py_ssize_t s) noexcept nogil


cdef extern from "depthwise_rows.h":
    void sb_dw_place_f(float* dst, Py_ssize_t PD, Py_ssize_t PH, Py_ssize_t PW, const float* src,
                     Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t ld, Py_ssize_t lh,
                     Py_ssize_t lw) noexcept nogil
    void sb_dw_place_d(double* dst, Py_ssize_t PD, Py_ssize_t PH, Py_ssize_t PW,
                     const double* src, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
                     Py_ssize_t ld, Py_ssize_t lh, Py_ssize_t lw) noexcept nogil
    void sb_dw_corr_f(float* out, Py_ssize_t rows, Py_ssize_t n, const float* box,
                      Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW, const Py_ssize_t* off,
                      const float* w, Py_ssize_t ntaps) noexcept nogil
    void sb_dw_corr_d(double* out, Py_ssize_t rows, Py_ssize_t n, const double* box,
                      Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW, const Py_ssize_t* off,
                      const double* w, Py_ssize_t ntaps) noexcept nogil
    void sb_dw_dots_f(const float* g, Py_ssize_t rows, Py_ssize_t n, const float* box,
                      Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW, const Py_ssize_t* off,
                      Py_ssize_t ntaps, double* acc) noexcept nogil
    void sb_dw_dots_d(const double* g, Py_ssize_t rows, Py_ssize_t n, const double* box,
                      Py_ssize_t oh_n, Py_ssize_t PH, Py_ssize_t PW, const Py_ssize_t* off,
                      Py_ssize_t ntaps, double* acc) noexcept nogil


cdef inline void _span(Py_ssize_t out_len, Py_ssize_t in_len, Py_ssize_t stride,
                       Py_ssize_t offset, Py_ssize_t* first, Py_ssize_t* last) noexcept nogil:
    """The outputs ``o`` in ``[first, last)`` whose input ``o * stride + offset`` lies in
    ``[0, in_len)`` (``last <= first``: none)."""
    cdef Py_ssize_t lo = 0, hi
    if offset < 0:
        lo = (-offset + stride - 1) // stride
    if in_len - 1 - offset < 0:
        hi = 0
    else:
        hi = (in_len - 1 - offset) // stride + 1
    first[0] = lo
    last[0] = hi if hi < out_len else out_len


cdef inline void _walk_taps(real* outs, real* ins, const real[:, :, :, ::1] w, Py_ssize_t c,
                            Py_ssize_t od_n, Py_ssize_t oh_n, Py_ssize_t ow_n, Py_ssize_t depth,
                            Py_ssize_t height, Py_ssize_t width, Py_ssize_t sd, Py_ssize_t sh,
                            Py_ssize_t sw, Py_ssize_t pd, Py_ssize_t ph, Py_ssize_t pw,
                            Py_ssize_t dd, Py_ssize_t dh, Py_ssize_t dw,
                            bint scatter) noexcept nogil:
    """Every tap of channel ``c``'s kernel over one (sample, channel) volume: ``outs`` the
    output-shaped volume (Do, Ho, Wo), ``ins`` the input-shaped one (D, H, W).  The
    forward gathers (``outs += w * ins[shifted]``), the input gradient scatters (``ins[
    shifted] += w * outs``); one of the two is written, the other only read, so both
    arrive as plain pointers.  Taps in order (depth, rows, columns), each over the block
    of output rows and columns whose input lies inside the volume."""
    cdef Py_ssize_t kd = w.shape[1], kh = w.shape[2], kw = w.shape[3]
    cdef Py_ssize_t od, a, b, e, iz, h0 = 0, h1 = 0, o0 = 0, o1 = 0
    cdef real* po
    cdef real* pi
    for od in range(od_n):
        for a in range(kd):
            iz = od * sd - pd + a * dd
            if iz < 0 or iz >= depth:
                continue
            for b in range(kh):
                _span(oh_n, height, sh, b * dh - ph, &h0, &h1)
                if h1 <= h0:
                    continue
                for e in range(kw):
                    _span(ow_n, width, sw, e * dw - pw, &o0, &o1)
                    if o1 <= o0:
                        continue
                    po = outs + (od * oh_n + h0) * ow_n + o0
                    pi = ins + (iz * height + h0 * sh + b * dh - ph) * width + o0 * sw + e * dw - pw
                    if real is float:
                        if scatter:
                            sb_dw_scatter_f(pi, po, w[c, a, b, e], h1 - h0, o1 - o0,
                                            sh * width, ow_n, sw)
                        else:
                            sb_dw_gather_f(po, pi, w[c, a, b, e], h1 - h0, o1 - o0, ow_n,
                                           sh * width, sw)
                    else:
                        if scatter:
                            sb_dw_scatter_d(pi, po, w[c, a, b, e], h1 - h0, o1 - o0,
                                            sh * width, ow_n, sw)
                        else:
                            sb_dw_gather_d(po, pi, w[c, a, b, e], h1 - h0, o1 - o0, ow_n,
                                           sh * width, sw)


cdef void _every_volume(real* outs, real* ins, const real[:, :, :, ::1] w, Py_ssize_t n_batch,
                        Py_ssize_t n_chan, Py_ssize_t od_n, Py_ssize_t oh_n, Py_ssize_t ow_n,
                        Py_ssize_t depth, Py_ssize_t height, Py_ssize_t width, Py_ssize_t sd,
                        Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t pd, Py_ssize_t ph,
                        Py_ssize_t pw, Py_ssize_t dd, Py_ssize_t dh, Py_ssize_t dw,
                        bint scatter, int num_threads) noexcept nogil:
    """:func:`_walk_taps` over every (sample, channel) volume, each on one thread: the
    written volume (the outputs ``outs`` when gathering, the inputs ``ins`` when
    scattering) zeroed first, then the taps in order."""
    cdef Py_ssize_t out_size = od_n * oh_n * ow_n, in_size = depth * height * width
    cdef Py_ssize_t plane, c, i
    cdef real* written
    for plane in prange(n_batch * n_chan, schedule="static", num_threads=num_threads):
        c = plane % n_chan
        written = ins + plane * in_size if scatter else outs + plane * out_size
        for i in range(in_size if scatter else out_size):
            written[i] = 0
        _walk_taps(outs + plane * out_size, ins + plane * in_size, w, c, od_n, oh_n, ow_n,
                   depth, height, width, sd, sh, sw, pd, ph, pw, dd, dh, dw, scatter)


def forward(const real[:, :, :, :, ::1] x, const real[:, :, :, ::1] w,
            real[:, :, :, :, ::1] y, Py_ssize_t sd, Py_ssize_t sh, Py_ssize_t sw,
            Py_ssize_t pd, Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dd, Py_ssize_t dh,
            Py_ssize_t dw, int num_threads):
    """``y[n, c] = sum over taps of w[c, tap] * x[n, c, shifted]`` (zero padding), the taps
    added in order to every output.

    x (IN) (N, C, D, H, W), w (IN) (C, kd, kh, kw), y (OUT) (N, C, Do, Ho, Wo).
    """
    if x.shape[0] * x.shape[1] == 0:
        return
    with nogil:  # x is only read: the walk gathers from it
        _every_volume(&y[0, 0, 0, 0, 0], <real*> &x[0, 0, 0, 0, 0], w, x.shape[0], x.shape[1],
                      y.shape[2], y.shape[3], y.shape[4], x.shape[2], x.shape[3], x.shape[4],
                      sd, sh, sw, pd, ph, pw, dd, dh, dw, False, num_threads)


def input_grad(const real[:, :, :, :, ::1] g, const real[:, :, :, ::1] w,
               real[:, :, :, :, ::1] gx, Py_ssize_t sd, Py_ssize_t sh, Py_ssize_t sw,
               Py_ssize_t pd, Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dd, Py_ssize_t dh,
               Py_ssize_t dw, int num_threads):
    """The forward's adjoint: ``gx[n, c, shifted] += w[c, tap] * g[n, c]`` over the taps,
    each (sample, channel) volume zeroed and summed on one thread, in a fixed order.

    g (IN) (N, C, Do, Ho, Wo), w (IN) (C, kd, kh, kw), gx (OUT) (N, C, D, H, W).
    """
    if gx.shape[0] * gx.shape[1] == 0:
        return
    with nogil:  # g is only read: the walk scatters from it
        _every_volume(<real*> &g[0, 0, 0, 0, 0], &gx[0, 0, 0, 0, 0], w, gx.shape[0],
                      gx.shape[1], g.shape[2], g.shape[3], g.shape[4], gx.shape[2],
                      gx.shape[3], gx.shape[4], sd, sh, sw, pd, ph, pw, dd, dh, dw, True,
                      num_threads)


def weight_grad(const real[:, :, :, :, ::1] g, const real[:, :, :, :, ::1] x,
                real[:, :, :, ::1] gw, Py_ssize_t sd, Py_ssize_t sh, Py_ssize_t sw,
                Py_ssize_t pd, Py_ssize_t ph, Py_ssize_t pw, Py_ssize_t dd, Py_ssize_t dh,
                Py_ssize_t dw, int num_threads):
    """``gw[c, tap] = sum over samples and outputs of g * x[shifted]``, each channel on one
    thread, samples and depth planes in order, in double.

    g (IN) (N, C, Do, Ho, Wo), x (IN) (N, C, D, H, W), gw (OUT) (C, kd, kh, kw).
    """
    cdef Py_ssize_t n_chan = x.shape[1], depth = x.shape[2], height = x.shape[3]
    cdef Py_ssize_t width = x.shape[4], kd = gw.shape[1], kh = gw.shape[2], kw = gw.shape[3]
    cdef Py_ssize_t od_n = g.shape[2], oh_n = g.shape[3], ow_n = g.shape[4]
    cdef Py_ssize_t c, n, od, a, b, e, iz, h0, h1, o0, o1
    cdef double acc
    for c in prange(n_chan, nogil=True, schedule="static", num_threads=num_threads):
        for a in range(kd):
            for b in range(kh):
                for e in range(kw):
                    acc = 0
                    h0 = 0
                    h1 = 0
                    o0 = 0
                    o1 = 0
                    _span(oh_n, height, sh, b * dh - ph, &h0, &h1)
                    _span(ow_n, width, sw, e * dw - pw, &o0, &o1)
                    if h1 > h0 and o1 > o0:
                        for n in range(x.shape[0]):
                            for od in range(od_n):
                                iz = od * sd - pd + a * dd
                                if iz < 0 or iz >= depth:
                                    continue
                                if real is float:
                                    acc = acc + sb_dw_dot_f(
                                        &g[n, c, od, h0, o0],
                                        &x[n, c, iz, h0 * sh + b * dh - ph,
                                           o0 * sw + e * dw - pw],
                                        h1 - h0, o1 - o0, ow_n, sh * width, sw)
                                else:
                                    acc = acc + sb_dw_dot_d(
                                        &g[n, c, od, h0, o0],
                                        &x[n, c, iz, h0 * sh + b * dh - ph,
                                           o0 * sw + e * dw - pw],
                                        h1 - h0, o1 - o0, ow_n, sh * width, sw)
                    gw[c, a, b, e] = <real> acc


# -- every stride 1: correlations of zero-padded volumes (depthwise_rows.h)

cdef inline void _place(real* dst, Py_ssize_t PD, Py_ssize_t PH, Py_ssize_t PW, const real* src,
                      Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t ld, Py_ssize_t lh,
                      Py_ssize_t lw) noexcept nogil:
    if real is float:
        sb_dw_place_f(dst, PD, PH, PW, src, D, H, W, ld, lh, lw)
    else:
        sb_dw_place_d(dst, PD, PH, PW, src, D, H, W, ld, lh, lw)


def correlate(const real[:, :, :, :, ::1] src, const real[:, ::1] w, real[:, :, :, :, ::1] out,
              const Py_ssize_t[::1] off, Py_ssize_t ld, Py_ssize_t lh, Py_ssize_t lw,
              Py_ssize_t PD, Py_ssize_t PH, Py_ssize_t PW, real[:, ::1] scratch,
              int num_threads):
    """``out[n, c, z, y, i] = sum over taps t, in order, of w[c, t] * P[z, y, i + off[t]]``,
    P the (sample, channel) volume of ``src`` placed at (ld, lh, lw) in a zeroed
    (PD, PH, PW) box (one row of ``scratch`` a thread), each volume on one thread.

    The stride-1 forward (``src`` the input, placed at the padding) and input gradient
    (``src`` the output gradient, the taps reversed); the caller gives ``off`` and the
    box (pyx/depthwise_rows.h).  src (IN) (N, C, D, H, W), w (IN) (C, taps), out (OUT)
    (N, C, Do, Ho, Wo), scratch (threads, PD * PH * PW + a vector), zero.
    """
    cdef Py_ssize_t n_chan = src.shape[1], ntaps = w.shape[1]
    cdef Py_ssize_t od_n = out.shape[2], oh_n = out.shape[3], ow_n = out.shape[4]
    cdef Py_ssize_t plane, n, c
    cdef real* box
    if src.shape[0] * n_chan == 0 or ow_n == 0:
        return
    for plane in prange(src.shape[0] * n_chan, nogil=True, schedule="static",
                        num_threads=num_threads):
        n = plane // n_chan
        c = plane % n_chan
        box = &scratch[threadid(), 0]
        _place(box, PD, PH, PW, &src[n, c, 0, 0, 0], src.shape[2], src.shape[3], src.shape[4],
             ld, lh, lw)
        if real is float:
            sb_dw_corr_f(&out[n, c, 0, 0, 0], od_n * oh_n, ow_n, box, oh_n, PH, PW, &off[0],
                         &w[c, 0], ntaps)
        else:
            sb_dw_corr_d(&out[n, c, 0, 0, 0], od_n * oh_n, ow_n, box, oh_n, PH, PW, &off[0],
                         &w[c, 0], ntaps)


def weight_dots(const real[:, :, :, :, ::1] g, const real[:, :, :, :, ::1] x,
                real[:, ::1] gw, const Py_ssize_t[::1] off, Py_ssize_t ld, Py_ssize_t lh,
                Py_ssize_t lw, Py_ssize_t PD, Py_ssize_t PH, Py_ssize_t PW,
                real[:, ::1] scratch, double[:, ::1] acc, int num_threads):
    """The stride-1 weight gradient: ``gw[c, t] = sum over samples and outputs of g *
    P[z, y, i + off[t]]``, P each input volume placed in its box as for
    :func:`correlate`; each channel on one thread, its samples in order, each volume's
    dots in ``real`` added to the double ``acc[c, t]`` (zeroed by the caller).

    g (IN) (N, C, Do, Ho, Wo), x (IN) (N, C, D, H, W), gw (OUT) (C, taps).
    """
    cdef Py_ssize_t n_chan = x.shape[1], ntaps = gw.shape[1]
    cdef Py_ssize_t od_n = g.shape[2], oh_n = g.shape[3], ow_n = g.shape[4]
    cdef Py_ssize_t c, n, t
    cdef real* box
    for c in prange(n_chan, nogil=True, schedule="static", num_threads=num_threads):
        box = &scratch[threadid(), 0]
        for n in range(x.shape[0]):
            _place(box, PD, PH, PW, &x[n, c, 0, 0, 0], x.shape[2], x.shape[3], x.shape[4],
                 ld, lh, lw)
            if real is float:
                sb_dw_dots_f(&g[n, c, 0, 0, 0], od_n * oh_n, ow_n, box, oh_n, PH, PW, &off[0],
                             ntaps, &acc[c, 0])
            else:
                sb_dw_dots_d(&g[n, c, 0, 0, 0], od_n * oh_n, ow_n, box, oh_n, PH, PW, &off[0],
                             ntaps, &acc[c, 0])
        for t in range(ntaps):
            gw[c, t] = <real> acc[c, t]
