# Normalisation kernels: per-channel moments and fused per-channel affine passes.
# See pyx/fused.pxd for the kernel contract (no validation, const C-contiguous
# inputs, nogil prange with a Python-computed thread count, every iteration
# writes only its own output -> bitwise identical for any thread count).
#
# Arrays are viewed as (N, C, L): batch norm reduces each channel c over N and L;
# group norm views its input as (1, N*G, L') so that the same kernels reduce
# each (sample, group).  Sums accumulate in double (PyTorch's CPU accumulation
# type for float32), with four (sums) or eight (squares, products) partial sums
# to break the add dependency chain.

from cython.parallel cimport parallel, prange
from libc.stdlib cimport free, malloc
from fused cimport real


cdef inline double _sum(const real* p, Py_ssize_t n) noexcept nogil:
    cdef double s0 = 0, s1 = 0, s2 = 0, s3 = 0
    cdef Py_ssize_t i = 0
    while i + 3 < n:
        s0 += p[i]
        s1 += p[i + 1]
        s2 += p[i + 2]
        s3 += p[i + 3]
        i += 4
    while i < n:
        s0 += p[i]
        i += 1
    return (s0 + s1) + (s2 + s3)


cdef inline double _sq_dev(const real* p, Py_ssize_t n, double mu) noexcept nogil:
    """sum((p - mu)**2), eight partial sums (the add latency bounds fewer)."""
    cdef double s[8]
    cdef double d
    cdef Py_ssize_t i = 0
    cdef int j
    for j in range(8):
        s[j] = 0
    while i + 7 < n:
        for j in range(8):
            d = p[i + j] - mu
            s[j] += d * d
        i += 8
    while i < n:
        d = p[i] - mu
        s[0] += d * d
        i += 1
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


cdef inline double _dot(const real* a, const real* b, Py_ssize_t n) noexcept nogil:
    """sum(a * b) in double, eight partial sums."""
    cdef double s[8]
    cdef Py_ssize_t i = 0
    cdef int j
    for j in range(8):
        s[j] = 0
    while i + 7 < n:
        for j in range(8):
            s[j] += <double> a[i + j] * b[i + j]
        i += 8
    while i < n:
        s[0] += <double> a[i] * b[i]
        i += 1
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))


def channel_moments(const real[:, :, ::1] x, double[::1] mean, double[::1] var,
                    int num_threads):
    """Per-channel mean and biased variance of ``x`` (N, C, L), two passes, parallel over C."""
    cdef Py_ssize_t n_batch = x.shape[0], n_chan = x.shape[1], length = x.shape[2]
    cdef Py_ssize_t c, n
    cdef double s, mu, count = <double> (n_batch * length)
    with nogil:
        for c in prange(n_chan, schedule="static", num_threads=num_threads):
            s = 0
            for n in range(n_batch):
                s = s + _sum(&x[n, c, 0], length)
            mu = s / count
            s = 0
            for n in range(n_batch):
                s = s + _sq_dev(&x[n, c, 0], length, mu)
            mean[c] = mu
            var[c] = s / count


def channel_sums(const real[:, :, ::1] g, const real[:, :, ::1] x, double[::1] sum_g,
                 double[::1] sum_gx, int num_threads):
    """Per-channel ``sum(g)`` and ``sum(g * x)`` of (N, C, L) arrays, parallel over C."""
    cdef Py_ssize_t n_batch = g.shape[0], n_chan = g.shape[1], length = g.shape[2]
    cdef Py_ssize_t c, n
    cdef double sg, sgx
    with nogil:
        for c in prange(n_chan, schedule="static", num_threads=num_threads):
            sg = 0
            sgx = 0
            for n in range(n_batch):
                sg = sg + _sum(&g[n, c, 0], length)
                sgx = sgx + _dot(&g[n, c, 0], &x[n, c, 0], length)
            sum_g[c] = sg
            sum_gx[c] = sgx


def affine(const real[:, :, ::1] x, const real[::1] scale, const real[::1] shift,
           real[:, :, ::1] out, int num_threads):
    """``out[n, c, l] = x[n, c, l] * scale[c] + shift[c]``, parallel over (n, c) planes."""
    cdef Py_ssize_t n_chan = x.shape[1], length = x.shape[2]
    cdef Py_ssize_t plane, n, c, i
    cdef real a, b
    cdef const real* src
    cdef real* dst
    with nogil:
        for plane in prange(x.shape[0] * n_chan, schedule="static", num_threads=num_threads):
            n = plane // n_chan
            c = plane - n * n_chan
            a = scale[c]
            b = shift[c]
            src = &x[n, c, 0]
            dst = &out[n, c, 0]
            for i in range(length):
                dst[i] = src[i] * a + b


