# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""The Winograd convolution (forward or input gradient) and its weight gradient in one
OpenMP region (wino_fused.h): with each chunk of samples on one thread (the transforms
and the point GEMMs of a chunk on one core), or (``split``) chunk after chunk with each
step shared among the threads.  Float32 with the AVX-512 transforms of wino2_avx512.h /
wino4_avx512.h or the portable ones of wino_portable.h, and the project's GEMM (AVX-512 or
AVX2); the same bits as the split form of
sandbox/array/conv/_winograd.py for any chunking and thread count.  Kernel contract as
in pyx/fused.pxd: the wrapper checks shapes and chooses the path."""

cdef extern from "wino_fused.h" nogil:
    ctypedef struct sb_wf_weights:
        const float* w
        int wo, wc, flip, c_major
        Py_ssize_t ks
        float* ut
        Py_ssize_t sp, sr
    int sb_wino_conv_f32(const float* x, int N, int C, int H, int W, int ph, int pw,
                         const float* u, Py_ssize_t up, Py_ssize_t uo, Py_ssize_t uc,
                         float* y, int O, int Ho, int Wo, int tile, int tiles_h, int tiles_w,
                         int chunk, int band, int gemm, int dot_full, int dot_last,
                         int portable, const sb_wf_weights* wt, int num_threads)
    int sb_wino_wgrad_f32(const float* x, int N, int C, int H, int W, int ph, int pw,
                          const float* g, int O, int Ho, int Wo, int tile, int tiles_h,
                          int tiles_w, int chunk, int band, int gemm, int dot_full,
                          int dot_last, int portable, float* partial, float* total,
                          float* dw, int num_threads)

    int sb_wino_conv_split_f32(const float* x, int N, int C, int H, int W, int ph, int pw,
                               const float* u, Py_ssize_t up, Py_ssize_t uo, Py_ssize_t uc,
                               float* y, int O, int Ho, int Wo, int tile, int tiles_h,
                               int tiles_w, int chunk, int gemm, int dot_full, int dot_last,
                               int portable, const sb_wf_weights* wt, int num_threads)
    int sb_wino_wgrad_split_f32(const float* x, int N, int C, int H, int W, int ph, int pw,
                                const float* g, int O, int Ho, int Wo, int tile, int tiles_h,
                                int tiles_w, int chunk, int gemm, int dot_full, int dot_last,
                                int portable, float* partial, float* total, float* dw,
                                int num_threads)

cdef extern from "wino3d_fused.h" nogil:
    ctypedef struct sb_w3_slab:
        int s, z0, nz
    int sb_wino3d_conv_f32(const float* x, int N, int C, int D, int H, int W, int pd, int ph,
                           int pw, const float* const* u, Py_ssize_t up, Py_ssize_t uo,
                           Py_ssize_t uc, float* y, int O, int Do, int Ho, int Wo, int tile,
                           int tiles_h, int tiles_w, const sb_w3_slab* slabs, int nslabs,
                           int gemm, int portable, const sb_wf_weights* wt, int num_threads)
    int sb_wino3d_wgrad_f32(const float* x, int N, int C, int D, int H, int W, int pd, int ph,
                            int pw, const float* g, int O, int Do, int Ho, int Wo, int tile,
                            int tiles_h, int tiles_w, const sb_w3_slab* slabs, int nslabs,
                            int gemm, int portable, float* total, float* partial,
                            float* dw, float* gw, int num_threads)
    int sb_w3_dot_form(int m, int n, int k)

cdef extern from "wino2_avx512.h" nogil:
    int sb_w2_avx512_available()

cdef bint _HAVE_AVX512 = sb_w2_avx512_available()   # the CPU can run the AVX-512 transforms

include "avx2_rows.pxi"


def conv(const float[:, :, :, ::1] x,   # IN  (N, C, H, W)
         const float[:, :, :] u,         # IN  (P, O, C): the transformed kernels, any strides
         float[:, :, :, ::1] y,          # OUT (N, O, Ho, Wo), overwritten
         int ph, int pw, int tile, int tiles_h, int tiles_w, int chunk, int band,
         bint avx2_gemm, bint dot_full, bint dot_last, bint avx512, int num_threads,
         bint split=False,
         const float[:, :, :, ::1] weight=None,   # IN  (Ow, Cw, 3, 3), or None
         float[:, :, ::1] store=None,             # OUT (P, ., .): u's memory, stored
         bint flip=False, bint c_major=False):
    """``y = conv2d(x, w, padding=(ph, pw))`` by F(tile x tile, 3x3) with ``u`` the
    transformed kernels, ``chunk`` samples a task, or (``band`` > 0) ``band`` tile rows
    of one sample; with ``split``, chunks of ``chunk`` samples one after another, each
    step shared among the threads (``band`` ignored); ``avx2_gemm`` runs the AVX2 GEMM
    instead of the AVX-512 one;
    ``dot_full`` / ``dot_last``: the dot-product GEMM for full chunks / shorter ones;
    ``avx512``: the AVX-512 transforms (ignored on a CPU without them), else the portable
    ones, as the split form's ``avx512`` argument.  With ``weight``, ``u`` is computed
    here first, in the same region: the weight transform of ``weight`` (``flip``,
    ``c_major`` as for ``_winograd_weights.weight_transform``) into ``store``, the
    memory ``u`` views."""
    cdef int status
    cdef bint portable = not (avx512 and _HAVE_AVX512)
    cdef sb_wf_weights wt
    wt.w = NULL
    if weight is not None:
        wt.w = &weight[0, 0, 0, 0]
        wt.wo, wt.wc = <int> weight.shape[0], <int> weight.shape[1]
        wt.ks = weight.strides[1] // sizeof(float)
        wt.flip, wt.c_major = flip, c_major
        wt.ut = &store[0, 0, 0]
        wt.sp, wt.sr = store.strides[0] // sizeof(float), store.strides[1] // sizeof(float)
    if x.shape[0] == 0 or y.shape[1] == 0:
        return
    if split:
        with nogil:
            status = sb_wino_conv_split_f32(
                &x[0, 0, 0, 0], <int> x.shape[0], <int> x.shape[1], <int> x.shape[2],
                <int> x.shape[3], ph, pw, &u[0, 0, 0], u.strides[0] // sizeof(float),
                u.strides[1] // sizeof(float), u.strides[2] // sizeof(float), &y[0, 0, 0, 0],
                <int> y.shape[1], <int> y.shape[2], <int> y.shape[3], tile, tiles_h, tiles_w,
                chunk, 2 if avx2_gemm else 1, dot_full, dot_last, portable, &wt, num_threads)
        if status != 0:
            raise MemoryError("winograd convolution: could not allocate its buffers")
        return
    with nogil:
        status = sb_wino_conv_f32(&x[0, 0, 0, 0], <int> x.shape[0], <int> x.shape[1],
                                  <int> x.shape[2], <int> x.shape[3], ph, pw, &u[0, 0, 0],
                                  u.strides[0] // sizeof(float), u.strides[1] // sizeof(float),
                                  u.strides[2] // sizeof(float), &y[0, 0, 0, 0],
                                  <int> y.shape[1], <int> y.shape[2], <int> y.shape[3], tile,
                                  tiles_h, tiles_w, chunk, band, 2 if avx2_gemm else 1,
                                  dot_full, dot_last, portable, &wt, num_threads)
    if status != 0:
        raise MemoryError("winograd convolution: could not allocate a thread's buffers")


def weight_grad(const float[:, :, :, ::1] x,      # IN  (N, C, H, W)
                const float[:, :, :, ::1] g,      # IN  (N, O, Ho, Wo)
                float[:, :, :, ::1] partial,      # OUT (chunks or 1, P, O, C): scratch
                float[:, :, ::1] total,           # OUT (P, O, C)
                int ph, int pw, int tile, int tiles_h, int tiles_w, int chunk, int band,
                bint avx2_gemm, bint dot_full, bint dot_last, bint avx512, int num_threads,
                bint split=False,
                float[:, :, :, ::1] dw=None):     # OUT (O, C, 3, 3), or None
    """``total[p] = sum_chunks Gt[p] @ V[p]^T`` in chunk order: the point sums of the
    weight gradient before the fold (``_winograd_weights.weight_grad_fold``); chunks
    of ``chunk`` samples or (``band`` > 0) of ``band`` tile rows of one sample.
    ``dot_full`` / ``dot_last``: the dot-product GEMM for full chunks / shorter ones
    (else the packed one); ``avx512`` and ``split`` as for :func:`conv` (split: the
    partials summed in chunk order into ``total`` as they come).  With ``dw``, the fold
    ``dW = G^T total G`` too, in the same region."""
    cdef int status
    cdef bint portable = not (avx512 and _HAVE_AVX512)
    cdef float* dwp = NULL if dw is None else &dw[0, 0, 0, 0]
    if split:
        with nogil:
            status = sb_wino_wgrad_split_f32(
                &x[0, 0, 0, 0], <int> x.shape[0], <int> x.shape[1], <int> x.shape[2],
                <int> x.shape[3], ph, pw, &g[0, 0, 0, 0], <int> g.shape[1], <int> g.shape[2],
                <int> g.shape[3], tile, tiles_h, tiles_w, chunk, 2 if avx2_gemm else 1,
                dot_full, dot_last, portable, &partial[0, 0, 0, 0], &total[0, 0, 0], dwp,
                num_threads)
        if status != 0:
            raise MemoryError("winograd weight gradient: could not allocate its buffers")
        return
    with nogil:
        status = sb_wino_wgrad_f32(&x[0, 0, 0, 0], <int> x.shape[0], <int> x.shape[1],
                                   <int> x.shape[2], <int> x.shape[3], ph, pw, &g[0, 0, 0, 0],
                                   <int> g.shape[1], <int> g.shape[2], <int> g.shape[3], tile,
                                   tiles_h, tiles_w, chunk, band, 2 if avx2_gemm else 1,
                                   dot_full, dot_last, portable, &partial[0, 0, 0, 0],
                                   &total[0, 0, 0], dwp, num_threads)
    if status != 0:
        raise MemoryError("winograd weight gradient: could not allocate a thread's buffers")


def conv3d(const float[:, :, :, :, ::1] x,   # IN  (N, C, D, H, W)
           const float[:, :, :] u0,          # IN  (P, O, C): depth tap 0's transformed kernels
           const float[:, :, :] u1,          # IN  tap 1's, the strides of u0's
           const float[:, :, :] u2,          # IN  tap 2's, the strides of u0's
           float[:, :, :, :, ::1] y,         # OUT (N, O, Do, Ho, Wo), overwritten
           int pd, int ph, int pw, int tile, int tiles_h, int tiles_w,
           const int[:, ::1] slabs,          # IN  (slabs, 3): sample, first plane, planes
           bint avx2_gemm, bint avx512, int num_threads, taps, bint flip, bint c_major):
    """``y = conv3d(x, w, padding=(pd, ph, pw))`` for a 3x3x3 kernel whose depth taps'
    transformed kernels are ``u0``, ``u1``, ``u2`` (wino3d_fused.h): ``slabs`` of output
    planes one after another, each step shared among the threads; the bits of
    ``_winograd3d.conv3x3x3``'s split form.  ``avx2_gemm``: the AVX2 GEMM instead of the
    AVX-512 one; ``avx512``: the AVX-512 transforms (ignored on a CPU without them).
    ``taps``: per depth tap ``(kernels, store)``, the (Ow, Cw, 3, 3) float32 kernels as
    ``_winograd_weights.weight_transform`` takes them (views of the depth taps) and the
    memory the ``u`` of that tap views (:func:`sandbox.array.conv._winograd.
    pending_transform`'s storage): the ``u``'s are computed here first, in the same region,
    as ``weight_transform`` (``flip``, ``c_major``) would."""
    cdef int status, k
    cdef bint portable = not (avx512 and _HAVE_AVX512)
    cdef const float* u[3]
    cdef sb_wf_weights wt[3]
    cdef const float[:, :, :, :] tap  # kernels contiguous, evenly spaced (a depth tap's view)
    cdef float[:, :, ::1] store
    if x.shape[0] == 0 or y.shape[1] == 0 or slabs.shape[0] == 0:
        return
    u[0], u[1], u[2] = &u0[0, 0, 0], &u1[0, 0, 0], &u2[0, 0, 0]
    for k in range(3):
        tap, store = taps[k][0], taps[k][1]
        wt[k].w = &tap[0, 0, 0, 0]
        wt[k].wo, wt[k].wc = <int> tap.shape[0], <int> tap.shape[1]
        wt[k].ks = tap.strides[1] // sizeof(float)  # 27: a tap of the 3x3x3 kernels
        wt[k].flip, wt[k].c_major = flip, c_major
        wt[k].ut = &store[0, 0, 0]
        wt[k].sp = store.strides[0] // sizeof(float)
        wt[k].sr = store.strides[1] // sizeof(float)
    with nogil:
        status = sb_wino3d_conv_f32(
            &x[0, 0, 0, 0, 0], <int> x.shape[0], <int> x.shape[1], <int> x.shape[2],
            <int> x.shape[3], <int> x.shape[4], pd, ph, pw, u,
            u0.strides[0] // sizeof(float), u0.strides[1] // sizeof(float),
            u0.strides[2] // sizeof(float), &y[0, 0, 0, 0, 0], <int> y.shape[1],
            <int> y.shape[2], <int> y.shape[3], <int> y.shape[4], tile, tiles_h, tiles_w,
            <const sb_w3_slab*> &slabs[0, 0], <int> slabs.shape[0], 2 if avx2_gemm else 1,
            portable, wt, num_threads)
    if status != 0:
        raise MemoryError("3-D winograd convolution: could not allocate its buffers")


def weight_grad3d(const float[:, :, :, :, ::1] x,   # IN  (N, C, D, H, W)
                  const float[:, :, :, :, ::1] g,   # IN  (N, O, Do, Ho, Wo)
                  float[:, :, :, ::1] total,        # OUT (3, P, O, C): the point sums
                  float[:, :, :, ::1] partial,      # scratch, total's shape
                  int pd, int ph, int pw, int tile, int tiles_h, int tiles_w,
                  const int[:, ::1] slabs,          # IN  (slabs, 3): sample, first plane, planes
                  bint avx2_gemm, bint avx512, int num_threads,
                  float[:, :, :, :, ::1] dw=None,   # OUT (3, O, C, 3, 3), or None
                  float[:, :, :, :, ::1] gw=None):  # OUT (O, C, 3, 3, 3), or None
    """The point sums of the 3x3x3 weight gradient (wino3d_fused.h), ``total[kz]`` for each
    depth tap, ``slabs`` one after another, each step shared among the threads; the bits
    of ``_winograd3d.conv3x3x3_weight_grad``'s split form; with ``dw``, each tap's fold
    (``_winograd_weights.weight_grad_fold``) into ``dw[kz]`` too, in the same region, and
    with ``gw`` as well (``dw``'s taps in the weight's layout, ``gw[:, :, kz] = dw[kz]``,
    copied on every thread there; ``dw`` is then scratch).
    ``avx2_gemm``, ``avx512`` as for :func:`conv3d`."""
    cdef int status
    cdef bint portable = not (avx512 and _HAVE_AVX512)
    cdef float* folded = NULL if dw is None else &dw[0, 0, 0, 0, 0]
    cdef float* laid_out = NULL if dw is None or gw is None else &gw[0, 0, 0, 0, 0]
    if slabs.shape[0] == 0 or dw is not None and dw.shape[1] * dw.shape[2] == 0:
        total[...] = 0
        if dw is not None:
            dw[...] = 0
        if gw is not None:
            gw[...] = 0
        return
    with nogil:
        status = sb_wino3d_wgrad_f32(
            &x[0, 0, 0, 0, 0], <int> x.shape[0], <int> x.shape[1], <int> x.shape[2],
            <int> x.shape[3], <int> x.shape[4], pd, ph, pw, &g[0, 0, 0, 0, 0],
            <int> g.shape[1], <int> g.shape[2], <int> g.shape[3], <int> g.shape[4], tile,
            tiles_h, tiles_w, <const sb_w3_slab*> &slabs[0, 0], <int> slabs.shape[0],
            2 if avx2_gemm else 1, portable, &total[0, 0, 0, 0], &partial[0, 0, 0, 0],
            folded, laid_out, num_threads)
    if status != 0:
        raise MemoryError("3-D winograd weight gradient: could not allocate its buffers")


def dot_form3d(int m, int n, int k):
    """Whether the 3-D weight gradient's region gives an (m x k) @ (k x n) product the
    dot-product kernel (wino3d_fused.h's copy of ``_gemm.product_form``'s rule, which the
    tests hold it to)."""
    return bool(sb_w3_dot_form(m, n, k))
