# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""Max and average pooling, forward and backward (kernel contract: pyx/fused.pxd).

Arrays are viewed as ``P = N * C`` independent planes.  Every ``prange``
iteration owns one plane of the output (forward) or of the input gradient
(backward, a scatter): no races, results bitwise identical for any thread count.

Window of output ``(oh, ow)``: rows ``oh * sh - ph + i * dh`` (i < kh), columns
likewise.  Semantics follow PyTorch's CPU kernels:

* max: positions outside the input are skipped (``-inf`` padding); a value
  replaces the running maximum when ``val > max`` or ``val`` is NaN, so the
  first maximum wins ties and NaN propagates; the saved index is the flat
  offset ``ih * W + iw`` inside the plane.
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

# The 2x2 max of one output row, in C: written with selects on restrict pointers, the
# compiler vectorises it (compare masks and blends; an AVX2 clone chosen at load time,
# since the baseline x86-64 target cannot vectorise the stride-2 loads), where the
# Cython loop compiled to a branch per comparison.  On real data the winner of a window is random, so those
# branches were mispredicted half the time (measured, 128 planes of 64x64: 1.40 ms
# -> 0.2 ms, the time of all-equal input).
cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from *:
    """
    #define SB_MAX2X2(T, S)                                                              \
    SB_CLONES static void sb_max2x2_row_##S(const T* restrict r0, const T* restrict r1,     \
            T* restrict out, int64_t* restrict idx, Py_ssize_t i0, Py_ssize_t i1,       \
            Py_ssize_t n) {                                                             \
        for (Py_ssize_t k = 0; k < n; k++) {                                            \
            T a = r0[2 * k], b = r0[2 * k + 1], c = r1[2 * k], d = r1[2 * k + 1];       \
            int take = (b > a) | (b != b);                                              \
            T m = take ? b : a;                                                         \
            int64_t best = take ? i0 + 2 * k + 1 : i0 + 2 * k;                         \
            take = (c > m) | (c != c);                                                  \
            m = take ? c : m;                                                           \
            best = take ? i1 + 2 * k : best;                                            \
            take = (d > m) | (d != d);                                                  \
            m = take ? d : m;                                                           \
            best = take ? i1 + 2 * k + 1 : best;                                        \
            out[k] = m;                                                                 \
            idx[k] = best; } }
    SB_MAX2X2(float, f)
    SB_MAX2X2(double, d)
    """
    void sb_max2x2_row_f(const float*, const float*, float*, int64_t*, Py_ssize_t, Py_ssize_t,
                         Py_ssize_t) noexcept nogil
    void sb_max2x2_row_d(const double*, const double*, double*, int64_t*, Py_ssize_t,
                         Py_ssize_t, Py_ssize_t) noexcept nogil


def maxpool2d_forward(const real[:, :, ::1] x,     # IN  (P, H, W)
                      real[:, :, ::1] out,          # OUT (P, ho, wo)
                      int64_t[:, :, ::1] indices,   # OUT (P, ho, wo), flat index in the plane
                      int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
                      int num_threads):
    """Max pooling of every plane; writes the maxima and their flat indices."""
    cdef Py_ssize_t P = x.shape[0], H = x.shape[1], W = x.shape[2]
    cdef Py_ssize_t ho = out.shape[1], wo = out.shape[2]
    cdef Py_ssize_t p, oh, ow, ih0, iw0, ih1, iw1, ih, iw, best
    cdef real val, vmax
    cdef const real* plane
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            plane = &x[p, 0, 0]
            for oh in range(ho):
                ih1 = _dilated_stop(oh * sh - ph, kh, dh, H)
                ih0 = _first_inside(oh * sh - ph, dh)
                for ow in range(wo):
                    iw1 = _dilated_stop(ow * sw - pw, kw, dw, W)
                    iw0 = _first_inside(ow * sw - pw, dw)
                    best = ih0 * W + iw0
                    vmax = -INFINITY
                    ih = ih0
                    while ih < ih1:
                        iw = iw0
                        while iw < iw1:
                            val = plane[ih * W + iw]
                            if val > vmax or isnan(val):
                                vmax = val
                                best = ih * W + iw
                            iw = iw + dw
                        ih = ih + dh
                    out[p, oh, ow] = vmax
                    indices[p, oh, ow] = best


def maxpool2d_backward(const real[:, :, ::1] grad_out,    # IN  (P, ho, wo)
                       const int64_t[:, :, ::1] indices,  # IN  (P, ho, wo)
                       real[:, :, ::1] grad_in,           # OUT (P, H, W), overwritten
                       int num_threads):
    """Scatter ``grad_out`` to the saved argmax positions, one plane per iteration."""
    cdef Py_ssize_t P = grad_in.shape[0], HW = grad_in.shape[1] * grad_in.shape[2]
    cdef Py_ssize_t n_out = grad_out.shape[1] * grad_out.shape[2]
    cdef Py_ssize_t p
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            _scatter_plane(&grad_out[p, 0, 0], &indices[p, 0, 0], n_out, &grad_in[p, 0, 0], HW)