def affine2(const real[:, :, ::1] g, const real[:, :, ::1] x, const real[::1] a,
            const real[::1] b, const real[::1] shift, real[:, :, ::1] out, int num_threads):
    """``out = a[c] * g + b[c] * x + shift[c]`` (the batch-norm input gradient), per plane."""
    cdef Py_ssize_t n_chan = g.shape[1], length = g.shape[2]
    cdef Py_ssize_t plane, n, c, i
    cdef real ac, bc, sc
    cdef const real* gp
    cdef const real* xp
    cdef real* dst
    with nogil:
        for plane in prange(g.shape[0] * n_chan, schedule="static", num_threads=num_threads):
            n = plane // n_chan
            c = plane - n * n_chan
            ac = a[c]
            bc = b[c]
            sc = shift[c]
            gp = &g[n, c, 0]
            xp = &x[n, c, 0]
            dst = &out[n, c, 0]
            for i in range(length):
                dst[i] = ac * gp[i] + bc * xp[i] + sc


# ---------------------------------------------------------------- batch norm + ReLU
#
# The fused kernels compute exactly what the unfused sequence computes (affine,
# then max(., 0); ReLU backward as g * (y > 0), then the sums and affine2 above),
# with the same accumulation order, so the results are bitwise identical to it.
# The mask is a multiplication, not a branch: about half the signs are random,
# and a mispredicted branch per element made the backward several times slower.


def affine_relu(const real[:, :, ::1] x, const real[::1] scale, const real[::1] shift,
                real[:, :, ::1] out, int num_threads):
    """``out = max(x * scale[c] + shift[c], 0)`` (NaN propagates), parallel over planes."""
    cdef Py_ssize_t n_chan = x.shape[1], length = x.shape[2]
    cdef Py_ssize_t plane, n, c, i
    cdef real a, b, v
    cdef const real* src
    cdef real* dst
    with nogil:
        for plane in prange(x.shape[0] * n_chan, schedule="static", num_threads=num_threads):
            n = plane // n_chan
            c = plane - n * n_chan
            a = scale[c]
            b = shift[c]
            src = &x[n, c, 0]
            dst = &out[n, c, 0]
            for i in range(length):
                v = src[i] * a + b
                dst[i] = 0 if v < 0 else v


cdef inline void _mask(const real* g, const real* y, real* out, Py_ssize_t n) noexcept nogil:
    """``out = g * (y > 0)``: vector compares and ANDs (see -fno-trapping-math in setup.py)."""
    cdef Py_ssize_t i
    for i in range(n):
        out[i] = g[i] * <real> (y[i] > 0)


def masked_channel_sums(const real[:, :, ::1] g, const real[:, :, ::1] x,
                        const real[:, :, ::1] y, double[::1] sum_g, double[::1] sum_gx,
                        int num_threads):
    """Per-channel ``sum(gm)`` and ``sum(gm * x)``, ``gm = g * (y > 0)``, parallel over C.

    Each (n, c) plane of ``gm`` goes through a per-thread buffer (never a whole
    array), then the same ``_sum`` and ``_dot`` as :func:`channel_sums`.
    """
    cdef Py_ssize_t n_batch = g.shape[0], n_chan = g.shape[1], length = g.shape[2]
    cdef Py_ssize_t c, n
    cdef double sg, sgx
    cdef real* buf
    with nogil, parallel(num_threads=num_threads):
        buf = <real*> malloc(length * sizeof(real))
        for c in prange(n_chan, schedule="static"):
            sg = 0
            sgx = 0
            for n in range(n_batch):
                _mask(&g[n, c, 0], &y[n, c, 0], buf, length)
                sg = sg + _sum(buf, length)
                sgx = sgx + _dot(buf, &x[n, c, 0], length)
            sum_g[c] = sg
            sum_gx[c] = sgx
        free(buf)


def masked_affine2(const real[:, :, ::1] g, const real[:, :, ::1] x, const real[:, :, ::1] y,
                   const real[::1] a, const real[::1] b, const real[::1] shift,
                   real[:, :, ::1] out, int num_threads):
    """``out = a[c] * gm + b[c] * x + shift[c]`` with ``gm = g * (y > 0)``, per plane."""
    cdef Py_ssize_t n_chan = g.shape[1], length = g.shape[2]
    cdef Py_ssize_t plane, n, c, i
    cdef real ac, bc, sc, gm
    cdef const real* gp
    cdef const real* xp
    cdef const real* yp
    cdef real* dst
    with nogil:
        for plane in prange(g.shape[0] * n_chan, schedule="static", num_threads=num_threads):
            n = plane // n_chan
            c = plane - n * n_chan
            ac = a[c]
            bc = b[c]
            sc = shift[c]
            gp = &g[n, c, 0]
            xp = &x[n, c, 0]
            yp = &y[n, c, 0]
            dst = &out[n, c, 0]
            for i in range(length):
                gm = gp[i] * <real> (yp[i] > 0)
                dst[i] = ac * gm + bc * xp[i] + sc
