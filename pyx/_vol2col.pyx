# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""vol2col / col2vol kernels for 3-D convolution as GEMM (kernel contract: pyx/fused.pxd).

The 3-D twin of ``pyx/_im2col.pyx`` (kept separate while the 2-D path is being
tuned; the two can be unified later).  A chunk is ``nb`` samples starting at
sample ``n0`` and, so that columns of large volumes stay small, a slab of ``nd``
output depth planes starting at ``od0``.  Column layout, with ``P = nd * ho * wo``
and ``t = od - od0``::

    col[((c * kd + kz) * kh + ki) * kw + kj, s * P + (t * ho + oh) * wo + ow]
        = x[n0 + s, c, od*sd - pd + kz*dd, oh*sh - ph + ki*dh, ow*sw - pw + kj*dw]
          (0 outside the input)

* ``vol2col`` runs one row ``(c, kz, ki, kj)`` per ``prange`` iteration: every
  row is written by exactly one thread.
* ``col2vol`` (the adjoint, a scatter-add) runs one ``(sample, channel)`` volume
  per iteration; the thread owning the volume adds every contribution in a fixed
  order, so results are bitwise identical for any thread count (no atomics).
  Slabs of one sample are folded one after the other (``zero_first`` on the
  first), so the sum order is fixed by the shapes too.
