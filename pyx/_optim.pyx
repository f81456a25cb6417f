# Optimiser kernels: one pass over a parameter and its state instead of a dozen
# numpy passes and temporaries.  See pyx/fused.pxd for the kernel contract.
#
# adam_step replays, element by element and in the same floating-point type,
# exactly the numpy operations of sandbox.optim.Adam.step (every Python scalar is
# rounded to the array's type first, as numpy does with a Python float), so the
# two paths give bitwise identical parameters and moments.  setup.py compiles
# this file with -ffp-contract=off: a fused multiply-add would round differently.

from cython.parallel cimport prange
from libc.math cimport sqrt, sqrtf
from fused cimport real


cdef inline real _sqrt(real a) noexcept nogil:
    if real is float:
        return sqrtf(a)
    else:
        return sqrt(a)


def adam_step(real[::1] p, const real[::1] grad, real[::1] m, real[::1] v, double beta1,
              double beta2, double step_size, double bias_correction2_sqrt, double eps,
              double weight_decay, bint decoupled, bint maximize, int num_threads):
    """One Adam (or AdamW when ``decoupled``) update of flat arrays, in place.

    Per element::

        p = p * (1 - lr*wd)                      (decoupled, wd != 0; caller passes lr*wd)
        g = -grad if maximize else grad;  g = g + wd * p   (L2, wd != 0)
        m = m + (1 - beta1) * (g - m)
        v = v * beta2;  v = v + ((1 - beta2) * g) * g
        p = p - step_size * (m / (sqrt(v) / bias_correction2_sqrt + eps))

    With ``decoupled`` the ``weight_decay`` argument is ``lr * wd``.
    """
    cdef Py_ssize_t i, n = p.shape[0]
    cdef real b1c = <real> (1 - beta1), b2 = <real> beta2, b2c = <real> (1 - beta2)
    cdef real lr_t = <real> step_size, bc2 = <real> bias_correction2_sqrt, e = <real> eps
    cdef real wd = <real> weight_decay, decay = <real> (1 - weight_decay)
    cdef bint use_l2 = weight_decay != 0 and not decoupled
    cdef bint use_decay = weight_decay != 0 and decoupled
    cdef real g, mi, vi, pi
    with nogil:
        for i in prange(n, schedule="static", num_threads=num_threads):
            pi = p[i]
            if use_decay:
                pi = pi * decay
            g = -grad[i] if maximize else grad[i]
            if use_l2:
                g = g + wd * pi
            mi = m[i]
            mi = mi + b1c * (g - mi)
            vi = v[i] * b2
            vi = vi + (b2c * g) * g
            m[i] = mi
            v[i] = vi
            p[i] = pi - lr_t * (mi / (_sqrt(vi) / bc2 + e))
