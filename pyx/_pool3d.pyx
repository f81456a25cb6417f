# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""3-D max and average pooling, forward and backward (kernel contract: pyx/fused.pxd).

The 3-D twin of ``pyx/_pool.pyx``, with the same rules.  Arrays are viewed as
``P = N * C`` independent volumes; every ``prange`` iteration owns one volume of
the output (forward) or of the input gradient (backward, a scatter): no races,
results bitwise identical for any thread count.

Window of output ``(od, oh, ow)``: depths ``od * sd - pd + i * dd`` (i < kd),
rows and columns likewise.  Semantics follow PyTorch's CPU kernels:

* max: positions outside the input are skipped (``-inf`` padding); a value
  replaces the running maximum when ``val > max`` or ``val`` is NaN (first
  maximum wins ties, NaN propagates); the saved index is the flat offset
  ``(id * H + ih) * W + iw`` inside the volume.
* avg: the divisor is ``divisor`` when > 0, else the window size clipped to the
  padded input (``count_include_pad``) or to the input itself.
"""

from cython.parallel cimport prange
from libc.math cimport INFINITY, isnan
from libc.stdint cimport int64_t
from libc.string cimport memset

from fused cimport real
from pool_windows cimport (Window, _avg_divisor, _avg_window, _dilated_stop, _first_inside,
                           _scatter_plane)

# The 2x2x2 max of one output row in C, with selects and an AVX2 clone (gcc
# target_clones), as the 2x2 row in _pool.pyx: the Cython loop branched on every
# comparison, and on real data half of those branches were mispredicted.
cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from *:
    """
    #define SB_TAP(T, R, E, OFF) {                                                          \
            T v = R[2 * k + E];                                                         \
            int take = (v > m) | (v != v);                                              \
            m = take ? v : m;                                                           \
            best = take ? i0 + (OFF) + 2 * k + E : best; }
    #define SB_MAX2X2X2(T, S)                                                            \
    SB_CLONES static void sb_max2x2x2_row_##S(const T* restrict base, int64_t i0,       \
            Py_ssize_t w, Py_ssize_t hw, T* restrict out, int64_t* restrict idx,        \
            Py_ssize_t n) {                                                             \
        const T* restrict r0 = base + i0;                                               \
        const T* restrict r1 = base + i0 + w;                                           \
        const T* restrict r2 = base + i0 + hw;                                          \
        const T* restrict r3 = base + i0 + hw + w;                                      \
        for (Py_ssize_t k = 0; k < n; k++) {                                            \
            T m = r0[2 * k];                                                            \
            int64_t best = i0 + 2 * k;                                                  \
            SB_TAP(T, r0, 1, 0) SB_TAP(T, r1, 0, w) SB_TAP(T, r1, 1, w)                 \
            SB_TAP(T, r2, 0, hw) SB_TAP(T, r2, 1, hw)                                   \
            SB_TAP(T, r3, 0, hw + w) SB_TAP(T, r3, 1, hw + w)                           \
            out[k] = m;                                                                 \
            idx[k] = best; } }
    SB_MAX2X2X2(float, f)
    SB_MAX2X2X2(double, d)
    """
    void sb_max2x2x2_row_f(const float*, int64_t, Py_ssize_t, Py_ssize_t, float*, int64_t*,
                           Py_ssize_t) noexcept nogil
    void sb_max2x2x2_row_d(const double*, int64_t, Py_ssize_t, Py_ssize_t, double*, int64_t*,
                           Py_ssize_t) noexcept nogil


def maxpool3d_forward(const real[:, :, :, ::1] x,     # IN  (P, D, H, W)
                      real[:, :, :, ::1] out,          # OUT (P, do, ho, wo)
                      int64_t[:, :, :, ::1] indices,   # OUT (P, do, ho, wo)
                      int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
                      int dd, int dh, int dw, int num_threads):
    """Max pooling of every volume; writes the maxima and their flat indices."""
    cdef Py_ssize_t P = x.shape[0], D = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t do = out.shape[1], ho = out.shape[2], wo = out.shape[3]
    cdef Py_ssize_t p, od, oh, ow, z0, z1, h0, h1, w0, w1, iz, ih, iw, best, j
    cdef real val, vmax
    cdef const real* vol
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            vol = &x[p, 0, 0, 0]
            for od in range(do):
                z1 = _dilated_stop(od * sd - pd, kd, dd, D)
                z0 = _first_inside(od * sd - pd, dd)
                for oh in range(ho):
                    h1 = _dilated_stop(oh * sh - ph, kh, dh, H)
                    h0 = _first_inside(oh * sh - ph, dh)
                    for ow in range(wo):
                        w1 = _dilated_stop(ow * sw - pw, kw, dw, W)
                        w0 = _first_inside(ow * sw - pw, dw)
                        best = (z0 * H + h0) * W + w0
                        vmax = -INFINITY
                        iz = z0
                        while iz < z1:
                            ih = h0
                            while ih < h1:
                                iw = w0
                                while iw < w1:
                                    j = (iz * H + ih) * W + iw
                                    val = vol[j]
                                    if val > vmax or isnan(val):
                                        vmax = val
                                        best = j
                                    iw = iw + dw
                                ih = ih + dh
                            iz = iz + dd
                        out[p, od, oh, ow] = vmax
                        indices[p, od, oh, ow] = best


def maxpool3d_backward(const real[:, ::1] grad_out,      # IN  (P, do*ho*wo)
                       const int64_t[:, ::1] indices,    # IN  (P, do*ho*wo)
                       real[:, ::1] grad_in,             # OUT (P, D*H*W), overwritten
                       int num_threads):
    """Scatter ``grad_out`` to the saved argmax positions, one volume per iteration."""
    cdef Py_ssize_t P = grad_in.shape[0], DHW = grad_in.shape[1], n_out = grad_out.shape[1]
    cdef Py_ssize_t p
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            _scatter_plane(&grad_out[p, 0], &indices[p, 0], n_out, &grad_in[p, 0], DHW)


def avgpool3d_forward(const real[:, :, :, ::1] x,   # IN  (P, D, H, W)
                      real[:, :, :, ::1] out,        # OUT (P, do, ho, wo)
                      int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
                      bint count_include_pad, Py_ssize_t divisor, int num_threads):
    """Average pooling of every volume (``divisor`` > 0 overrides the window size)."""
    cdef Py_ssize_t P = x.shape[0], D = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t do = out.shape[1], ho = out.shape[2], wo = out.shape[3]
    cdef Py_ssize_t p, od, oh, ow, iz, ih, iw, div
    cdef Window wz, wh, ww
    cdef real acc
    cdef const real* vol
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            vol = &x[p, 0, 0, 0]
            for od in range(do):
                wz = _avg_window(od, kd, sd, pd, D)
                for oh in range(ho):
                    wh = _avg_window(oh, kh, sh, ph, H)
                    for ow in range(wo):
                        ww = _avg_window(ow, kw, sw, pw, W)
                        if wz.start >= wz.stop or wh.start >= wh.stop or ww.start >= ww.stop:
                            out[p, od, oh, ow] = 0
                            continue
                        div = _avg_divisor(divisor, count_include_pad,
                                           wz.padded * wh.padded * ww.padded,
                                           (wz.stop - wz.start) * (wh.stop - wh.start)
                                           * (ww.stop - ww.start))
                        acc = 0
                        for iz in range(wz.start, wz.stop):
                            for ih in range(wh.start, wh.stop):
                                for iw in range(ww.start, ww.stop):
                                    acc = acc + vol[(iz * H + ih) * W + iw]
                        out[p, od, oh, ow] = acc / <real>div


def avgpool3d_backward(const real[:, :, :, ::1] grad_out,   # IN  (P, do, ho, wo)
                       real[:, :, :, ::1] grad_in,           # OUT (P, D, H, W), overwritten
                       int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
                       bint count_include_pad, Py_ssize_t divisor, int num_threads):
    """Adjoint of :func:`avgpool3d_forward`, one input-gradient volume per iteration."""
    cdef Py_ssize_t P = grad_in.shape[0], D = grad_in.shape[1]
    cdef Py_ssize_t H = grad_in.shape[2], W = grad_in.shape[3]
    cdef Py_ssize_t do = grad_out.shape[1], ho = grad_out.shape[2], wo = grad_out.shape[3]
    cdef Py_ssize_t p, od, oh, ow, iz, ih, iw, div
    cdef Window wz, wh, ww
    cdef real g
    cdef real* vol
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            vol = &grad_in[p, 0, 0, 0]
            memset(vol, 0, D * H * W * sizeof(real))
            for od in range(do):
                wz = _avg_window(od, kd, sd, pd, D)
                for oh in range(ho):
                    wh = _avg_window(oh, kh, sh, ph, H)
                    for ow in range(wo):
                        ww = _avg_window(ow, kw, sw, pw, W)
                        if wz.start >= wz.stop or wh.start >= wh.stop or ww.start >= ww.stop:
                            continue
                        div = _avg_divisor(divisor, count_include_pad,
                                           wz.padded * wh.padded * ww.padded,
                                           (wz.stop - wz.start) * (wh.stop - wh.start)
                                           * (ww.stop - ww.start))
                        g = grad_out[p, od, oh, ow] / <real>div
                        for iz in range(wz.start, wz.stop):
                            for ih in range(wh.start, wh.stop):
                                for iw in range(ww.start, ww.stop):
                                    vol[(iz * H + ih) * W + iw] = vol[(iz * H + ih) * W + iw] + g


def maxpool2x2x2_forward(const real[:, :, :, ::1] x,     # IN  (P, D, H, W)
                         real[:, :, :, ::1] out,          # OUT (P, D // 2, H // 2, W // 2)
                         int64_t[:, :, :, ::1] indices,   # OUT flat index in the volume
                         int num_threads):
    """The 2x2x2, stride-2, unpadded case of :func:`maxpool3d_forward` (the 3-D UNet's
    pooling).

    Same result and tie/NaN rule (taps in depth, row, column order), with the window
    unrolled; parallel over output rows of all volumes so that small batches still
    use every thread.
    """
    cdef Py_ssize_t P = x.shape[0], D = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t do = out.shape[1], ho = out.shape[2], wo = out.shape[3]
    cdef Py_ssize_t row, p, od, oh, i0
    cdef const real* base
    with nogil:
        for row in prange(P * do * ho, schedule="static", num_threads=num_threads):
            p = row // (do * ho)
            od = (row // ho) % do
            oh = row % ho
            i0 = (2 * od * H + 2 * oh) * W
            base = &x[p, 0, 0, 0]
            if real is float:
                sb_max2x2x2_row_f(base, i0, W, H * W, &out[p, od, oh, 0],
                                  &indices[p, od, oh, 0], wo)
            else:
                sb_max2x2x2_row_d(base, i0, W, H * W, &out[p, od, oh, 0],
                                  &indices[p, od, oh, 0], wo)
