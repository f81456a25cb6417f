# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Grid sampling kernels (2-D and 3-D): the forward (a gather), the push (the adjoint
# with respect to the input, a scatter) and the gradient with respect to the grid.
# See pyx/fused.pxd for the kernel contract; the rules are PyTorch 2.13's
# (docs/design.md, "Grid sampling"), the numpy oracle is
# sandbox/array/grid_sample/reference.py.
#
# Arrays arrive flat and C-contiguous: input (N, C, S) with S = D*H*W (D = 1 in 2-D),
# grid (N, P, nd) with component 0 = x (the W axis), 1 = y (H), 2 = z (D), output
# and grad_output (N, C, P).  Per output point each axis gives at most 4 taps (index,
# weight, d weight / d grid value); their products over the axes (at most 64) are
# the point's taps, shared by every channel.
#
# Parallel work and determinism:
#   * forward and grid-only backward: one iteration per (n, point); each writes only
#     its own outputs;
#   * push: each parallel task owns a slab of input rows (planes in 3-D) and visits
#     the points whose taps start in it (bucketed by a counting sort); even slabs run
#     concurrently, then odd ones (see `backward`).  So every sum has the same order
#     for any thread count, without atomics or extra buffers; the grid gradient of a
#     point is computed in the same visit.

from cython.parallel cimport parallel, prange
from libc.math cimport floor, fmod, rint
from libc.string cimport memset
from libc.stdint cimport int32_t
from fused cimport real
from work_share cimport sb_share, sb_share_first, sb_share_init, sb_share_take

cimport numpy as cnp

cdef extern from "grid_block2d.h":
    int sb_gs2d_coords_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float, float, float,
                         int, float, float, float, int, int32_t*, float*, float*, float*,
                         float*, float*, float*, float*, float*, unsigned char*) noexcept nogil
    int sb_gs2d_coords_f_avx2(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float, float,
                              float, int, float, float, float, int32_t*, float*, float*,
                              float*, float*, float*, float*, float*, float*,
                              unsigned char*) noexcept nogil
    void sb_gs2d_gather_f_avx2(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float*,
                               Py_ssize_t, Py_ssize_t, const int32_t*, const float*,
                               const float*, const float*, const float*) noexcept nogil
    int sb_gs2d_avx2_available() noexcept nogil
    int sb_gs2d_coords_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, double, double,
                         double, int, double, double, double, int, int32_t*, double*, double*,
                         double*, double*, double*, double*, double*, double*,
                         unsigned char*) noexcept nogil
    void sb_gs2d_gather_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float*, Py_ssize_t,
                          Py_ssize_t, int, const int32_t*, const float*, const float*,
                          const float*, const float*) noexcept nogil
    void sb_gs2d_gather_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, double*,
                          Py_ssize_t, Py_ssize_t, int, const int32_t*, const double*,
                          const double*, const double*, const double*) noexcept nogil
    void sb_gs2d_backward_f(const float*, const float*, float*, float*, float*, Py_ssize_t,
                            Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, const Py_ssize_t*,
                            int, const int32_t*, const float*, const float*, const float*,
                            const float*, const float*, const float*,
                            const unsigned char*) noexcept nogil
    void sb_gs2d_backward_f_avx2(const float*, const float*, float*, float*, float*,
                                 Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                                 const Py_ssize_t*, int, const int32_t*, const float*,
                                 const float*, const float*, const float*, const float*,
                                 const float*, const unsigned char*) noexcept nogil
    void sb_gs2d_backward_d(const double*, const double*, double*, double*, double*,
                            Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                            const Py_ssize_t*, int, const int32_t*, const double*,
                            const double*, const double*, const double*, const double*,
                            const double*, const unsigned char*) noexcept nogil

cdef extern from "grid_block3d.h":
    enum:
        SB_GS_BLOCK  # points per block of the blocked paths
    int sb_gs3d_coords_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                         const float*, float, int, float, const float*, int, int32_t*, float*,
                         float*, float*, unsigned char*) noexcept nogil
    int sb_gs3d_coords_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                         const double*, double, int, double, const double*, int, int32_t*,
                         double*, double*, double*, unsigned char*) noexcept nogil
    void sb_gs3d_gather_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, float*,
                          Py_ssize_t, Py_ssize_t, int, const int32_t*,
                          const float*) noexcept nogil
    void sb_gs3d_gather_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                          double*, Py_ssize_t, Py_ssize_t, int, const int32_t*,
                          const double*) noexcept nogil
    void sb_gs3d_backward_f(const float*, const float*, float*, float*, Py_ssize_t, Py_ssize_t,
                            Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, const Py_ssize_t*,
                            int, const int32_t*, const float*, const float*,
                            const unsigned char*) noexcept nogil
    void sb_gs3d_backward_d(const double*, const double*, double*, double*, Py_ssize_t,
                            Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                            const Py_ssize_t*, int, const int32_t*, const double*,
                            const double*, const unsigned char*) noexcept nogil


cdef extern from "grid_simd2d.h":
    enum:
        SB_GS_CUBIC_LD  # the row pitch of the bicubic weight tables
    int sb_gs2d_cubic_coords_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float, float,
                               float, int32_t*, float*, unsigned char*) noexcept nogil
    int sb_gs2d_cubic_coords_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, double,
                               double, double, int32_t*, double*, unsigned char*) noexcept nogil
    void sb_gs2d_scalar_cubic_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float*,
                                Py_ssize_t, Py_ssize_t, const int32_t*, const float*) noexcept nogil
    void sb_gs2d_scalar_cubic_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, double*,
                                Py_ssize_t, Py_ssize_t, const int32_t*,
                                const double*) noexcept nogil
    int sb_gs2d_cubic_coords_back_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, float,
                                    float, float, int32_t*, float*, float*, float*,
                                    unsigned char*) noexcept nogil
    int sb_gs2d_cubic_coords_back_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t, double,
                                    double, double, int32_t*, double*, double*, double*,
                                    unsigned char*) noexcept nogil
    void sb_gs2d_cubic_grid_sums_f(const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                                   const float*, Py_ssize_t, Py_ssize_t, const Py_ssize_t*,
                                   const int32_t*, const float*, const float*,
                                   const unsigned char*, float*, float*, float*) noexcept nogil
    void sb_gs2d_cubic_grid_sums_d(const double*, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                                   const double*, Py_ssize_t, Py_ssize_t, const Py_ssize_t*,
                                   const int32_t*, const double*, const double*,
                                   const unsigned char*, double*, double*, double*) noexcept nogil
    int sb_gs2d_fused_f(int, const float*, const float*, float*, Py_ssize_t, Py_ssize_t,
                        Py_ssize_t, Py_ssize_t, Py_ssize_t, int, int, float, float, float, float,
                        float, float, unsigned char*, int*) noexcept nogil
    int sb_gs2d_fused_back_f(int, const float*, const float*, float*, float*, Py_ssize_t,
                             Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, const float*,
                             const Py_ssize_t*, Py_ssize_t, int, float, float, float,
                             float, float, float, unsigned char*, int*) noexcept nogil
    int sb_gs2d_keys_f(int, const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, int, float,
                       float, float, float, float, float, const int32_t*,
                       Py_ssize_t*) noexcept nogil
    int sb_gs2d_isa_available() noexcept nogil

cdef extern from "grid_simd3d.h":
    int sb_gs3d_fused_f(int, const float*, const float*, float*, Py_ssize_t, Py_ssize_t,
                        Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, int, int, const float*,
                        float, float, const float*, unsigned char*, int*) noexcept nogil
    int sb_gs3d_fused_back_f(int, const float*, const float*, float*, float*, Py_ssize_t,
                             Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                             const float*, const Py_ssize_t*, Py_ssize_t, int,
                             const float*, float, float, const float*, unsigned char*,
                             int*) noexcept nogil
    void sb_gs3d_backward_isa_f(int, const float*, const float*, float*, float*, Py_ssize_t,
                                Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                                const Py_ssize_t*, int, const int32_t*, const float*,
                                const float*, const unsigned char*) noexcept nogil
    void sb_gs3d_gather_isa_f(int, const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                              float*, Py_ssize_t, Py_ssize_t, int, const int32_t*,
                              const float*) noexcept nogil
    int sb_gs3d_coords_isa_f(int, const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                             const float*, float, int, float, const float*, int, int32_t*,
                             float*, float*, float*, unsigned char*) noexcept nogil
    int sb_gs3d_keys_f(int, const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, int,
                       const float*, float, float, const float*, const int32_t*,
                       Py_ssize_t*) noexcept nogil

cdef extern from "grid_nearest.h":
    int sb_gs_near_offsets_f(int, int, const float*, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                             Py_ssize_t, int, const float*, float, float, const float*,
                             Py_ssize_t*) noexcept nogil
    void sb_gs_near_push_f(const float*, float*, const Py_ssize_t*, Py_ssize_t, Py_ssize_t,
                           Py_ssize_t, Py_ssize_t, Py_ssize_t) noexcept nogil
    void sb_gs_near_push_d(const double*, double*, const Py_ssize_t*, Py_ssize_t, Py_ssize_t,
                           Py_ssize_t, Py_ssize_t, Py_ssize_t) noexcept nogil

cdef extern from "simd_clones.h":
    void sb_clear_upper_state() noexcept nogil


#: the batch size from which the push runs one task per sample (no slabs, no sort)
per_sample_batch = PER_SAMPLE_MIN
#: chunks of points of the push's sort (its ``cursor`` scratch: N * sort_chunks * nslabs)
sort_chunks = SORT_CHUNKS


def page_offset(cnp.ndarray a):
    """The address of ``a``'s data modulo 4096, in bytes (0.1 us; ``a.ctypes.data`` takes
    3.4): sandbox.array.grid_sample._dispatch places its outputs by it."""
    return <Py_ssize_t>(<size_t>cnp.PyArray_BYTES(a) & 4095)


def avx2_available():
    """1 when this CPU runs the AVX2 coordinate pass of the 2-D float32 blocks (``isa`` 1
    or more), else 0."""
    return sb_gs2d_avx2_available()


def isa_available():
    """The ``isa`` code of the explicit-SIMD passes this CPU runs: 2 when it has AVX-512F
    (grid_simd2d.h, grid_simd3d.h), else 0 (none: the portable loops run)."""
    return sb_gs2d_isa_available()


