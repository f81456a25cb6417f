# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
# A ticket counter and a wait on it that spins without the GIL before the caller falls
# back to sleeping: the side worker of sandbox.runtime.overlap waits here for its next
# work.  Woken from a sleep, a thread of a 2-core VM took 60-310 us to run (median 227 us
# in the user UNet step at 64², AMD EPYC family 26 model 2): the hypervisor had idled its
# virtual CPU.  A thread that spins a little while after its work keeps it awake for the
# next piece, as OpenMP's workers do after a parallel region (GOMP_SPINCOUNT).

cdef extern from *:
    """
    #include <sched.h>
    #include <time.h>
    static long long sb_ticket = 0;
    static long long sb_ticket_load(void) { return __atomic_load_n(&sb_ticket, __ATOMIC_ACQUIRE); }
    static void sb_ticket_bump(void) { __atomic_add_fetch(&sb_ticket, 1, __ATOMIC_RELEASE); }
    static double sb_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    static void sb_relax(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #elif defined(__aarch64__)
        __asm__ __volatile__("yield");
    #endif
    }
    """
    long long sb_ticket_load() noexcept nogil
    void sb_ticket_bump() noexcept nogil
    double sb_now() noexcept nogil
    void sb_relax() noexcept nogil
    int sched_yield() noexcept nogil


def ticket():
    """The ticket counter (a new value after every :func:`bump`)."""
    return sb_ticket_load()


def bump():
    """Advance the ticket counter: wakes a :func:`spin_while` on the old value."""
    sb_ticket_bump()


def spin_while(long long seen, double seconds):
    """Spin without the GIL while the ticket is ``seen``, at most ``seconds``; return the
    ticket (still ``seen`` if nothing came).  Between checks the thread pauses and offers
    its CPU to any other runnable thread (``sched_yield``), so that it delays no one.

    Arguments: ``seen`` (IN), ``seconds`` (IN).
    """
    cdef long long t
    cdef double end
    cdef int i
    with nogil:
        end = sb_now() + seconds
        while True:
            t = sb_ticket_load()
            if t != seen:
                break
            for i in range(32):
                sb_relax()
            sched_yield()
            if sb_now() >= end:
                break
    return t
