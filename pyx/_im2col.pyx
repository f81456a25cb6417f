# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""im2col / col2im kernels for convolution as GEMM (kernel contract: pyx/fused.pxd).

Column layout (one chunk of ``nb`` samples starting at sample ``n0``)::

    col[(c * kh + ki) * kw + kj, s * (ho * wo) + oh * wo + ow]
        = x[n0 + s, c, oh * sh - ph + ki * dh, ow * sw - pw + kj * dw]   (0 outside)

so a convolution chunk is ``weight.reshape(O, C*kh*kw) @ col`` and the gradient
with respect to the input is ``col2im(weight.T @ grad_cols)``.

* ``im2col`` runs one row ``(c, ki, kj)`` per ``prange`` iteration: every row is
  written by exactly one thread.
* ``col2im`` (the adjoint, a scatter-add) runs one ``(sample, channel)`` plane
  per iteration; the thread owning the plane adds all contributions in a fixed
  order, so results are bitwise identical for any thread count (no atomics).
"""

from cython.parallel cimport prange
from libc.string cimport memset

from cols cimport _fold_row, _unfold_row, _valid_hi, _valid_lo
from fused cimport real


# Note: lo/hi are assigned directly (not through pointers) inside the prange
# bodies so that Cython makes them thread-private.


def im2col(const real[:, :, :, ::1] x,   # IN  (N, C, H, W)
           real[:, ::1] col,             # OUT (C*kh*kw, nb*ho*wo)
           Py_ssize_t n0, Py_ssize_t nb,
           int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
           Py_ssize_t ho, Py_ssize_t wo, int num_threads):
    """Unfold samples ``n0 .. n0+nb-1`` of ``x`` into ``col`` (layout in the module doc).

    Parameters
    ----------
    x : ndarray, shape (N, C, H, W), float32 or float64, C-contiguous
    col : ndarray, shape (C*kh*kw, nb*ho*wo), same dtype, C-contiguous; fully overwritten
    n0, nb : int
        First sample and number of samples of the chunk.
    kh, kw, sh, sw, ph, pw, dh, dw : int
        Kernel size, stride, padding and dilation (rows, columns).
    ho, wo : int
        Output size (given, so callers may pick any valid size).
    num_threads : int
        Threads for the ``prange`` loop (>= 1).
    """
    cdef Py_ssize_t C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t rows = C * kh * kw, plane = ho * wo
    cdef Py_ssize_t r, c, ki, kj, s, oh, ih, off, lo, hi
    cdef real* dst
    with nogil:
        for r in prange(rows, schedule="static", num_threads=num_threads):
            c = r // (kh * kw)
            ki = (r // kw) % kh
            kj = r % kw
            off = pw - kj * dw
            lo = _valid_lo(off, sw, wo)
            hi = _valid_hi(off, sw, W, wo)
            for s in range(nb):
                dst = &col[r, s * plane]
                for oh in range(ho):
                    ih = oh * sh - ph + ki * dh
                    if ih < 0 or ih >= H or lo >= hi:
                        memset(dst, 0, wo * sizeof(real))
                    else:
                        _unfold_row(&x[n0 + s, c, ih, 0], dst, off, sw, lo, hi, wo)
                    dst = dst + wo


def col2im(const real[:, ::1] col,       # IN  (C*kh*kw, nb*ho*wo)
           real[:, :, :, ::1] out,        # OUT (N, C, H, W); planes n0..n0+nb-1 overwritten
           Py_ssize_t n0, Py_ssize_t nb,
           int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw,
           Py_ssize_t ho, Py_ssize_t wo, int num_threads):
    """Adjoint of :func:`im2col`: fold ``col`` back, summing overlapping taps.

    Parameters are those of :func:`im2col`; samples ``n0 .. n0+nb-1`` of ``out``
    are overwritten (not accumulated into).  Deterministic: each ``(sample,
    channel)`` plane is owned by one iteration and summed in a fixed order.
    """
    cdef Py_ssize_t C = out.shape[1], H = out.shape[2], W = out.shape[3]
    cdef Py_ssize_t plane = ho * wo
    cdef Py_ssize_t p, c, s, ki, kj, oh, ih, off, lo, hi
    cdef const real* src
    cdef real* dst
    with nogil:
        for p in prange(nb * C, schedule="static", num_threads=num_threads):
            s = p // C
            c = p % C
            dst = &out[n0 + s, c, 0, 0]
            memset(dst, 0, H * W * sizeof(real))
            for ki in range(kh):
                for kj in range(kw):
                    off = pw - kj * dw
                    lo = _valid_lo(off, sw, wo)
                    hi = _valid_hi(off, sw, W, wo)
                    if lo >= hi:
                        continue
                    src = &col[(c * kh + ki) * kw + kj, s * plane]
                    for oh in range(ho):
                        ih = oh * sh - ph + ki * dh
                        if ih < 0 or ih >= H:
                            continue
                        _fold_row(src + oh * wo, dst + ih * W - off, sw, lo, hi)


# -- the direct 3x3 convolution of a few input channels (a first layer) -------------------

from conv_direct cimport (SB_C3_MAX_K, sb_c3_available, sb_c3_avx512_available,
                          sb_c3_row_f32, sb_c3_row_f32_avx512, sb_c3_sum_parts,
                          sb_c3_wgrad_f32, sb_c3_wgrad_f32_avx512)


def direct3x3_available(bint wide=False):
    """Whether this CPU runs :func:`direct3x3` (AVX2 and FMA; ``wide``: its AVX-512 form)."""
    return bool(sb_c3_avx512_available() if wide else sb_c3_available())


def direct3x3_max_channels():
    """The most input channels :func:`direct3x3` takes."""
    return SB_C3_MAX_K // 9


def direct3x3(const float[:, :, :, ::1] x,   # IN  (N, C, H, W), C <= direct3x3_max_channels()
              const float[:, ::1] w,         # IN  (O, C*9): the weights, row-major
              float[:, :, :, ::1] y,         # OUT (N, O, Ho, Wo), fully overwritten
              int ph, int pw, int num_threads, bint wide=False):
    """``y = conv2d(x, w)``, 3x3, stride 1, dilation 1, padding (ph, pw): the im2col
    product's sums in its order (conv_direct.h), one output row of a sample per ``prange``
    iteration, so the values do not depend on the threads.  ``wide``: the AVX-512 form
    (16-pixel blocks, the same bits; only where ``direct3x3_available(True)``)."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t O = y.shape[1], Ho = y.shape[2], Wo = y.shape[3]
    cdef Py_ssize_t r, n, h
    if N * O * Ho * Wo == 0:
        return
    with nogil:
        for r in prange(N * Ho, schedule="static", num_threads=num_threads):
            n = r // Ho
            h = r - n * Ho
            if wide:
                sb_c3_row_f32_avx512(&x[n, 0, 0, 0], <int> C, <int> H, <int> W, &w[0, 0],
                                     <int> O, ph, pw, <int> h, <int> Wo, &y[n, 0, 0, 0],
                                     Ho * Wo)
            else:
                sb_c3_row_f32(&x[n, 0, 0, 0], <int> C, <int> H, <int> W, &w[0, 0], <int> O,
                              ph, pw, <int> h, <int> Wo, &y[n, 0, 0, 0], Ho * Wo)


