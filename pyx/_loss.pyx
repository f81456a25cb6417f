# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Cross-entropy with class-index targets (sandbox/functional/_loss.py): the two steps
# numpy has no fast form for, picking each element's target class along the class
# axis and the gradient that differs at it.  The exponentials stay numpy's (its
# vectorised exp).  Kernel contract: pyx/fused.pxd; every (n, p) element is one
# iteration's, so results do not depend on the thread count.  setup.py compiles this
# file with -ffp-contract=off: the gradient's s - prob * s must round as numpy's
# separate multiply and subtract.

from cython.parallel cimport prange

from fused cimport real

cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from *:
    """
    /* One block of points of one sample: out[c, p] = s[p] - prob[c, p] * s[p] where
     * t[p] == c, else -(prob[c, p] * s[p]); rows of the classes are ``stride`` apart.
     * Every class row first (a plain vector loop), then the target entries again. */
    #define SB_XENT_GRAD(T, S)                                                          \
    SB_CLONES static void sb_xent_grad_##S(const T* restrict prob,                      \
            const Py_ssize_t* restrict t, const T* restrict s, T* restrict out,         \
            Py_ssize_t classes, Py_ssize_t stride, Py_ssize_t len) {                    \
        for (Py_ssize_t c = 0; c < classes; c++) {                                      \
            const T* restrict pc = prob + c * stride;                                   \
            T* restrict oc = out + c * stride;                                          \
            for (Py_ssize_t p = 0; p < len; p++) oc[p] = -(pc[p] * s[p]);               \
        }                                                                               \
        for (Py_ssize_t p = 0; p < len; p++) {                                          \
            Py_ssize_t k = t[p] * stride + p;                                           \
            out[k] = s[p] - prob[k] * s[p]; } }
    SB_XENT_GRAD(float, f)
    SB_XENT_GRAD(double, d)
    """
    void sb_xent_grad_f(const float* prob, const Py_ssize_t* t, const float* s, float* out,
                        Py_ssize_t classes, Py_ssize_t stride, Py_ssize_t len) noexcept nogil
    void sb_xent_grad_d(const double* prob, const Py_ssize_t* t, const double* s,
                        double* out, Py_ssize_t classes, Py_ssize_t stride,
                        Py_ssize_t len) noexcept nogil


cdef enum:
    BLOCK = 2048  # points per parallel iteration: a batch of one still splits


def take_classes(const real[:, :, ::1] x, const Py_ssize_t[:, ::1] t, real[:, ::1] out,
                 int num_threads):
    """``out[n, p] = x[n, t[n, p], p]`` (``np.take_along_axis`` on the class axis).

    x (IN) (N, C, P), t (IN) (N, P) in [0, C), out (OUT) (N, P).
    """
    cdef Py_ssize_t points = x.shape[2], blocks = (points + BLOCK - 1) // BLOCK
    cdef Py_ssize_t i, n, p, start
    if x.shape[0] == 0 or points == 0:
        return
    for i in prange(x.shape[0] * blocks, nogil=True, schedule="static",
                    num_threads=num_threads):
        n = i // blocks
        start = (i - n * blocks) * BLOCK
        for p in range(start, min(start + BLOCK, points)):
            out[n, p] = x[n, t[n, p], p]


def class_grad(const real[:, :, ::1] prob, const Py_ssize_t[:, ::1] t,
               const real[:, ::1] s, real[:, :, ::1] out, int num_threads):
    """Cross-entropy's input gradient from the softmax ``prob`` and ``s = -g * wt``:
    ``out[n, c, p] = s - prob * s`` at ``c == t[n, p]``, else ``-(prob * s)``.

    prob (IN) (N, C, P), t (IN) (N, P), s (IN) (N, P), out (OUT) (N, C, P).
    """
    cdef Py_ssize_t classes = prob.shape[1], points = prob.shape[2]
    cdef Py_ssize_t blocks = (points + BLOCK - 1) // BLOCK
    cdef Py_ssize_t i, n, start
    if prob.shape[0] == 0 or points == 0:
        return
    for i in prange(prob.shape[0] * blocks, nogil=True, schedule="static",
                    num_threads=num_threads):
        n = i // blocks
        start = (i - n * blocks) * BLOCK
        if real is float:
            sb_xent_grad_f(&prob[n, 0, start], &t[n, start], &s[n, start], &out[n, 0, start],
                           classes, points, min(BLOCK, points - start))
        else:
            sb_xent_grad_d(&prob[n, 0, start], &t[n, start], &s[n, start], &out[n, 0, start],
                           classes, points, min(BLOCK, points - start))