cdef enum:
    NEAREST = 0
    BILINEAR = 1
    BICUBIC = 2
    ZEROS = 0
    BORDER = 1
    REFLECTION = 2
    MAXTAPS = 64
    # from this batch size the push runs one task per sample, its points in their own
    # order (no slabs, no sort): a rule of the shape, so results do not depend on the
    # thread count
    PER_SAMPLE_MIN = 4
    # the push's sort of one sample's points runs in this many chunks of points
    SORT_CHUNKS = 8

# Keys' cubic convolution with A = -0.75 (PyTorch's bicubic): near for |d| <= 1,
# far for 1 < |d| < 2, and their derivatives.  The constants are A + 2, A + 3, 5A,
# 8A, 4A, 3(A + 2), 2(A + 3), 3A and 10A, in the reference's order of operations.


cdef inline real _near(real x) noexcept nogil:
    return ((<real>1.25 * x - <real>2.25) * x) * x + <real>1


cdef inline real _far(real x) noexcept nogil:
    return ((<real>-0.75 * x - <real>-3.75) * x + <real>-6.0) * x - <real>-3.0


cdef inline real _dnear(real x) noexcept nogil:
    return (<real>3.75 * x - <real>4.5) * x


cdef inline real _dfar(real x) noexcept nogil:
    return (<real>-2.25 * x - <real>-7.5) * x + <real>-6.0


cdef inline real _clip(real u, Py_ssize_t size, real* d) noexcept nogil:
    """Clip into [0, size - 1]; on and beyond the bounds the derivative is 0 (NaN -> 0)."""
    cdef real hi = <real>(size - 1)
    if not (u > 0):
        d[0] = 0
        return 0
    if u >= hi:
        d[0] = 0
        return hi
    return u


cdef inline real _reflect(real u, Py_ssize_t size, int ac, real* d) noexcept nogil:
    """Mirror u at [0, s-1] (align_corners) or [-1/2, s-1/2]; d <- +-1 (its slope)."""
    cdef real lo, span, extra, flips
    if ac:
        lo = 0
        span = <real>(size - 1)
    else:
        lo = <real>-0.5
        span = <real>size
    if span <= 0:
        d[0] = 0
        return 0
    u = u - lo
    d[0] = 1
    if u < 0:
        d[0] = -1
        u = -u
    if u < span:  # no flip (the usual case): fmod(u, span) is u
        return u + lo
    if u < 2 * span:  # one flip: fmod(u, span) is u - span, exact (Sterbenz)
        d[0] = -d[0]
        return (span - (u - span)) + lo
    extra = <real>fmod(u, span)
    flips = <real>floor(u / span)
    if fmod(flips, 2) == 0:
        return extra + lo
    d[0] = -d[0]
    return (span - extra) + lo


cdef inline real _pad(real u, Py_ssize_t size, int pad, int ac, real* d) noexcept nogil:
    """PyTorch's compute_coordinates: the padded coordinate; d <- its derivative."""
    d[0] = 1
    if pad == BORDER:
        return _clip(u, size, d)
    if pad == REFLECTION:
        u = _reflect(u, size, ac, d)
        return _clip(u, size, d)
    return u


cdef inline Py_ssize_t _index(real j, Py_ssize_t size) noexcept nogil:
    """The integer tap j, or -1 when it lies outside [0, size) (a dropped tap)."""
    if j >= 0 and j < size:
        return <Py_ssize_t>j
    return -1


cdef inline real _coord(real g, Py_ssize_t size, int pad, int ac, real* dudg) noexcept nogil:
    """The unnormalised, padded coordinate of g (nearest, bilinear); dudg <- its du/dg."""
    cdef real scale, u, d
    if ac:
        scale = <real>(size - 1) * <real>0.5
        u = (g + <real>1) * scale
    else:
        scale = <real>size * <real>0.5
        u = (g + <real>1) * scale
        u = u - <real>0.5
    u = _pad(u, size, pad, ac, &d)
    dudg[0] = d * scale
    return u


cdef inline int _axis(real g, Py_ssize_t size, int mode, int pad, int ac,
                      Py_ssize_t* idx, real* w, real* dw) noexcept nogil:
    """One axis: the taps of grid value g (index or -1, weight, d weight / d g)."""
    cdef real scale, u, base, t, s, d, tap
    cdef int k
    if mode == BICUBIC:  # taps around floor(u); padding acts on each tap's index
        if ac:
            scale = <real>(size - 1) * <real>0.5
            u = (g + <real>1) * scale
        else:
            scale = <real>size * <real>0.5
            u = (g + <real>1) * scale
            u = u - <real>0.5
        base = <real>floor(u)
        t = u - base
        s = <real>1 - t
        w[0] = _far(t + <real>1)
        w[1] = _near(t)
        w[2] = _near(s)
        w[3] = _far(s + <real>1)
        dw[0] = _dfar(t + <real>1) * scale
        dw[1] = _dnear(t) * scale
        dw[2] = -_dnear(s) * scale
        dw[3] = -_dfar(s + <real>1) * scale
        for k in range(4):
            tap = base + <real>(k - 1)
            if pad == ZEROS:
                idx[k] = _index(tap, size)
            else:
                idx[k] = <Py_ssize_t>_pad(tap, size, pad, ac, &d)
        return 4
    u = _coord(g, size, pad, ac, &d)
    if mode == NEAREST:  # round half to even (std::nearbyint)
        idx[0] = _index(<real>rint(u), size)
        w[0] = 1
        dw[0] = 0
        return 1
    base = <real>floor(u)
    t = u - base
    w[0] = <real>1 - t
    w[1] = t
    dw[0] = -d
    dw[1] = d
    idx[0] = _index(base, size)
    idx[1] = _index(base + <real>1, size)
    return 2


cdef inline int _taps(const real* gp, int nd, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
                      int mode, int pad, int ac, bint deriv,
                      Py_ssize_t* off, real* wk, real* dk) noexcept nogil:
    """The point's taps over all axes (dropped ones left out): flat offsets, weights and,
    with ``deriv``, d weight / d g_k in dk[k * MAXTAPS + tap].  Returns their count."""
    cdef Py_ssize_t ix[4]
    cdef Py_ssize_t iy[4]
    cdef Py_ssize_t iz[4]
    cdef real wx[4]
    cdef real wy[4]
    cdef real wz[4]
    cdef real dwx[4]
    cdef real dwy[4]
    cdef real dwz[4]
    cdef int kx, ky, kz, a, b, c
    cdef int n = 0
    cdef real wzy
    kx = _axis(gp[0], W, mode, pad, ac, ix, wx, dwx)
    ky = _axis(gp[1], H, mode, pad, ac, iy, wy, dwy)
    if nd == 3:
        kz = _axis(gp[2], D, mode, pad, ac, iz, wz, dwz)
    else:
        kz = 1
        iz[0] = 0
        wz[0] = 1
        dwz[0] = 0
    for a in range(kz):
        if iz[a] < 0:
            continue
        for b in range(ky):
            if iy[b] < 0:
                continue
            wzy = wz[a] * wy[b]
            for c in range(kx):
                if ix[c] < 0:
                    continue
                off[n] = (iz[a] * H + iy[b]) * W + ix[c]
                wk[n] = wzy * wx[c]
                if deriv:
                    dk[n] = wzy * dwx[c]
                    dk[MAXTAPS + n] = (wz[a] * dwy[b]) * wx[c]
                    dk[2 * MAXTAPS + n] = (dwz[a] * wy[b]) * wx[c]
                n = n + 1
    return n


# Fast paths: nearest and bilinear points whose taps are all inside the input (most
# points of a warp).  They compute the same weights as _taps, with the taps unrolled;
# any other point returns False and takes the general path.


cdef inline bint _fast_forward(const real* xn, const real* gp, real* outp, Py_ssize_t C,
                               Py_ssize_t S, Py_ssize_t P, int nd, Py_ssize_t D,
                               Py_ssize_t H, Py_ssize_t W, int mode, int pad,
                               int ac) noexcept nogil:
    cdef real ux, uy, uz, fx, fy, fz, tx, ty, tz, dd
    cdef real w[8]
    cdef Py_ssize_t o, ch, HW = H * W
    cdef const real* xp
    ux = _coord(gp[0], W, pad, ac, &dd)
    uy = _coord(gp[1], H, pad, ac, &dd)
    uz = _coord(gp[2], D, pad, ac, &dd) if nd == 3 else 0
    if mode == NEAREST:
        fx = <real>rint(ux)
        fy = <real>rint(uy)
        fz = <real>rint(uz)
        if not (fx >= 0 and fx < W and fy >= 0 and fy < H and fz >= 0 and fz < D):
            return False
        o = (<Py_ssize_t>fz * H + <Py_ssize_t>fy) * W + <Py_ssize_t>fx
        for ch in range(C):
            outp[ch * P] = xn[ch * S + o]
        return True
    fx = <real>floor(ux)
    fy = <real>floor(uy)
    fz = <real>floor(uz)
    if not (fx >= 0 and fx + <real>1 < W and fy >= 0 and fy + <real>1 < H):
        return False
    tx = ux - fx
    ty = uy - fy
    if nd == 2:
        o = <Py_ssize_t>fy * W + <Py_ssize_t>fx
        w[0] = (<real>1 - ty) * (<real>1 - tx)
        w[1] = (<real>1 - ty) * tx
        w[2] = ty * (<real>1 - tx)
        w[3] = ty * tx
        for ch in range(C):
            xp = xn + ch * S + o
            outp[ch * P] = ((w[0] * xp[0] + w[1] * xp[1]) + w[2] * xp[W]) + w[3] * xp[W + 1]
        return True
    if not (fz >= 0 and fz + <real>1 < D):
        return False
    tz = uz - fz
    o = (<Py_ssize_t>fz * H + <Py_ssize_t>fy) * W + <Py_ssize_t>fx
    w[0] = ((<real>1 - tz) * (<real>1 - ty)) * (<real>1 - tx)
    w[1] = ((<real>1 - tz) * (<real>1 - ty)) * tx
    w[2] = ((<real>1 - tz) * ty) * (<real>1 - tx)
    w[3] = ((<real>1 - tz) * ty) * tx
    w[4] = (tz * (<real>1 - ty)) * (<real>1 - tx)
    w[5] = (tz * (<real>1 - ty)) * tx
    w[6] = (tz * ty) * (<real>1 - tx)
    w[7] = (tz * ty) * tx
    for ch in range(C):
        xp = xn + ch * S + o
        outp[ch * P] = (((((((w[0] * xp[0] + w[1] * xp[1]) + w[2] * xp[W])
                            + w[3] * xp[W + 1]) + w[4] * xp[HW]) + w[5] * xp[HW + 1])
                         + w[6] * xp[HW + W]) + w[7] * xp[HW + W + 1])
    return True


