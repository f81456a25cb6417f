# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Optimiser kernels: one pass over a parameter and its state instead of a dozen
# numpy passes and temporaries.  See pyx/fused.pxd for the kernel contract.
#
# adam_step replays, element by element and in the same floating-point type,
# exactly the numpy operations of sandbox.optim.Adam.step (every Python scalar is
# rounded to the array's type first, as numpy does with a Python float), so the
# two paths give bitwise identical parameters and moments.  setup.py compiles
# this file with -ffp-contract=off: a fused multiply-add would round differently.

cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdlib cimport free, malloc

from fused cimport real

# The element loop in C on restrict pointers, with an AVX2 clone chosen at load time
# (gcc target_clones): the baseline x86-64 build vectorises it 4 wide at most, and the
# square root and division make it compute-bound there.  Only correctly rounded
# operations (no fused multiply-add: -ffp-contract=off; -fno-math-errno lets sqrt
# vectorise), so every clone gives the same bits as numpy.
cdef extern from "simd_clones.h":
    pass  # SB_CLONES, used by the C below

cdef extern from *:
    """
    #define SB_ADAM_LOOP(T, SQRT, L2)                                                    \
        for (Py_ssize_t i = 0; i < n; i++) {                                            \
            T pi = p[i] * decay;                                                        \
            T g = grad[i] * sign;                                                       \
            if (L2) g = g + wd * pi;                                                    \
            T mi = m[i];                                                                \
            mi = mi + b1c * (g - mi);                                                   \
            T vi = v[i] * b2;                                                           \
            vi = vi + (b2c * g) * g;                                                    \
            m[i] = mi;                                                                  \
            v[i] = vi;                                                                  \
            p[i] = pi - lr_t * (mi / (SQRT(vi) / bc2 + e)); }
    /* decay = 1 and sign = +-1 when unused: multiplying by them is exact, so the loop
       has no branch; the L2 term (0 * inf would be NaN) is a separate loop */
    #define SB_ADAM(T, S, SQRT)                                                          \
    SB_CLONES static void sb_adam_##S(T* restrict p, const T* restrict grad,             \
            T* restrict m, T* restrict v, Py_ssize_t n, T b1c, T b2, T b2c, T lr_t,      \
            T bc2, T e, T wd, T decay, T sign, int use_l2) {                             \
        if (use_l2) { SB_ADAM_LOOP(T, SQRT, 1) } else { SB_ADAM_LOOP(T, SQRT, 0) } }
    SB_ADAM(float, f, sqrtf)
    SB_ADAM(double, d, sqrt)
    """
    void sb_adam_f(float*, const float*, float*, float*, Py_ssize_t, float, float, float,
                   float, float, float, float, float, float, int) noexcept nogil
    void sb_adam_d(double*, const double*, double*, double*, Py_ssize_t, double, double,
                   double, double, double, double, double, double, double, int) noexcept nogil