"""

from cython.parallel cimport prange
from libc.string cimport memset

from cols cimport _fold_row, _unfold_row, _valid_hi, _valid_lo
from fused cimport real


def vol2col(const real[:, :, :, :, ::1] x,   # IN  (N, C, D, H, W)
            real[:, ::1] col,                # OUT (C*kd*kh*kw, nb*nd*ho*wo)
            Py_ssize_t n0, Py_ssize_t nb, Py_ssize_t od0, Py_ssize_t nd,
            int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
            int dd, int dh, int dw,
            Py_ssize_t ho, Py_ssize_t wo, int num_threads):
    """Unfold output planes ``od0 .. od0+nd-1`` of samples ``n0 .. n0+nb-1`` of ``x``
    into ``col`` (layout in the module doc).

    Parameters
    ----------
    x : ndarray, shape (N, C, D, H, W), float32 or float64, C-contiguous
    col : ndarray, shape (C*kd*kh*kw, nb*nd*ho*wo), same dtype, C-contiguous; overwritten
    n0, nb : int
        First sample and number of samples of the chunk.
    od0, nd : int
        First output depth plane and number of planes of the slab.
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw : int
        Kernel size, stride, padding and dilation (depth, rows, columns).
    ho, wo : int
        Output rows and columns.
    num_threads : int
        Threads for the ``prange`` loop (>= 1).
    """
    cdef Py_ssize_t C = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4]
    cdef Py_ssize_t taps = kd * kh * kw, rows = C * taps, vol = nd * ho * wo
    cdef Py_ssize_t r, c, kz, ki, kj, s, od, oh, iz, ih, off, lo, hi
    cdef real* dst
    with nogil:
        for r in prange(rows, schedule="static", num_threads=num_threads):
            c = r // taps
            kz = (r // (kh * kw)) % kd
            ki = (r // kw) % kh
            kj = r % kw
            off = pw - kj * dw
            lo = _valid_lo(off, sw, wo)
            hi = _valid_hi(off, sw, W, wo)
            for s in range(nb):
                dst = &col[r, s * vol]
                for od in range(od0, od0 + nd):
                    iz = od * sd - pd + kz * dd
                    if iz < 0 or iz >= D or lo >= hi:
                        memset(dst, 0, ho * wo * sizeof(real))
                        dst = dst + ho * wo
                        continue
                    for oh in range(ho):
                        ih = oh * sh - ph + ki * dh
                        if ih < 0 or ih >= H:
                            memset(dst, 0, wo * sizeof(real))
                        else:
                            _unfold_row(&x[n0 + s, c, iz, ih, 0], dst, off, sw, lo, hi, wo)
                        dst = dst + wo


def col2vol(const real[:, ::1] col,           # IN  (C*kd*kh*kw, nb*nd*ho*wo)
            real[:, :, :, :, ::1] out,         # OUT (N, C, D, H, W); samples n0..n0+nb-1
            Py_ssize_t n0, Py_ssize_t nb, Py_ssize_t od0, Py_ssize_t nd,
            int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
            int dd, int dh, int dw,
            Py_ssize_t ho, Py_ssize_t wo, bint zero_first, int num_threads):
    """Adjoint of :func:`vol2col`: fold ``col`` back, summing overlapping taps.

    Parameters are those of :func:`vol2col`; samples ``n0 .. n0+nb-1`` of ``out``
    are zeroed first when ``zero_first``, else accumulated into (the later slabs
    of a sample).  Deterministic: each ``(sample, channel)`` volume is owned by one
    iteration and summed in a fixed order.
    """
    cdef Py_ssize_t C = out.shape[1], D = out.shape[2], H = out.shape[3], W = out.shape[4]
    cdef Py_ssize_t vol = nd * ho * wo
    cdef Py_ssize_t p, c, s, kz, ki, kj, od, oh, iz, ih, off, lo, hi, j
    cdef const real* src
    cdef real* dst
    with nogil:
        for p in prange(nb * C, schedule="static", num_threads=num_threads):
            s = p // C
            c = p % C
            dst = &out[n0 + s, c, 0, 0, 0]
            if zero_first:
                memset(dst, 0, D * H * W * sizeof(real))
            for kz in range(kd):
                for ki in range(kh):
                    for kj in range(kw):
                        off = pw - kj * dw
                        lo = _valid_lo(off, sw, wo)
                        hi = _valid_hi(off, sw, W, wo)
                        if lo >= hi:
                            continue
                        src = &col[((c * kd + kz) * kh + ki) * kw + kj, s * vol]
                        for od in range(od0, od0 + nd):
                            iz = od * sd - pd + kz * dd
                            if iz < 0 or iz >= D:
                                continue
                            for oh in range(ho):
                                ih = oh * sh - ph + ki * dh
                                if ih < 0 or ih >= H:
                                    continue
                                j = ((od - od0) * ho + oh) * wo
                                _fold_row(src + j, dst + (iz * H + ih) * W - off, sw, lo, hi)


# -- the direct 3x3x3 convolution of one input channel (a volume's first layer) -----------
#
# Output plane z of a one-channel volume is the 2-D 3x3 convolution of the three input
# planes z - pd .. z - pd + 2 taken as three channels (depth tap kz as channel kz):
# conv_direct.h's row kernels serve it as they are, with the vol2col product's k order
# (k = 9 kz + 3 ki + kj, one channel).  A plane whose depth taps reach outside the volume
# reads them from a per-thread copy with zero planes there (the zeros vol2col's columns
# hold, multiplied in the same way).

from libc.stdlib cimport free, malloc
from libc.string cimport memcpy


from conv_direct cimport (sb_c3_row_f32, sb_c3_row_f32_avx512, sb_c3_sum_parts,
                          sb_c3_wgrad_f32, sb_c3_wgrad_f32_avx512)


cdef inline const float* _depth_taps(const float[:, :, :, :, ::1] x, Py_ssize_t n,
                                     Py_ssize_t z0, float** staging) noexcept nogil:
    """The three input planes ``z0 .. z0 + 2`` of sample ``n`` (one channel) as (3, H, W):
    in place where all three are inside the volume, else copied into a new ``*staging``
    (freed by the caller) with zero planes outside it; NULL when it cannot be allocated."""
    cdef Py_ssize_t D = x.shape[2], plane = x.shape[3] * x.shape[4], k
    cdef float* copy
    if z0 >= 0 and z0 + 2 < D:
        return &x[n, 0, z0, 0, 0]
    copy = <float*> malloc(3 * plane * sizeof(float))
    staging[0] = copy
    if copy == NULL:
        return NULL
    for k in range(3):
        if 0 <= z0 + k < D:
            memcpy(copy + k * plane, &x[n, 0, z0 + k, 0, 0], plane * sizeof(float))
        else:
            memset(copy + k * plane, 0, plane * sizeof(float))
    return copy


def direct3x3x3(const float[:, :, :, :, ::1] x,   # IN  (N, 1, D, H, W)
                const float[:, ::1] w,            # IN  (O, 27): the weights, row-major
                float[:, :, :, :, ::1] y,         # OUT (N, O, Do, Ho, Wo), fully overwritten
                int pd, int ph, int pw, int num_threads, bint wide=False):
    """``y = conv3d(x, w)``, 3x3x3, stride 1, dilation 1, one input channel, padding (pd,
    ph, pw): the vol2col product's sums in its order (conv_direct.h's rows with the depth
    taps as channels), one output plane of a sample per iteration, so the values do not
    depend on the threads.  ``wide``: the AVX-512 form (the same bits).  Raises
    MemoryError when a plane's staging copy cannot be allocated."""
    cdef Py_ssize_t N = x.shape[0], H = x.shape[3], W = x.shape[4]
    cdef Py_ssize_t O = y.shape[1], Do = y.shape[2], Ho = y.shape[3], Wo = y.shape[4]
    cdef Py_ssize_t q, n, z, h
    cdef float* staging
    cdef const float* taps
    cdef int failed = 0
    if N * O * Do * Ho * Wo == 0:
        return
    with nogil:
        for q in prange(N * Do, schedule="static", num_threads=num_threads):
            n = q // Do
            z = q - n * Do
            staging = NULL
            taps = _depth_taps(x, n, z - pd, &staging)
            if taps == NULL:
                failed += 1  # a reduction: each thread's count, added at the end
                continue
            for h in range(Ho):
                if wide:
                    sb_c3_row_f32_avx512(taps, 3, <int> H, <int> W, &w[0, 0], <int> O, ph, pw,
                                         <int> h, <int> Wo, &y[n, 0, z, 0, 0], Do * Ho * Wo)
                else:
                    sb_c3_row_f32(taps, 3, <int> H, <int> W, &w[0, 0], <int> O, ph, pw,
                                  <int> h, <int> Wo, &y[n, 0, z, 0, 0], Do * Ho * Wo)
            free(staging)
    if failed:
        raise MemoryError("direct3x3x3: a plane's staging copy could not be allocated")