# Note: window bounds are assigned directly (not through pointers) inside the
# prange bodies so that Cython makes them thread-private.


def avgpool2d_forward(const real[:, :, ::1] x,   # IN  (P, H, W)
                      real[:, :, ::1] out,        # OUT (P, ho, wo)
                      int kh, int kw, int sh, int sw, int ph, int pw,
                      bint count_include_pad, Py_ssize_t divisor, int num_threads):
    """Average pooling of every plane (``divisor`` > 0 overrides the window size)."""
    cdef Py_ssize_t P = x.shape[0], H = x.shape[1], W = x.shape[2]
    cdef Py_ssize_t ho = out.shape[1], wo = out.shape[2]
    cdef Py_ssize_t p, oh, ow, ih, iw, div
    cdef Window wh, ww
    cdef real acc
    cdef const real* plane
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            plane = &x[p, 0, 0]
            for oh in range(ho):
                wh = _avg_window(oh, kh, sh, ph, H)
                for ow in range(wo):
                    ww = _avg_window(ow, kw, sw, pw, W)
                    if wh.start >= wh.stop or ww.start >= ww.stop:
                        out[p, oh, ow] = 0
                        continue
                    div = _avg_divisor(divisor, count_include_pad, wh.padded * ww.padded,
                                       (wh.stop - wh.start) * (ww.stop - ww.start))
                    acc = 0
                    for ih in range(wh.start, wh.stop):
                        for iw in range(ww.start, ww.stop):
                            acc = acc + plane[ih * W + iw]
                    out[p, oh, ow] = acc / <real>div


def avgpool2d_backward(const real[:, :, ::1] grad_out,   # IN  (P, ho, wo)
                       real[:, :, ::1] grad_in,           # OUT (P, H, W), overwritten
                       int kh, int kw, int sh, int sw, int ph, int pw,
                       bint count_include_pad, Py_ssize_t divisor, int num_threads):
    """Adjoint of :func:`avgpool2d_forward`, one input-gradient plane per iteration."""
    cdef Py_ssize_t P = grad_in.shape[0], H = grad_in.shape[1], W = grad_in.shape[2]
    cdef Py_ssize_t ho = grad_out.shape[1], wo = grad_out.shape[2]
    cdef Py_ssize_t p, oh, ow, ih, iw, div
    cdef Window wh, ww
    cdef real g
    cdef real* plane
    with nogil:
        for p in prange(P, schedule="static", num_threads=num_threads):
            plane = &grad_in[p, 0, 0]
            memset(plane, 0, H * W * sizeof(real))
            for oh in range(ho):
                wh = _avg_window(oh, kh, sh, ph, H)
                for ow in range(wo):
                    ww = _avg_window(ow, kw, sw, pw, W)
                    if wh.start >= wh.stop or ww.start >= ww.stop:
                        continue
                    div = _avg_divisor(divisor, count_include_pad, wh.padded * ww.padded,
                                       (wh.stop - wh.start) * (ww.stop - ww.start))
                    g = grad_out[p, oh, ow] / <real>div
                    for ih in range(wh.start, wh.stop):
                        for iw in range(ww.start, ww.stop):
                            plane[ih * W + iw] = plane[ih * W + iw] + g


def maxpool2x2_forward(const real[:, :, ::1] x,     # IN  (P, H, W)
                       real[:, :, ::1] out,          # OUT (P, H // 2, W // 2)
                       int64_t[:, :, ::1] indices,   # OUT flat index in the plane
                       int num_threads):
    """The 2x2, stride-2, unpadded case of :func:`maxpool2d_forward` (the UNet's pooling).

    Same result and tie/NaN rule, with the window unrolled; parallel over rows of all
    planes so that small batches still use every thread.
    """
    cdef Py_ssize_t P = x.shape[0], H = x.shape[1], W = x.shape[2]
    cdef Py_ssize_t ho = out.shape[1], wo = out.shape[2]
    cdef Py_ssize_t row, p, oh, i0, i1
    cdef const real* r0
    cdef const real* r1
    with nogil:
        for row in prange(P * ho, schedule="static", num_threads=num_threads):
            p = row // ho
            oh = row - p * ho
            r0 = &x[p, 2 * oh, 0]
            r1 = r0 + W
            i0 = 2 * oh * W
            i1 = i0 + W
            if real is float:
                sb_max2x2_row_f(r0, r1, &out[p, oh, 0], &indices[p, oh, 0], i0, i1, wo)
            else:
                sb_max2x2_row_d(r0, r1, &out[p, oh, 0], &indices[p, oh, 0], i0, i1, wo)