#: elements per parallel block (each block is one thread's, so results never depend
#: on the thread count)
cdef enum:
    BLOCK = 16384


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

    Arguments: ``p`` (IN/OUT), ``grad`` (IN), ``m`` (IN/OUT), ``v`` (IN/OUT), ``beta1``
    (IN), ``beta2`` (IN), ``step_size`` (IN), ``bias_correction2_sqrt`` (IN), ``eps`` (IN),
    ``weight_decay`` (IN), ``decoupled`` (IN), ``maximize`` (IN), ``num_threads`` (IN).
    """
    cdef Py_ssize_t n = p.shape[0]
    cdef real b1c = <real> (1 - beta1), b2 = <real> beta2, b2c = <real> (1 - beta2)
    cdef real lr_t = <real> step_size, bc2 = <real> bias_correction2_sqrt, e = <real> eps
    cdef real wd = <real> weight_decay, decay = <real> (1 - weight_decay)
    cdef bint use_l2 = weight_decay != 0 and not decoupled
    cdef bint use_decay = weight_decay != 0 and decoupled
    cdef real sign = -1 if maximize else 1
    if not use_decay:
        decay = 1
    cdef Py_ssize_t blk, start, count
    with nogil:
        for blk in prange((n + BLOCK - 1) // BLOCK, schedule="static", num_threads=num_threads):
            start = blk * BLOCK
            count = n - start if n - start < BLOCK else BLOCK
            if real is float:
                sb_adam_f(&p[start], &grad[start], &m[start], &v[start], count, b1c, b2, b2c,
                          lr_t, bc2, e, wd, decay, sign, use_l2)
            else:
                sb_adam_d(&p[start], &grad[start], &m[start], &v[start], count, b1c, b2, b2c,
                          lr_t, bc2, e, wd, decay, sign, use_l2)


def adam_step_many(list params, list grads, list exp_avgs, list exp_avg_sqs, double beta1,
                   double beta2, double step_size, double bias_correction2_sqrt,
                   double eps, double weight_decay, bint decoupled, bint maximize,
                   int num_threads):
    """:func:`adam_step` on several parameters at once (one step number, one dtype; the
    four lists hold flat C-contiguous ndarrays, pairwise of one size): every parameter's
    BLOCK-element blocks in one parallel loop, each block the same call as
    :func:`adam_step` makes, so the bits are the same; one parallel region instead of one
    a parameter.

    Arguments: ``params`` (IN/OUT), ``grads`` (IN), ``exp_avgs`` (IN/OUT),
    ``exp_avg_sqs`` (IN/OUT), the rest as for :func:`adam_step` (IN).
    """
    cdef Py_ssize_t count = len(params), k, blk, total = 0, start, n
    if count == 0:
        return
    cdef bint f64 = cnp.PyArray_ITEMSIZE(<cnp.ndarray> params[0]) == 8
    # per parameter: its first block and size, and the four data pointers
    cdef Py_ssize_t* first = <Py_ssize_t*> malloc((count + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* sizes = <Py_ssize_t*> malloc(count * sizeof(Py_ssize_t))
    cdef char** data = <char**> malloc(4 * count * sizeof(char*))
    cdef Py_ssize_t* owner = NULL
    if first == NULL or sizes == NULL or data == NULL:
        free(first)
        free(sizes)
        free(data)
        raise MemoryError("adam_step_many: could not allocate its tables")
    for k in range(count):
        first[k] = total
        sizes[k] = cnp.PyArray_SIZE(<cnp.ndarray> params[k])
        total += (sizes[k] + BLOCK - 1) // BLOCK
        data[4 * k] = cnp.PyArray_BYTES(<cnp.ndarray> params[k])
        data[4 * k + 1] = cnp.PyArray_BYTES(<cnp.ndarray> grads[k])
        data[4 * k + 2] = cnp.PyArray_BYTES(<cnp.ndarray> exp_avgs[k])
        data[4 * k + 3] = cnp.PyArray_BYTES(<cnp.ndarray> exp_avg_sqs[k])
    first[count] = total
    owner = <Py_ssize_t*> malloc((total if total > 0 else 1) * sizeof(Py_ssize_t))
    if owner == NULL:
        free(first)
        free(sizes)
        free(data)
        raise MemoryError("adam_step_many: could not allocate its tables")
    for k in range(count):   # block -> parameter
        for blk in range(first[k], first[k + 1]):
            owner[blk] = k
    cdef bint use_l2 = weight_decay != 0 and not decoupled
    cdef bint use_decay = weight_decay != 0 and decoupled
    cdef double decay = (1 - weight_decay) if use_decay else 1
    cdef double sign = -1 if maximize else 1
    with nogil:
        for blk in prange(total, schedule="static", num_threads=num_threads):
            k = owner[blk]
            start = (blk - first[k]) * BLOCK
            n = sizes[k] - start if sizes[k] - start < BLOCK else BLOCK
            if f64:
                sb_adam_d(<double*> data[4 * k] + start, <const double*> data[4 * k + 1] + start,
                          <double*> data[4 * k + 2] + start, <double*> data[4 * k + 3] + start,
                          n, 1 - beta1, beta2, 1 - beta2, step_size, bias_correction2_sqrt,
                          eps, weight_decay, decay, sign, use_l2)
            else:
                sb_adam_f(<float*> data[4 * k] + start, <const float*> data[4 * k + 1] + start,
                          <float*> data[4 * k + 2] + start, <float*> data[4 * k + 3] + start,
                          n, <float> (1 - beta1), <float> beta2, <float> (1 - beta2),
                          <float> step_size, <float> bias_correction2_sqrt, <float> eps,
                          <float> weight_decay, <float> decay, <float> sign, use_l2)
    free(first)
    free(sizes)
    free(data)
    free(owner)