def direct3x3x3_weight_grad(const float[:, :, :, :, ::1] x,   # IN  (N, 1, D, H, W)
                            const float[:, :, :, :, ::1] g,   # IN  (N, O, Do, Ho, Wo)
                            float[:, :, ::1] part,            # scratch (tasks, O, 27)
                            float[:, ::1] dw,                 # OUT (O, 27), fully overwritten
                            int pd, int ph, int pw, Py_ssize_t band, int num_threads,
                            bint wide=False):
    """The weight gradient of :func:`direct3x3x3`: ``dw[o, 9 kz + 3 ki + kj]`` = the sum over
    the samples and output voxels of ``g * x`` shifted by the tap (zero outside ``x``).
    Tasks of ``band`` output rows of one output plane of a sample (``part`` holds ``N * Do
    * ceil(Ho / band)`` of them, in sample, plane and row order) each sum their pixels in
    vector lanes (conv_direct.h, the depth taps as channels), then every weight adds the
    tasks' parts in task order in double, rounded once: the same bits for any thread
    count.  Raises MemoryError when a task's buffers cannot be allocated."""
    cdef Py_ssize_t N = x.shape[0], H = x.shape[3], W = x.shape[4]
    cdef Py_ssize_t O = g.shape[1], Do = g.shape[2], Ho = g.shape[3], Wo = g.shape[4]
    cdef Py_ssize_t per = (Ho + band - 1) // band, tasks = N * Do * per
    cdef Py_ssize_t t, n, z, r, h0, h1
    cdef float* staging
    cdef const float* taps
    cdef int failed = 0, status
    if O == 0:
        return
    if tasks == 0 or Wo == 0:
        dw[:, :] = 0
        return
    with nogil:
        for t in prange(tasks, schedule="static", num_threads=num_threads):
            n = t // (Do * per)
            r = t - n * Do * per
            z = r // per
            h0 = (r - z * per) * band
            h1 = min(h0 + band, Ho)
            staging = NULL
            taps = _depth_taps(x, n, z - pd, &staging)
            status = -1
            if taps != NULL:
                if wide:
                    status = sb_c3_wgrad_f32_avx512(taps, 3, <int> H, <int> W, &g[n, 0, z, 0, 0],
                                                    <int> O, ph, pw, <int> h0, <int> h1,
                                                    <int> Wo, Do * Ho * Wo, &part[t, 0, 0])
                else:
                    status = sb_c3_wgrad_f32(taps, 3, <int> H, <int> W, &g[n, 0, z, 0, 0],
                                             <int> O, ph, pw, <int> h0, <int> h1, <int> Wo,
                                             Do * Ho * Wo, &part[t, 0, 0])
            free(staging)
            if status != 0:
                failed += 1
    if failed:
        raise MemoryError("direct3x3x3_weight_grad: a task's buffers could not be allocated")
    with nogil:
        sb_c3_sum_parts(&part[0, 0, 0], tasks, O * 27, &dw[0, 0], num_threads)