cdef inline bint _fast_backward(const real* gyp, const real* xn, const real* gp, real* gxn,
                                real* ggp, Py_ssize_t C, Py_ssize_t S, Py_ssize_t P, int nd,
                                Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, int mode, int pad,
                                int ac) noexcept nogil:
    cdef real ux, uy, uz, fx, fy, fz, tx, ty, tz, sx, sy, sz, gyc, ax, ay, az
    cdef real v[8]
    cdef real w[8]
    cdef Py_ssize_t o, ch, k, HW = H * W
    cdef Py_ssize_t offs[8]
    cdef const real* xp
    cdef real* gxp
    ux = _coord(gp[0], W, pad, ac, &sx)
    uy = _coord(gp[1], H, pad, ac, &sy)
    sz = 0
    uz = _coord(gp[2], D, pad, ac, &sz) if nd == 3 else 0
    if mode == NEAREST:  # the grid gradient is zero (ggp is NULL or already zeroed)
        fx = <real>rint(ux)
        fy = <real>rint(uy)
        fz = <real>rint(uz)
        if not (fx >= 0 and fx < W and fy >= 0 and fy < H and fz >= 0 and fz < D):
            return False
        if gxn != NULL:
            o = (<Py_ssize_t>fz * H + <Py_ssize_t>fy) * W + <Py_ssize_t>fx
            for ch in range(C):
                gxn[ch * S + o] = gxn[ch * S + o] + gyp[ch * P]
        return True
    fx = <real>floor(ux)
    fy = <real>floor(uy)
    fz = <real>floor(uz)
    if not (fx >= 0 and fx + <real>1 < W and fy >= 0 and fy + <real>1 < H):
        return False
    if nd == 3 and not (fz >= 0 and fz + <real>1 < D):
        return False
    tx = ux - fx
    ty = uy - fy
    tz = uz - fz if nd == 3 else 0
    o = (<Py_ssize_t>fz * H + <Py_ssize_t>fy) * W + <Py_ssize_t>fx
    offs[0] = 0
    offs[1] = 1
    offs[2] = W
    offs[3] = W + 1
    offs[4] = HW
    offs[5] = HW + 1
    offs[6] = HW + W
    offs[7] = HW + W + 1
    w[0] = ((<real>1 - tz) * (<real>1 - ty)) * (<real>1 - tx)
    w[1] = ((<real>1 - tz) * (<real>1 - ty)) * tx
    w[2] = ((<real>1 - tz) * ty) * (<real>1 - tx)
    w[3] = ((<real>1 - tz) * ty) * tx
    w[4] = (tz * (<real>1 - ty)) * (<real>1 - tx)
    w[5] = (tz * (<real>1 - ty)) * tx
    w[6] = (tz * ty) * (<real>1 - tx)
    w[7] = (tz * ty) * tx
    ax = 0
    ay = 0
    az = 0
    for ch in range(C):
        gyc = gyp[ch * P]
        if ggp != NULL:  # d/du of the interpolant: differences along each axis
            xp = xn + ch * S + o
            if nd == 2:
                v[0] = xp[0]
                v[1] = xp[1]
                v[2] = xp[W]
                v[3] = xp[W + 1]
                ax = ax + gyc * ((<real>1 - ty) * (v[1] - v[0]) + ty * (v[3] - v[2]))
                ay = ay + gyc * ((<real>1 - tx) * (v[2] - v[0]) + tx * (v[3] - v[1]))
            else:
                for k in range(8):
                    v[k] = xp[offs[k]]
                ax = ax + gyc * ((<real>1 - tz) * ((<real>1 - ty) * (v[1] - v[0]) + ty * (v[3] - v[2]))
                                 + tz * ((<real>1 - ty) * (v[5] - v[4]) + ty * (v[7] - v[6])))
                ay = ay + gyc * ((<real>1 - tz) * ((<real>1 - tx) * (v[2] - v[0]) + tx * (v[3] - v[1]))
                                 + tz * ((<real>1 - tx) * (v[6] - v[4]) + tx * (v[7] - v[5])))
                az = az + gyc * ((<real>1 - ty) * ((<real>1 - tx) * (v[4] - v[0]) + tx * (v[5] - v[1]))
                                 + ty * ((<real>1 - tx) * (v[6] - v[2]) + tx * (v[7] - v[3])))
        if gxn != NULL:
            gxp = gxn + ch * S + o
            if nd == 2:
                gxp[0] = gxp[0] + w[0] * gyc
                gxp[1] = gxp[1] + w[1] * gyc
                gxp[W] = gxp[W] + w[2] * gyc
                gxp[W + 1] = gxp[W + 1] + w[3] * gyc
            else:
                for k in range(8):
                    gxp[offs[k]] = gxp[offs[k]] + w[k] * gyc
    if ggp != NULL:
        ggp[0] = ax * sx
        ggp[1] = ay * sy
        if nd == 3:
            ggp[2] = az * sz
    return True


cdef inline bint _cubic_taps(const real* gp, int nd, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
                             int ac, bint deriv, Py_ssize_t* o, real* w, real* kx, real* ky,
                             real* kz) noexcept nogil:
    """Bicubic points whose 16 (2-D) or 64 (3-D) taps are all inside, where the padding
    does not matter: the first tap's offset and the weights of _taps, tap (a, b, c) at
    16 a + 4 b + c (with deriv also d weight / d g_x, g_y, g_z).  False otherwise."""
    cdef Py_ssize_t ix[4]
    cdef Py_ssize_t iy[4]
    cdef Py_ssize_t iz[4]
    cdef real wx[4]
    cdef real wy[4]
    cdef real wz[4]
    cdef real dwx[4]
    cdef real dwy[4]
    cdef real dwz[4]
    cdef int a, b, c, kzn = 1, t
    cdef real wzy
    _axis(gp[0], W, BICUBIC, ZEROS, ac, ix, wx, dwx)
    _axis(gp[1], H, BICUBIC, ZEROS, ac, iy, wy, dwy)
    if ix[0] < 0 or ix[3] < 0 or iy[0] < 0 or iy[3] < 0:
        return False
    if nd == 3:
        _axis(gp[2], D, BICUBIC, ZEROS, ac, iz, wz, dwz)
        if iz[0] < 0 or iz[3] < 0:
            return False
        kzn = 4
    else:
        iz[0] = 0
        wz[0] = 1
        dwz[0] = 0
    for a in range(kzn):
        for b in range(4):
            wzy = wz[a] * wy[b]
            for c in range(4):
                t = 16 * a + 4 * b + c
                w[t] = wzy * wx[c]
                if deriv:
                    kx[t] = wzy * dwx[c]
                    ky[t] = (wz[a] * dwy[b]) * wx[c]
                    kz[t] = (dwz[a] * wy[b]) * wx[c]
    o[0] = (iz[0] * H + iy[0]) * W + ix[0]
    return True


cdef inline bint _fast_bicubic_forward(const real* xn, const real* gp, real* outp,
                                       Py_ssize_t C, Py_ssize_t S, Py_ssize_t P, int nd,
                                       Py_ssize_t D, Py_ssize_t H, Py_ssize_t W,
                                       int ac) noexcept nogil:
    """Bicubic points with every tap inside: the sums of the general path."""
    cdef real w[64]
    cdef real acc
    cdef Py_ssize_t ch, o
    cdef int a, b, c, kzn = 4 if nd == 3 else 1
    cdef const real* xp
    cdef const real* xr
    if not _cubic_taps(gp, nd, D, H, W, ac, False, &o, w, NULL, NULL, NULL):
        return False
    for ch in range(C):
        xp = xn + ch * S + o
        acc = 0
        for a in range(kzn):
            for b in range(4):
                xr = xp + a * H * W + b * W
                for c in range(4):
                    acc = acc + w[16 * a + 4 * b + c] * xr[c]
        outp[ch * P] = acc
    return True


cdef inline void _cubic_back_sums(const real* gyp, const real* xn, real* gxn, real* ggp,
                                  Py_ssize_t C, Py_ssize_t S, Py_ssize_t P, int nd,
                                  Py_ssize_t H, Py_ssize_t W, Py_ssize_t o, const real* w,
                                  const real* kx, const real* ky, const real* kz,
                                  Py_ssize_t ws) noexcept nogil:
    """The push and grid-gradient sums of a bicubic point whose taps are all inside (the
    sums of _backward_point): first tap at offset o, the weight of tap t at w[t * ws]
    and its derivatives at kx, ky, kz[t * ws] (ws = 1 for one point's taps,
    SB_GS_CUBIC_LD for a block's)."""
    cdef real gyc, v, sx, sy, sz, ax, ay, az
    cdef Py_ssize_t ch, r
    cdef int a, b, c, t, kzn = 4 if nd == 3 else 1
    cdef const real* xp
    cdef real* gxp
    ax = 0
    ay = 0
    az = 0
    for ch in range(C):
        gyc = gyp[ch * P]
        if ggp != NULL:
            xp = xn + ch * S + o
            sx = 0
            sy = 0
            sz = 0
            if nd == 2:  # no z derivative to accumulate
                for b in range(4):
                    for c in range(4):
                        t = 4 * b + c
                        v = xp[b * W + c]
                        sx = sx + kx[t * ws] * v
                        sy = sy + ky[t * ws] * v
            else:
                for a in range(4):
                    for b in range(4):
                        for c in range(4):
                            t = 16 * a + 4 * b + c
                            v = xp[(a * H + b) * W + c]
                            sx = sx + kx[t * ws] * v
                            sy = sy + ky[t * ws] * v
                            sz = sz + kz[t * ws] * v
            ax = ax + gyc * sx
            ay = ay + gyc * sy
            az = az + gyc * sz
        if gxn != NULL:
            gxp = gxn + ch * S + o
            for a in range(kzn):
                for b in range(4):
                    for c in range(4):
                        r = (a * H + b) * W + c
                        gxp[r] = gxp[r] + w[(16 * a + 4 * b + c) * ws] * gyc
    if ggp != NULL:
        ggp[0] = ax
        ggp[1] = ay
        if nd == 3:
            ggp[2] = az