def direct3x3_weight_grad(const float[:, :, :, ::1] x,   # IN  (N, C, H, W), C <= 4
                          const float[:, :, :, ::1] g,   # IN  (N, O, Ho, Wo)
                          float[:, :, ::1] part,         # scratch (tasks, O, C*9)
                          float[:, ::1] dw,              # OUT (O, C*9), fully overwritten
                          int ph, int pw, Py_ssize_t band, int num_threads, bint wide=False):
    """The weight gradient of :func:`direct3x3`: ``dw[o, 9c + 3kh + kw]`` = the sum over
    the samples and output pixels of ``g[n, o, h, w] * x[n, c, h + kh - ph, w + kw - pw]``
    (zero outside ``x``).  Tasks of ``band`` output rows of one sample (``part`` holds
    ``N * ceil(Ho / band)`` of them, in sample then row order) each sum their pixels in
    vector lanes (conv_direct.h; ``wide``: the AVX-512 form), then every weight adds the
    tasks' parts in task order in double, rounded once: the tasks are fixed by the shapes
    and ``band``, so the result does not depend on the thread count."""
    cdef Py_ssize_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3]
    cdef Py_ssize_t O = g.shape[1], Ho = g.shape[2], Wo = g.shape[3]
    cdef Py_ssize_t K = 9 * C, per = (Ho + band - 1) // band
    cdef Py_ssize_t tasks = N * per
    cdef Py_ssize_t t, n, h0, h1
    cdef int failed = 0, status
    if O * K == 0:
        return
    if tasks == 0 or Wo == 0:
        dw[:, :] = 0
        return
    with nogil:
        for t in prange(tasks, schedule="static", num_threads=num_threads):
            n = t // per
            h0 = (t - n * per) * band
            h1 = min(h0 + band, Ho)
            if wide:
                status = sb_c3_wgrad_f32_avx512(&x[n, 0, 0, 0], <int> C, <int> H, <int> W,
                                                &g[n, 0, 0, 0], <int> O, ph, pw, <int> h0,
                                                <int> h1, <int> Wo, Ho * Wo, &part[t, 0, 0])
            else:
                status = sb_c3_wgrad_f32(&x[n, 0, 0, 0], <int> C, <int> H, <int> W,
                                         &g[n, 0, 0, 0], <int> O, ph, pw, <int> h0, <int> h1,
                                         <int> Wo, Ho * Wo, &part[t, 0, 0])
            if status != 0:
                failed += 1  # a reduction: each thread's count, added at the end
    if failed:
        raise MemoryError("direct3x3_weight_grad: a task's input tile could not be allocated")
    with nogil:
        sb_c3_sum_parts(&part[0, 0, 0], tasks, O * K, &dw[0, 0], num_threads)
