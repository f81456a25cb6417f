# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# Build-time facts about OpenMP, for ``sandbox.info()`` and the CI check.
# See pyx/fused.pxd for the kernel contract.

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int sb_have_openmp(void) { return 1; }
    static int sb_omp_max_threads(void) { return omp_get_max_threads(); }
    static int sb_omp_version(void) { return _OPENMP; }
    #else
    static int sb_have_openmp(void) { return 0; }
    static int sb_omp_max_threads(void) { return 1; }
    static int sb_omp_version(void) { return 0; }
    #endif
    """
    int sb_have_openmp() nogil
    int sb_omp_max_threads() nogil
    int sb_omp_version() nogil

from cython.parallel cimport prange


def have_openmp():
    """True when the kernels were compiled with OpenMP."""
    return bool(sb_have_openmp())


def openmp_version():
    """The ``_OPENMP`` date macro (e.g. 201511), or 0 without OpenMP."""
    return sb_omp_version()


def max_threads():
    """OpenMP's default team size (``omp_get_max_threads``)."""
    return sb_omp_max_threads()


def threads_used(int num_threads):
    """Run a prange loop with ``num_threads`` and return how many distinct threads ran.

    Used by ``sandbox info`` and the tests to prove the build is really parallel.

    Arguments: ``num_threads`` (IN).
    """
    cdef int i
    cdef int[64] seen
    cdef int n = min(max(num_threads, 1), 64)
    for i in range(64):
        seen[i] = 0
    with nogil:
        for i in prange(n * 64, schedule="static", chunksize=64, num_threads=n):
            seen[_thread_id()] = 1
    return sum(seen[i] for i in range(64))


cdef extern from *:
    """
    #ifdef _OPENMP
    static int sb_thread_id(void) { return omp_get_thread_num() & 63; }
    #else
    static int sb_thread_id(void) { return 0; }
    #endif
    """
    int sb_thread_id() noexcept nogil

cdef inline int _thread_id() noexcept nogil:
    return sb_thread_id()