cdef inline bint _fast_bicubic_backward(const real* gyp, const real* xn, const real* gp,
                                        real* gxn, real* ggp, Py_ssize_t C, Py_ssize_t S,
                                        Py_ssize_t P, int nd, Py_ssize_t D, Py_ssize_t H,
                                        Py_ssize_t W, int ac) noexcept nogil:
    """The backward twin of _fast_bicubic_forward (the sums of _backward_point)."""
    cdef real w[64]
    cdef real kx[64]
    cdef real ky[64]
    cdef real kz[64]
    cdef Py_ssize_t o
    if not _cubic_taps(gp, nd, D, H, W, ac, ggp != NULL, &o, w, kx, ky, kz):
        return False
    _cubic_back_sums(gyp, xn, gxn, ggp, C, S, P, nd, H, W, o, w, kx, ky, kz, 1)
    return True


cdef inline void _forward_point(const real* xn, const real* gp, real* outp, Py_ssize_t C,
                         Py_ssize_t S, Py_ssize_t P, int nd, Py_ssize_t D, Py_ssize_t H,
                         Py_ssize_t W, int mode, int pad, int ac) noexcept nogil:
    if mode != BICUBIC and _fast_forward(xn, gp, outp, C, S, P, nd, D, H, W, mode, pad, ac):
        return
    if mode == BICUBIC and _fast_bicubic_forward(xn, gp, outp, C, S, P, nd, D, H, W, ac):
        return
    _forward_taps(xn, gp, outp, C, S, P, nd, D, H, W, mode, pad, ac)


cdef inline void _forward_left_out(const real* xn, const real* gp, real* outp, Py_ssize_t C,
                                   Py_ssize_t S, Py_ssize_t P, int nd, Py_ssize_t D,
                                   Py_ssize_t H, Py_ssize_t W, int mode, int pad,
                                   int ac) noexcept nogil:
    """A point a nearest/bilinear block's vectorised pass left out (not ok).  Under zeros
    padding it has a tap outside, which _fast_forward refuses: straight to the taps (a
    warp's border band, where most such points lie wholly outside and sum to 0); else
    _forward_point.  (The bicubic block keeps _forward_point: through this call its
    border and reflection forwards took 1.04-1.14x the time, gcc's inlining, on the AMD
    EPYC family 25 model 1 VM.)"""
    if pad == ZEROS:
        _forward_taps(xn, gp, outp, C, S, P, nd, D, H, W, mode, pad, ac)
    else:
        _forward_point(xn, gp, outp, C, S, P, nd, D, H, W, mode, pad, ac)


cdef inline void _forward_taps(const real* xn, const real* gp, real* outp, Py_ssize_t C,
                               Py_ssize_t S, Py_ssize_t P, int nd, Py_ssize_t D,
                               Py_ssize_t H, Py_ssize_t W, int mode, int pad,
                               int ac) noexcept nogil:
    """The general path of _forward_point: every channel's sum over the point's taps."""
    cdef Py_ssize_t off[MAXTAPS]
    cdef real wk[MAXTAPS]
    cdef Py_ssize_t ch
    cdef int t, n
    cdef real acc
    cdef const real* xp
    n = _taps(gp, nd, D, H, W, mode, pad, ac, False, off, wk, NULL)
    for ch in range(C):
        xp = xn + ch * S
        acc = 0
        for t in range(n):
            acc = acc + wk[t] * xp[off[t]]
        outp[ch * P] = acc


cdef inline void _backward_point(const real* gyp, const real* xn, const real* gp, real* gxn,
                          real* ggp, Py_ssize_t C, Py_ssize_t S, Py_ssize_t P, int nd,
                          Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, int mode, int pad,
                          int ac) noexcept nogil:
    """One point: push into gxn (unless NULL) and write its grid gradient (unless NULL)."""
    cdef Py_ssize_t off[MAXTAPS]
    cdef real wk[MAXTAPS]
    cdef real dk[3 * MAXTAPS]
    cdef Py_ssize_t ch
    cdef int t, n, k
    cdef real gyc, v, sx, sy, sz
    cdef real acc[3]
    cdef const real* xp
    cdef real* gxp
    cdef bint deriv = ggp != NULL and mode != NEAREST
    if mode != BICUBIC and _fast_backward(gyp, xn, gp, gxn, ggp, C, S, P, nd, D, H, W, mode,
                                          pad, ac):
        return
    if mode == BICUBIC and _fast_bicubic_backward(gyp, xn, gp, gxn, ggp, C, S, P, nd, D, H, W,
                                                  ac):
        return
    n = _taps(gp, nd, D, H, W, mode, pad, ac, deriv, off, wk, dk)
    acc[0] = 0
    acc[1] = 0
    acc[2] = 0
    for ch in range(C):
        gyc = gyp[ch * P]
        if deriv:
            xp = xn + ch * S
            sx = 0
            sy = 0
            sz = 0
            for t in range(n):
                v = xp[off[t]]
                sx = sx + dk[t] * v
                sy = sy + dk[MAXTAPS + t] * v
                sz = sz + dk[2 * MAXTAPS + t] * v
            acc[0] = acc[0] + gyc * sx
            acc[1] = acc[1] + gyc * sy
            acc[2] = acc[2] + gyc * sz
        if gxn != NULL:
            gxp = gxn + ch * S
            for t in range(n):
                gxp[off[t]] = gxp[off[t]] + wk[t] * gyc
    if ggp != NULL:
        for k in range(nd):
            ggp[k] = acc[k]


cdef inline const real* _cptr(const real[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline real* _ptr(real[::1] a) noexcept nogil:
    return &a[0] if a.shape[0] > 0 else NULL


cdef struct Params2d:
    # unnormalisation scales, shift and reflection bounds of _coord and _reflect (2-D)
    double sx, sy, shift, lo, span_x, span_y


cdef inline Params2d _params_2d(Py_ssize_t H, Py_ssize_t W, int ac) noexcept nogil:
    cdef Params2d q
    if ac:
        q.sx = <double>(W - 1) * 0.5
        q.sy = <double>(H - 1) * 0.5
        q.shift = 0
        q.lo = 0
        q.span_x = <double>(W - 1)
        q.span_y = <double>(H - 1)
    else:
        q.sx = <double>W * 0.5
        q.sy = <double>H * 0.5
        q.shift = 0.5
        q.lo = -0.5
        q.span_x = <double>W
        q.span_y = <double>H
    return q


# The blocked paths (grid_block2d.h, grid_block3d.h) work on up to SB_GS_BLOCK points of
# one sample at a time, with their scratch on the stack in one layout for both ranks:
# off[j] is the flat offset of point j's first tap, wt[k * SB_GS_BLOCK + j] the weight
# of its corner k, ts and ds its fractions and du/dg per axis the same way, ok[j]
# whether all its taps are inside (the others get weight 0 and take the general path).

cdef inline int _coords_2d(const real* g, Py_ssize_t cnt, Py_ssize_t H, Py_ssize_t W,
                           Params2d q, int pad, int nearest, int32_t* off, real* wt, real* ts,
                           real* ds, unsigned char* ok, int isa) noexcept nogil:
    """grid_block2d.h's coordinate pass (float32 bilinear with ``isa`` >= 1: its AVX2 form,
    the same values); returns whether every point is ok."""
    if real is float:
        if isa >= 1 and not nearest:
            return sb_gs2d_coords_f_avx2(g, cnt, H, W, q.sx, q.sy, q.shift, pad, q.lo,
                                         q.span_x, q.span_y, off, wt,
                                         wt + SB_GS_BLOCK, wt + 2 * SB_GS_BLOCK,
                                         wt + 3 * SB_GS_BLOCK, ts, ts + SB_GS_BLOCK, ds,
                                         ds + SB_GS_BLOCK, ok)
        return sb_gs2d_coords_f(g, cnt, H, W, q.sx, q.sy, q.shift, pad, q.lo, q.span_x,
                                q.span_y, nearest, off, wt, wt + SB_GS_BLOCK,
                                wt + 2 * SB_GS_BLOCK, wt + 3 * SB_GS_BLOCK, ts,
                                ts + SB_GS_BLOCK, ds, ds + SB_GS_BLOCK, ok)
    else:
        return sb_gs2d_coords_d(g, cnt, H, W, q.sx, q.sy, q.shift, pad, q.lo, q.span_x,
                                q.span_y, nearest, off, wt, wt + SB_GS_BLOCK,
                                wt + 2 * SB_GS_BLOCK, wt + 3 * SB_GS_BLOCK, ts,
                                ts + SB_GS_BLOCK, ds, ds + SB_GS_BLOCK, ok)


cdef inline void _gather_2d(const real* xn, Py_ssize_t C, Py_ssize_t H, Py_ssize_t W,
                            real* outp, Py_ssize_t P, Py_ssize_t cnt, int nearest,
                            const int32_t* off, const real* wt, int isa) noexcept nogil:
    """grid_block2d.h's gather of the ok points (float32 with ``isa`` >= 1: its AVX2
    bilinear form, the same values)."""
    if real is float:
        if isa >= 1 and not nearest:
            sb_gs2d_gather_f_avx2(xn, C, H * W, W, outp, P, cnt, off, wt,
                                  wt + SB_GS_BLOCK, wt + 2 * SB_GS_BLOCK, wt + 3 * SB_GS_BLOCK)
            return
        sb_gs2d_gather_f(xn, C, H * W, W, outp, P, cnt, nearest, off, wt, wt + SB_GS_BLOCK,
                         wt + 2 * SB_GS_BLOCK, wt + 3 * SB_GS_BLOCK)
    else:
        sb_gs2d_gather_d(xn, C, H * W, W, outp, P, cnt, nearest, off, wt, wt + SB_GS_BLOCK,
                         wt + 2 * SB_GS_BLOCK, wt + 3 * SB_GS_BLOCK)


cdef inline void _push_2d(const real* xn, const real* gyn, real* gxn, real* acc, Py_ssize_t C,
                          Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, Py_ssize_t cnt,
                          const Py_ssize_t* idx, int deriv, const int32_t* off,
                          const real* wt, const real* ts, const unsigned char* ok,
                          int isa) noexcept nogil:
    """grid_block2d.h's bilinear backward of the ok points: the push, and acc (as ds) with deriv
    (float32 with ``isa`` >= 1: its AVX2 derivative sums, the same values)."""
    if real is float:
        if isa >= 1:
            sb_gs2d_backward_f_avx2(xn, gyn, gxn, acc, acc + SB_GS_BLOCK, C, H * W, W, P, cnt,
                                    idx, deriv, off, wt, wt + SB_GS_BLOCK,
                                    wt + 2 * SB_GS_BLOCK, wt + 3 * SB_GS_BLOCK, ts,
                                    ts + SB_GS_BLOCK, ok)
            return
        sb_gs2d_backward_f(xn, gyn, gxn, acc, acc + SB_GS_BLOCK, C, H * W, W, P, cnt, idx,
                           deriv, off, wt, wt + SB_GS_BLOCK, wt + 2 * SB_GS_BLOCK,
                           wt + 3 * SB_GS_BLOCK, ts, ts + SB_GS_BLOCK, ok)
    else:
        sb_gs2d_backward_d(xn, gyn, gxn, acc, acc + SB_GS_BLOCK, C, H * W, W, P, cnt, idx,
                           deriv, off, wt, wt + SB_GS_BLOCK, wt + 2 * SB_GS_BLOCK,
                           wt + 3 * SB_GS_BLOCK, ts, ts + SB_GS_BLOCK, ok)


cdef inline void _block_params(int ac, Py_ssize_t size, real* scale, real* span) noexcept nogil:
    """Unnormalisation scale and reflection span of one axis (as _coord and _reflect)."""
    if ac:
        scale[0] = <real>(size - 1) * <real>0.5
        span[0] = <real>(size - 1)
    else:
        scale[0] = <real>size * <real>0.5
        span[0] = <real>size


cdef inline void _params_3d(int ac, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, real* scale,
                            real* span, real* shift, real* lo) noexcept nogil:
    """_params_2d for x, y and z: the scale and reflection span per axis, shift and lo."""
    _block_params(ac, W, &scale[0], &span[0])
    _block_params(ac, H, &scale[1], &span[1])
    _block_params(ac, D, &scale[2], &span[2])
    shift[0] = 0 if ac else <real>0.5
    lo[0] = 0 if ac else <real>-0.5


cdef inline int _coords_3d(const real* g, Py_ssize_t cnt, Py_ssize_t D, Py_ssize_t H,
                           Py_ssize_t W, const real* scale, real shift, int pad, real lo,
                           const real* span, int nearest, int32_t* off, real* wt, real* ts,
                           real* ds, unsigned char* ok, int isa) noexcept nogil:
    """grid_block3d.h's coordinate pass (float32 with ``isa`` >= 1: grid_simd3d.h's AVX2
    pass, the same values); returns whether every point is ok."""
    if real is float:
        return sb_gs3d_coords_isa_f(isa, g, cnt, D, H, W, scale, shift, pad, lo, span, nearest,
                                    off, wt, ts, ds, ok)
    else:
        return sb_gs3d_coords_d(g, cnt, D, H, W, scale, shift, pad, lo, span, nearest, off, wt,
                                ts, ds, ok)


cdef inline void _gather_3d(const real* xn, Py_ssize_t C, Py_ssize_t S, Py_ssize_t H,
                            Py_ssize_t W, real* outp, Py_ssize_t P, Py_ssize_t cnt, int nearest,
                            const int32_t* off, const real* wt, int isa) noexcept nogil:
    """grid_block3d.h's gather of the ok points (float32 with ``isa`` >= 1: grid_simd3d.h's
    AVX2 form, the same values)."""
    if real is float:
        sb_gs3d_gather_isa_f(isa, xn, C, S, H, W, outp, P, cnt, nearest, off, wt)
    else:
        sb_gs3d_gather_d(xn, C, S, H, W, outp, P, cnt, nearest, off, wt)


cdef inline void _push_3d(const real* xn, const real* gyn, real* gxn, real* acc, Py_ssize_t C,
                          Py_ssize_t S, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P,
                          Py_ssize_t cnt, const Py_ssize_t* idx, int deriv,
                          const int32_t* off, const real* wt, const real* ts,
                          const unsigned char* ok, int isa) noexcept nogil:
    """grid_block3d.h's trilinear backward of the ok points: the push, and acc (as ds) with deriv
    (float32 with ``isa`` >= 1: grid_simd3d.h's AVX2 sums, the same values)."""
    if real is float:
        sb_gs3d_backward_isa_f(isa, xn, gyn, gxn, acc, C, S, H, W, P, cnt, idx, deriv, off, wt,
                               ts, ok)
    else:
        sb_gs3d_backward_d(xn, gyn, gxn, acc, C, S, H, W, P, cnt, idx, deriv, off, wt, ts, ok)


cdef inline void _grid_grad_block(real* ggn, const Py_ssize_t* idx, Py_ssize_t cnt, int nd,
                                  const real* acc, const real* ds,
                                  const unsigned char* ok) noexcept nogil:
    """The grid gradient of the ok points: per axis, acc (d loss / du) times du/dg."""
    cdef Py_ssize_t j
    cdef int k
    for j in range(cnt):
        if ok[j]:
            for k in range(nd):
                ggn[nd * idx[j] + k] = acc[k * SB_GS_BLOCK + j] * ds[k * SB_GS_BLOCK + j]


cdef inline void _forward_block_2d(const real* xn, const real* gp, real* outp, Py_ssize_t C,
                                   Py_ssize_t P, Py_ssize_t cnt, Py_ssize_t H, Py_ssize_t W,
                                   int mode, int pad, int ac, int isa) noexcept nogil:
    """``cnt`` <= SB_GS_BLOCK consecutive points of one sample (2-D, nearest or bilinear;
    H, W >= 2): the vectorised loops of grid_block2d.h (float32 with ``isa`` = 2:
    grid_simd2d.h's AVX-512 pass), then the general path for the points with a tap
    outside (or reflected more than once)."""
    cdef int32_t off[SB_GS_BLOCK]
    cdef real wt[4 * SB_GS_BLOCK]
    cdef real ts[2 * SB_GS_BLOCK]
    cdef real ds[2 * SB_GS_BLOCK]
    cdef unsigned char ok[SB_GS_BLOCK]
    cdef Params2d q = _params_2d(H, W, ac)
    cdef int all_ok, nearest = mode == NEAREST
    cdef bint done = False
    cdef Py_ssize_t j, ch
    if real is float:
        done = sb_gs2d_fused_f(isa, xn, gp, outp, C, H, W, P, cnt, nearest, pad, q.sx, q.sy,
                               q.shift, q.lo, q.span_x, q.span_y, ok, &all_ok)
    if not done:
        all_ok = _coords_2d(gp, cnt, H, W, q, pad, nearest, off, wt, ts, ds, ok, isa)
        _gather_2d(xn, C, H, W, outp, P, cnt, nearest, off, wt, isa)
        if not all_ok and nearest and pad == ZEROS:
            # with zeros padding a nearest point that is not ok has its one tap outside
            # (none is reflected): 0, what the general path's empty sum gives
            for j in range(cnt):
                if not ok[j]:
                    for ch in range(C):
                        outp[ch * P + j] = 0
            return
    if not all_ok:
        for j in range(cnt):
            if not ok[j]:
                _forward_left_out(xn, gp + 2 * j, outp + j, C, H * W, P, 2, 1, H, W, mode,
                                  pad, ac)


cdef inline int _cubic_coords(const real* g, Py_ssize_t cnt, Py_ssize_t H, Py_ssize_t W,
                              Params2d q, int32_t* off, real* wt, real* kx, real* ky,
                              unsigned char* ok) noexcept nogil:
    """grid_simd2d.h's bicubic coordinate pass over a block of ``cnt`` points: offsets,
    weights and ok flags, and, unless kx is NULL, the weights' derivatives kx, ky (the
    backward's pass).  Returns whether every point is ok."""
    if real is float:
        if kx == NULL:
            return sb_gs2d_cubic_coords_f(g, cnt, H, W, q.sx, q.sy, q.shift, off, wt, ok)
        return sb_gs2d_cubic_coords_back_f(g, cnt, H, W, q.sx, q.sy, q.shift, off, wt, kx, ky,
                                           ok)
    else:
        if kx == NULL:
            return sb_gs2d_cubic_coords_d(g, cnt, H, W, q.sx, q.sy, q.shift, off, wt, ok)
        return sb_gs2d_cubic_coords_back_d(g, cnt, H, W, q.sx, q.sy, q.shift, off, wt, kx, ky,
                                           ok)


cdef inline void _forward_block_2d_cubic(const real* xn, const real* gp, real* outp,
                                         Py_ssize_t C, Py_ssize_t P, Py_ssize_t cnt,
                                         Py_ssize_t H, Py_ssize_t W, int pad,
                                         int ac) noexcept nogil:
    """The bicubic twin of _forward_block_2d (H, W >= 4): the 16 weights of each point
    by grid_simd2d.h's vectorised coordinate loop, then its sums; the points with a tap
    outside take the general path (where the padding acts per tap)."""
    cdef int32_t off[SB_GS_BLOCK]
    cdef real wt[16 * SB_GS_CUBIC_LD]
    cdef unsigned char ok[SB_GS_BLOCK]
    cdef Params2d q = _params_2d(H, W, ac)
    cdef int all_ok
    cdef Py_ssize_t j
    all_ok = _cubic_coords(gp, cnt, H, W, q, off, wt, NULL, NULL, ok)
    if real is float:
        sb_gs2d_scalar_cubic_f(xn, C, H * W, W, outp, P, cnt, off, wt)
    else:
        sb_gs2d_scalar_cubic_d(xn, C, H * W, W, outp, P, cnt, off, wt)
    if not all_ok:
        for j in range(cnt):
            if not ok[j]:
                _forward_point(xn, gp + 2 * j, outp + j, C, H * W, P, 2, 1, H, W, BICUBIC,
                               pad, ac)


cdef inline void _block_points(const real* gn, const Py_ssize_t* pts, Py_ssize_t p0,
                               Py_ssize_t cnt, Py_ssize_t* idx, real* gbuf) noexcept nogil:
    """The points of a 2-D block: idx[j] = pts[j] (or p0 + j when pts is NULL) and, unless
    gbuf is NULL, their grid pairs side by side in gbuf."""
    cdef Py_ssize_t j, i
    for j in range(cnt):
        i = pts[j] if pts != NULL else p0 + j
        idx[j] = i
        if gbuf != NULL:
            gbuf[2 * j] = gn[2 * i]
            gbuf[2 * j + 1] = gn[2 * i + 1]


cdef inline void _backward_block_2d_cubic(const real* gyn, const real* xn, const real* gn,
                                          real* gxn, real* ggn, const Py_ssize_t* pts,
                                          Py_ssize_t p0, Py_ssize_t cnt, Py_ssize_t C,
                                          Py_ssize_t P, Py_ssize_t H, Py_ssize_t W, int pad,
                                          int ac) noexcept nogil:
    """The bicubic twin of _backward_block_2d (H, W >= 4): the weights and their
    derivatives by grid_simd2d.h's vectorised coordinate loop; the grid gradient of the
    points with every tap inside by its channel-by-channel sums; then point by point the
    pushes of _fast_bicubic_backward, or _backward_point for a point with a tap outside
    (where the padding acts per tap): the order, and so the values, of the per-point
    loop."""
    cdef Py_ssize_t idx[SB_GS_BLOCK]
    cdef real gbuf[2 * SB_GS_BLOCK]
    cdef int32_t off[SB_GS_BLOCK]
    cdef real wt[16 * SB_GS_CUBIC_LD]
    cdef real kx[16 * SB_GS_CUBIC_LD]
    cdef real ky[16 * SB_GS_CUBIC_LD]
    cdef unsigned char ok[SB_GS_BLOCK]
    cdef real ax[SB_GS_BLOCK]
    cdef real ay[SB_GS_BLOCK]
    cdef Params2d q = _params_2d(H, W, ac)
    cdef Py_ssize_t j, i
    _block_points(gn, pts, p0, cnt, idx, gbuf)
    if ggn == NULL:  # no grid gradient: the forward's pass (the same weights)
        _cubic_coords(gbuf, cnt, H, W, q, off, wt, NULL, NULL, ok)
    else:
        _cubic_coords(gbuf, cnt, H, W, q, off, wt, kx, ky, ok)
        if real is float:
            sb_gs2d_cubic_grid_sums_f(xn, C, H * W, W, gyn, P, cnt, idx, off, kx, ky, ok, ax,
                                      ay, ggn)
        else:
            sb_gs2d_cubic_grid_sums_d(xn, C, H * W, W, gyn, P, cnt, idx, off, kx, ky, ok, ax,
                                      ay, ggn)
    # the pushes in the block's order, so every value sums as point by point (the grid
    # gradient of the points with every tap inside is written above)
    for j in range(cnt):
        i = idx[j]
        if ok[j]:
            if gxn != NULL:
                _cubic_back_sums(gyn + i, xn, gxn, NULL, C, H * W, P, 2, H, W, off[j], wt + j,
                                 kx + j, ky + j, NULL, SB_GS_CUBIC_LD)
        else:
            _backward_point(gyn + i, xn, gn + 2 * i, gxn, NULL if ggn == NULL else ggn + 2 * i,
                            C, H * W, P, 2, 1, H, W, BICUBIC, pad, ac)


cdef inline void _backward_block_2d(const real* gyn, const real* xn, const real* gn,
                                    real* gxn, real* ggn, const Py_ssize_t* pts, Py_ssize_t p0,
                                    Py_ssize_t cnt, Py_ssize_t C, Py_ssize_t P, Py_ssize_t H,
                                    Py_ssize_t W, int mode, int pad, int ac,
                                    int isa) noexcept nogil:
    """The backward of ``cnt`` <= SB_GS_BLOCK points of one sample (2-D, bilinear, H, W >= 2;
    bicubic, H, W >= 4, goes to _backward_block_2d_cubic; nearest is _nearest_push's): points
    pts[0..cnt) of the sample, or p0 ... p0 + cnt - 1 when pts is NULL.  Pushes into gxn and writes the
    grid gradient into ggn (each unless NULL); the points with a tap outside go through
    _backward_point afterwards.  Float32 with
    ``isa`` = 2 runs grid_simd2d.h's AVX-512 pass (the same values)."""
    cdef Py_ssize_t idx[SB_GS_BLOCK]
    cdef real gbuf[2 * SB_GS_BLOCK]
    cdef int32_t off[SB_GS_BLOCK]
    cdef real wt[4 * SB_GS_BLOCK]
    cdef real ts[2 * SB_GS_BLOCK]
    cdef real ds[2 * SB_GS_BLOCK]
    cdef real acc[2 * SB_GS_BLOCK]
    cdef unsigned char ok[SB_GS_BLOCK]
    cdef Params2d q = _params_2d(H, W, ac)
    cdef int all_ok
    cdef int deriv = ggn != NULL
    cdef bint done = False
    cdef Py_ssize_t j, i
    if mode == BICUBIC:
        _backward_block_2d_cubic(gyn, xn, gn, gxn, ggn, pts, p0, cnt, C, P, H, W, pad, ac)
        return
    if real is float:
        if pts == NULL:  # consecutive points: read in place
            done = sb_gs2d_fused_back_f(isa, xn, gyn, gxn, ggn, C, H, W, P, cnt, gn + 2 * p0,
                                        NULL, p0, pad, q.sx, q.sy, q.shift, q.lo, q.span_x,
                                        q.span_y, ok, &all_ok)
    _block_points(gn, pts, p0, cnt, idx, NULL if done else gbuf)
    if real is float:
        if not done:
            done = sb_gs2d_fused_back_f(isa, xn, gyn, gxn, ggn, C, H, W, P, cnt, gbuf, idx, 0,
                                        pad, q.sx, q.sy, q.shift, q.lo, q.span_x, q.span_y, ok,
                                        &all_ok)
    if not done:
        all_ok = _coords_2d(gbuf, cnt, H, W, q, pad, 0, off, wt, ts, ds, ok, isa)
        _push_2d(xn, gyn, gxn, acc, C, H, W, P, cnt, idx, deriv, off, wt, ts, ok, isa)
        if deriv:
            _grid_grad_block(ggn, idx, cnt, 2, acc, ds, ok)
    if not all_ok:
        for j in range(cnt):
            if not ok[j]:
                _backward_point(gyn + idx[j], xn, gn + 2 * idx[j], gxn,
                                NULL if ggn == NULL else ggn + 2 * idx[j], C, H * W, P, 2, 1,
                                H, W, mode, pad, ac)


cdef inline void _forward_block_3d(const real* xn, const real* gp, real* outp, Py_ssize_t C,
                                   Py_ssize_t P, Py_ssize_t cnt, Py_ssize_t D, Py_ssize_t H,
                                   Py_ssize_t W, int mode, int pad, int ac,
                                   int isa) noexcept nogil:
    """The 3-D twin of _forward_block_2d (D, H, W >= 2; float32 with ``isa`` = 2:
    grid_simd3d.h's AVX-512 pass)."""
    cdef int32_t off[SB_GS_BLOCK]
    cdef real wt[8 * SB_GS_BLOCK]
    cdef real ts[3 * SB_GS_BLOCK]
    cdef real ds[3 * SB_GS_BLOCK]
    cdef unsigned char ok[SB_GS_BLOCK]
    cdef real scale[3]
    cdef real span[3]
    cdef real shift, lo
    cdef int all_ok, nearest = mode == NEAREST
    cdef bint done = False
    cdef Py_ssize_t j, S = D * H * W
    _params_3d(ac, D, H, W, scale, span, &shift, &lo)
    if real is float:
        done = sb_gs3d_fused_f(isa, xn, gp, outp, C, D, H, W, P, cnt, nearest, pad, scale,
                               shift, lo, span, ok, &all_ok)
    if not done:
        all_ok = _coords_3d(gp, cnt, D, H, W, scale, shift, pad, lo, span, nearest, off, wt,
                            ts, ds, ok, isa)
        _gather_3d(xn, C, S, H, W, outp, P, cnt, nearest, off, wt, isa)
    if not all_ok:
        for j in range(cnt):
            if not ok[j]:
                _forward_left_out(xn, gp + 3 * j, outp + j, C, S, P, 3, D, H, W, mode, pad, ac)


cdef inline void _backward_block_3d(const real* gyn, const real* xn, const real* gn,
                                    real* gxn, real* ggn, const Py_ssize_t* pts, Py_ssize_t p0,
                                    Py_ssize_t cnt, Py_ssize_t C, Py_ssize_t P, Py_ssize_t D,
                                    Py_ssize_t H, Py_ssize_t W, int mode, int pad,
                                    int ac, int isa) noexcept nogil:
    """The 3-D twin of _backward_block_2d (trilinear, D, H, W >= 2)."""
    cdef Py_ssize_t idx[SB_GS_BLOCK]
    cdef real gbuf[3 * SB_GS_BLOCK]
    cdef int32_t off[SB_GS_BLOCK]
    cdef real wt[8 * SB_GS_BLOCK]
    cdef real ts[3 * SB_GS_BLOCK]
    cdef real ds[3 * SB_GS_BLOCK]
    cdef real acc[3 * SB_GS_BLOCK]
    cdef unsigned char ok[SB_GS_BLOCK]
    cdef real scale[3]
    cdef real span[3]
    cdef real shift, lo
    cdef int all_ok
    cdef int deriv = ggn != NULL
    cdef bint done = False
    cdef Py_ssize_t j, q, k, S = D * H * W
    _params_3d(ac, D, H, W, scale, span, &shift, &lo)
    if real is float:
        if pts == NULL:  # consecutive points: read in place
            done = sb_gs3d_fused_back_f(isa, xn, gyn, gxn, ggn, C, D, H, W, P, cnt, gn + 3 * p0,
                                        NULL, p0, pad, scale, shift, lo, span, ok, &all_ok)
    for j in range(cnt):
        q = pts[j] if pts != NULL else p0 + j
        idx[j] = q
        if not done:
            for k in range(3):
                gbuf[3 * j + k] = gn[3 * q + k]
    if real is float:
        if not done:
            done = sb_gs3d_fused_back_f(isa, xn, gyn, gxn, ggn, C, D, H, W, P, cnt, gbuf, idx, 0,
                                        pad, scale, shift, lo, span, ok, &all_ok)
    if not done:
        all_ok = _coords_3d(gbuf, cnt, D, H, W, scale, shift, pad, lo, span, 0, off, wt, ts, ds,
                            ok, isa)
        _push_3d(xn, gyn, gxn, acc, C, S, H, W, P, cnt, idx, deriv, off, wt, ts, ok, isa)
        if deriv:
            _grid_grad_block(ggn, idx, cnt, 3, acc, ds, ok)
    if not all_ok:
        for j in range(cnt):
            if not ok[j]:
                _backward_point(gyn + idx[j], xn, gn + 3 * idx[j], gxn,
                                NULL if ggn == NULL else ggn + 3 * idx[j], C, S, P, 3, D, H, W,
                                mode, pad, ac)


def forward(const real[::1] x, const real[::1] grid, real[::1] out, Py_ssize_t N,
            Py_ssize_t C, Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, int nd,
            int mode, int pad, int ac, int nthreads, int isa=0):
    """out[n, c, p] = sum over the taps of point p of weight * x[n, c, tap].

    ``isa`` = 2 runs the 2-D nearest and bilinear float32 blocks on grid_simd2d.h's
    AVX-512 pass (at most :func:`isa_available`; 0: the portable loops); the values
    are the same."""
    cdef Py_ssize_t i, n, p
    cdef Py_ssize_t S = D * H * W
    cdef const real* xb = _cptr(x)
    cdef const real* gb = _cptr(grid)
    cdef real* ob = _ptr(out)
    cdef Py_ssize_t nb, end = 0
    cdef sb_share share
    cdef sb_share* blocks
    if N * P == 0:
        return
    sb_clear_upper_state()
    # Blocks of SB_GS_BLOCK points of one sample: each thread's static share, then the
    # rest as threads come free (work_share.h); a loop per path, so that each inlines
    # its block (one loop over all three made the bicubic blocks 1.03-1.07x slower).
    nb = (P + SB_GS_BLOCK - 1) // SB_GS_BLOCK
    sb_share_init(&share, N * nb)
    blocks = &share  # the one counter all threads take from: shared on purpose
    if nd == 2 and mode != BICUBIC and H >= 2 and W >= 2 and S < 2147483647:
        with nogil, parallel(num_threads=nthreads):
            i = 0  # private to each thread
            end = 0
            sb_share_first(blocks, &i, &end)
            while i < end or sb_share_take(blocks, &i, &end):
                n = i // nb
                p = (i - n * nb) * SB_GS_BLOCK
                _forward_block_2d(xb + n * C * S, gb + (n * P + p) * 2, ob + n * C * P + p, C,
                                  P, min(SB_GS_BLOCK, P - p), H, W, mode, pad, ac, isa)
                i = i + 1
        return
    if nd == 2 and mode == BICUBIC and H >= 4 and W >= 4 and S < 2147483647:
        with nogil, parallel(num_threads=nthreads):
            i = 0
            end = 0
            sb_share_first(blocks, &i, &end)
            while i < end or sb_share_take(blocks, &i, &end):
                n = i // nb
                p = (i - n * nb) * SB_GS_BLOCK
                _forward_block_2d_cubic(xb + n * C * S, gb + (n * P + p) * 2,
                                        ob + n * C * P + p, C, P, min(SB_GS_BLOCK, P - p), H,
                                        W, pad, ac)
                i = i + 1
        return
    if nd == 3 and mode != BICUBIC and D >= 2 and H >= 2 and W >= 2 and S < 2147483647:
        with nogil, parallel(num_threads=nthreads):
            i = 0
            end = 0
            sb_share_first(blocks, &i, &end)
            while i < end or sb_share_take(blocks, &i, &end):
                n = i // nb
                p = (i - n * nb) * SB_GS_BLOCK
                _forward_block_3d(xb + n * C * S, gb + (n * P + p) * 3, ob + n * C * P + p, C,
                                  P, min(SB_GS_BLOCK, P - p), D, H, W, mode, pad, ac, isa)
                i = i + 1
        return
    with nogil:
        for i in prange(N * P, schedule="static", num_threads=nthreads):
            n = i // P
            p = i - n * P
            _forward_point(xb + n * C * S, gb + i * nd, ob + n * C * P + p, C, S, P, nd,
                           D, H, W, mode, pad, ac)


cdef inline Py_ssize_t _chunk_start(Py_ssize_t P, Py_ssize_t c) noexcept nogil:
    """The first point of chunk c of the push's sort (c = SORT_CHUNKS: P)."""
    return (P * c) // SORT_CHUNKS


cdef inline Py_ssize_t _min_row(const real* gp, int nd, Py_ssize_t D, Py_ssize_t H, int mode,
                                int pad, int ac) noexcept nogil:
    """The lowest row (2-D) or plane (3-D) any tap of the point touches, or -1 for none.

    Every tap lies within 3 rows of it: the taps are at most 4 consecutive integers,
    and clipping and reflecting never move two of them further apart."""
    cdef Py_ssize_t idx[4]
    cdef real w[4]
    cdef real dw[4]
    cdef int n, k
    cdef Py_ssize_t m = -1
    if nd == 3:
        n = _axis(gp[2], D, mode, pad, ac, idx, w, dw)
    else:
        n = _axis(gp[1], H, mode, pad, ac, idx, w, dw)
    for k in range(n):
        if idx[k] >= 0 and (m < 0 or idx[k] < m):
            m = idx[k]
    return m


cdef inline Py_ssize_t _nearest_offset(const real* gp, int nd, Py_ssize_t D, Py_ssize_t H,
                                       Py_ssize_t W, int pad, int ac) noexcept nogil:
    """The flat offset of a nearest point's one tap in its channel plane, -1 for none."""
    cdef Py_ssize_t ix, iy, iz = 0
    cdef real w, dw
    _axis(gp[0], W, NEAREST, pad, ac, &ix, &w, &dw)
    _axis(gp[1], H, NEAREST, pad, ac, &iy, &w, &dw)
    if nd == 3:
        _axis(gp[2], D, NEAREST, pad, ac, &iz, &w, &dw)
    if ix < 0 or iy < 0 or iz < 0:
        return -1
    return (iz * H + iy) * W + ix


cdef void _nearest_push(const real* gyb, const real* gb, real* gxb, real* ggb,
                        Py_ssize_t* offs, Py_ssize_t N, Py_ssize_t C, Py_ssize_t D,
                        Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, int nd, int pad, int ac,
                        int nthreads, int isa, bint zero) noexcept nogil:
    """The nearest push: each point's tap offset first (``offs``, N * P; and its zero
    grid gradient in ``ggb`` unless NULL), then tasks of (sample, range of values), as
    many ranges per sample as make the tasks a multiple of the threads (one when the
    batch alone does), each pushing the points whose tap falls in its range, of every
    channel (zeroed first when ``zero``), in point order (grid_nearest.h's
    sb_gs_near_push).  A nearest point has one tap, so each value sums its points in
    point order for any cut: the bits of one whole push, and of the slab path."""
    cdef Py_ssize_t i, n, p, j, cnt, t, k, c, lo_v, hi_v
    cdef int found
    cdef Py_ssize_t nb = (P + SB_GS_BLOCK - 1) // SB_GS_BLOCK
    cdef Py_ssize_t S = D * H * W
    cdef Py_ssize_t parts, a = N, b = nthreads
    cdef float scale[3]
    cdef float span[3]
    cdef float shift, lo
    cdef real* gxp
    while b:  # a = gcd(N, nthreads)
        a, b = b, a % b
    parts = nthreads // a  # the smallest count that makes N * parts a multiple of nthreads
    _params_3d(ac, D, H, W, scale, span, &shift, &lo)
    for i in prange(N * nb, schedule="static", num_threads=nthreads):
        n = i // nb
        p = (i - n * nb) * SB_GS_BLOCK
        cnt = min(SB_GS_BLOCK, P - p)
        if ggb != NULL:
            memset(ggb + (n * P + p) * nd, 0, cnt * nd * sizeof(real))
        if real is float:
            found = sb_gs_near_offsets_f(isa, nd, <const float*>gb + (n * P + p) * nd, cnt, D,
                                         H, W, pad, scale, shift, lo, span, &offs[n * P + p])
            if found == 2:  # some points reflected more than once: the general rules
                for j in range(n * P + p, n * P + p + cnt):
                    if offs[j] == -2:
                        offs[j] = _nearest_offset(gb + j * nd, nd, D, H, W, pad, ac)
            if found:
                continue
        for j in range(n * P + p, n * P + p + cnt):
            offs[j] = _nearest_offset(gb + j * nd, nd, D, H, W, pad, ac)
    for t in prange(N * parts, schedule="static", num_threads=nthreads):
        n = t // parts
        k = t - n * parts
        lo_v = k * S // parts
        hi_v = (k + 1) * S // parts
        gxp = gxb + n * C * S
        if zero:
            for c in range(C):
                memset(gxp + c * S + lo_v, 0, (hi_v - lo_v) * sizeof(real))
        if real is float:
            sb_gs_near_push_f(gyb + n * C * P, gxp, &offs[n * P], C, P, S, lo_v, hi_v)
        else:
            sb_gs_near_push_d(gyb + n * C * P, gxp, &offs[n * P], C, P, S, lo_v, hi_v)


def backward(const real[::1] gy, const real[::1] x, const real[::1] grid, real[::1] gx,
             real[::1] gg, Py_ssize_t[::1] keys, Py_ssize_t[::1] order,
             Py_ssize_t[::1] starts, Py_ssize_t[::1] cursor, Py_ssize_t N, Py_ssize_t C,
             Py_ssize_t D, Py_ssize_t H, Py_ssize_t W, Py_ssize_t P, int nd, int mode, int pad,
             int ac, Py_ssize_t slab, Py_ssize_t nslabs, int nthreads,
             const int32_t[::1] slab_of_row=None, int isa=0, bint zero_gx=False):
    """Push gy into gx (if gx is not empty) and write the grid gradient gg (if not empty).

    gx (N*C*S) must be zeroed by the caller, or ``zero_gx`` has the kernel zero it (each
    plane on the thread that pushes into it where it can); gg (N*P*nd) must be zeroed
    by the caller, except for nearest, whose zero grid gradient the kernel writes.  A
    nearest push runs tasks of (sample, range of values) on its points' tap offsets
    (``keys``, N * P; see _nearest_push).  Otherwise a batch of at least
    PER_SAMPLE_MIN samples runs one task per sample, pushing its points in their order.
    A smaller one shares each sample among the threads: the push owns input slabs: rows (2-D) or planes (3-D) are cut into ``nslabs`` slabs of ``slab >= 4``;
    each point belongs to the slab of the lowest row its taps touch (``keys``; a
    stable counting sort per sample fills ``order`` and ``starts``, with ``cursor``,
    N * SORT_CHUNKS * nslabs, as scratch), so a slab's points write only its rows and the 3 rows after it.  Even
    slabs run in parallel, then odd ones: no two concurrent slabs touch the same
    value, and each value sums its contributions in the same order for any thread
    count.  The grid gradient of each point is computed in the same visit.

    ``isa`` = 2 runs the 2-D float32 nearest/bilinear blocks and keys on grid_simd2d.h's
    AVX-512 passes, ``isa`` = 1 the keys on grid_avx2.h's (2-D and 3-D), the keys through
    ``slab_of_row`` (H entries, or D in 3-D: row // slab); the values are the same.
    """
    cdef Py_ssize_t i, n, p, k, j, it, half, phase
    cdef Py_ssize_t S = D * H * W
    cdef Py_ssize_t CS = C * S
    cdef const real* gyb = _cptr(gy)
    cdef const real* xb = _cptr(x)
    cdef const real* gb = _cptr(grid)
    cdef real* gxb = _ptr(gx)
    cdef real* ggb = _ptr(gg)
    cdef Py_ssize_t* st
    cdef Py_ssize_t* cur
    cdef Py_ssize_t m, nb, cnt
    cdef bint blocked = (H >= 2 and W >= 2 and S < 2147483647 and P < 2147483647
                         and (nd == 2 or D >= 2)
                         and (mode != BICUBIC or (nd == 2 and H >= 4 and W >= 4)))
    cdef bint simd_keys = (real is float and isa >= 1 and blocked and mode != BICUBIC
                           and slab_of_row is not None
                           and slab_of_row.shape[0] == (H if nd == 2 else D))
    cdef const int32_t* rows = &slab_of_row[0] if simd_keys else NULL
    cdef Params2d q = _params_2d(H, W, ac)
    cdef float scale3[3]
    cdef float span3[3]
    cdef float shift3, lo3
    if N * P == 0:
        return
    _params_3d(ac, D, H, W, scale3, span3, &shift3, &lo3)
    sb_clear_upper_state()
    if mode == NEAREST and gxb != NULL:  # the push by ranges of values, on tap offsets
        with nogil:
            _nearest_push(gyb, gb, gxb, ggb, &keys[0], N, C, D, H, W, P, nd, pad, ac,
                          nthreads, isa if blocked else 0, zero_gx)
        return
    if mode == NEAREST:  # no push: the grid gradient alone, zero
        if ggb != NULL:
            with nogil:
                for it in prange(N * nd, schedule="static", num_threads=nthreads):
                    memset(ggb + it * P, 0, P * sizeof(real))
        return
    if gxb == NULL and blocked:  # grid gradient only, by blocks of points
        nb = (P + SB_GS_BLOCK - 1) // SB_GS_BLOCK
        with nogil:
            for i in prange(N * nb, schedule="static", num_threads=nthreads):
                n = i // nb
                p = (i - n * nb) * SB_GS_BLOCK
                if nd == 2:
                    _backward_block_2d(gyb + n * C * P, xb + n * CS, gb + n * P * 2, NULL,
                                       ggb + n * P * 2, NULL, p, min(SB_GS_BLOCK, P - p), C, P,
                                       H, W, mode, pad, ac, isa)
                else:
                    _backward_block_3d(gyb + n * C * P, xb + n * CS, gb + n * P * 3, NULL,
                                       ggb + n * P * 3, NULL, p, min(SB_GS_BLOCK, P - p), C, P,
                                       D, H, W, mode, pad, ac, isa)
        return
    if gxb == NULL:  # grid gradient only: one iteration per point
        with nogil:
            for i in prange(N * P, schedule="static", num_threads=nthreads):
                n = i // P
                p = i - n * P
                _backward_point(gyb + n * C * P + p, xb + n * CS, gb + i * nd, NULL,
                                ggb + i * nd, C, S, P, nd, D, H, W, mode, pad, ac)
        return
    if zero_gx:  # a plane per task, before any push
        with nogil:
            for it in prange(N * C, schedule="static", num_threads=nthreads):
                memset(gxb + it * S, 0, S * sizeof(real))
    if N >= PER_SAMPLE_MIN:  # a batch: one task per sample, its points in their order
        nb = (P + SB_GS_BLOCK - 1) // SB_GS_BLOCK
        with nogil:
            for n in prange(N, schedule="static", num_threads=nthreads):
                if blocked:
                    for it in range(nb):
                        p = it * SB_GS_BLOCK
                        if nd == 2:
                            _backward_block_2d(gyb + n * C * P, xb + n * CS, gb + n * P * 2,
                                               gxb + n * CS,
                                               NULL if ggb == NULL else ggb + n * P * 2, NULL,
                                               p, min(SB_GS_BLOCK, P - p), C, P, H, W, mode,
                                               pad, ac, isa)
                        else:
                            _backward_block_3d(gyb + n * C * P, xb + n * CS, gb + n * P * 3,
                                               gxb + n * CS,
                                               NULL if ggb == NULL else ggb + n * P * 3, NULL,
                                               p, min(SB_GS_BLOCK, P - p), C, P, D, H, W, mode,
                                               pad, ac, isa)
                else:
                    for p in range(P):
                        _backward_point(gyb + n * C * P + p, xb + n * CS, gb + (n * P + p) * nd,
                                        gxb + n * CS,
                                        NULL if ggb == NULL else ggb + (n * P + p) * nd,
                                        C, S, P, nd, D, H, W, mode, pad, ac)
        return
    with nogil:
        if simd_keys:  # by blocks of points; the far-reflected ones (-2) point by point
            nb = (P + SB_GS_BLOCK - 1) // SB_GS_BLOCK
            for i in prange(N * nb, schedule="static", num_threads=nthreads):
                n = i // nb
                p = (i - n * nb) * SB_GS_BLOCK
                cnt = min(SB_GS_BLOCK, P - p)
                if nd == 2:
                    sb_gs2d_keys_f(isa, <const float*>gb + (n * P + p) * 2, cnt, H, W, pad,
                                   q.sx, q.sy, q.shift, q.lo, q.span_x, q.span_y, rows,
                                   &keys[n * P + p])
                else:
                    sb_gs3d_keys_f(isa, <const float*>gb + (n * P + p) * 3, cnt, D, H, W, pad,
                                   scale3, shift3, lo3, span3, rows, &keys[n * P + p])
                for j in range(n * P + p, n * P + p + cnt):
                    if keys[j] == -2:
                        m = _min_row(gb + j * nd, nd, D, H, mode, pad, ac)
                        keys[j] = m // slab if m >= 0 else -1
        else:
            for i in prange(N * P, schedule="static", num_threads=nthreads):
                m = _min_row(gb + i * nd, nd, D, H, mode, pad, ac)
                keys[i] = m // slab if m >= 0 else -1
        # A stable counting sort of each sample's points by key, in SORT_CHUNKS chunks
        # of points at once: counts per (chunk, slab), then one scan per sample (slab
        # by slab, chunk by chunk) turns them into each chunk's write cursors, then
        # every chunk places its points.  The order is the one a serial stable sort
        # gives, for any thread count.
        for it in prange(N * SORT_CHUNKS, schedule="static", num_threads=nthreads):
            n = it // SORT_CHUNKS
            cur = &cursor[it * nslabs]
            for k in range(nslabs):
                cur[k] = 0
            for p in range(_chunk_start(P, it - n * SORT_CHUNKS),
                           _chunk_start(P, it - n * SORT_CHUNKS + 1)):
                k = keys[n * P + p]
                if k >= 0:
                    cur[k] = cur[k] + 1
        for n in prange(N, schedule="static", num_threads=nthreads):
            st = &starts[n * (nslabs + 1)]
            m = 0
            for k in range(nslabs):
                st[k] = m
                for j in range(SORT_CHUNKS):
                    cur = &cursor[(n * SORT_CHUNKS + j) * nslabs]
                    cnt = cur[k]
                    cur[k] = m
                    m = m + cnt
            st[nslabs] = m
        for it in prange(N * SORT_CHUNKS, schedule="static", num_threads=nthreads):
            n = it // SORT_CHUNKS
            cur = &cursor[it * nslabs]
            for p in range(_chunk_start(P, it - n * SORT_CHUNKS),
                           _chunk_start(P, it - n * SORT_CHUNKS + 1)):
                k = keys[n * P + p]
                if k >= 0:
                    order[n * P + cur[k]] = p
                    cur[k] = cur[k] + 1
        for phase in range(2):
            half = (nslabs - phase + 1) // 2
            for it in prange(N * half, schedule="static", num_threads=nthreads):
                n = it // half
                k = 2 * (it - n * half) + phase
                st = &starts[n * (nslabs + 1)]
                if blocked:
                    j = st[k]
                    while j < st[k + 1]:
                        cnt = min(SB_GS_BLOCK, st[k + 1] - j)
                        if nd == 2:
                            _backward_block_2d(gyb + n * C * P, xb + n * CS, gb + n * P * 2,
                                               gxb + n * CS,
                                               NULL if ggb == NULL else ggb + n * P * 2,
                                               &order[n * P + j], 0, cnt, C, P, H, W, mode, pad,
                                               ac, isa)
                        else:
                            _backward_block_3d(gyb + n * C * P, xb + n * CS, gb + n * P * 3,
                                               gxb + n * CS,
                                               NULL if ggb == NULL else ggb + n * P * 3,
                                               &order[n * P + j], 0, cnt, C, P, D, H, W, mode,
                                               pad, ac, isa)
                        j = j + cnt
                    continue
                for j in range(st[k], st[k + 1]):
                    p = order[n * P + j]
                    _backward_point(gyb + n * C * P + p, xb + n * CS, gb + (n * P + p) * nd,
                                    gxb + n * CS,
                                    NULL if ggb == NULL else ggb + (n * P + p) * nd,
                                    C, S, P, nd, D, H, W, mode, pad, ac)
