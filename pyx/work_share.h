/* Items of a parallel loop shared for cores of unequal speed: each thread of the team
 * first runs its static share of the first three quarters of the items (a contiguous
 * range, as schedule(static) gives it: its part of the input stays its own), then takes
 * the last quarter in small pieces from a shared counter, so the thread that finished
 * its share first takes more of the rest.  A VM's vCPU that shares its physical core, or
 * an efficiency core, runs its static half of a short loop up to twice as long as the
 * other thread; schedule(dynamic) evens that out but interleaves the threads' items from
 * the start (grid sampling's forward: 0.97-1.57x the time of static at 2 threads).
 *
 * Which thread runs an item never changes that item's result when each item writes only
 * its own outputs, so a loop keeps its bits for any team.  Used inside a parallel region:
 *
 *     sb_share s;  sb_share_init(&s, total);          (before the region)
 *     ptrdiff_t i, end;                                (in it, private)
 *     sb_share_first(&s, &i, &end);
 *     for (; i < end || sb_share_take(&s, &i, &end); i++)  work(i);
 *
 * The ranges follow the team the region really has (omp_get_num_threads), so no item
 * is lost when the runtime gives fewer threads than asked.  From Cython, assign i and
 * end inside the `with parallel()` block before passing their addresses: a variable only
 * written through a pointer there stays shared among the threads (a race that batch
 * norm's bitwise tests caught in a trial; tests/project/test_prange_privates.py looks for
 * such addresses), and pass the sb_share, which must be shared, by a pointer made before
 * the block. */
#ifndef SANDBOX_WORK_SHARE_H
#define SANDBOX_WORK_SHARE_H
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    ptrdiff_t total;  /* items 0 .. total-1 */
    ptrdiff_t fixed;  /* the first `fixed` items go in static shares */
    ptrdiff_t next;   /* the next item of the rest (updated atomically) */
} sb_share;

/* The team's size (1 outside a parallel region or without OpenMP). */
static inline ptrdiff_t sb_share_team(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

static inline void sb_share_init(sb_share *s, ptrdiff_t total)
{
    s->total = total;
    s->fixed = total - total / 4;
    s->next = s->fixed;
}

/* This thread's static range [*i, *end) of the first s->fixed items. */
static inline void sb_share_first(const sb_share *s, ptrdiff_t *i, ptrdiff_t *end)
{
#ifdef _OPENMP
    const ptrdiff_t t = omp_get_thread_num();
#else
    const ptrdiff_t t = 0;
#endif
    const ptrdiff_t nt = sb_share_team();
    *i = s->fixed * t / nt;
    *end = s->fixed * (t + 1) / nt;
}

/* The next piece of the rest into [*i, *end): about a quarter of a thread's part of it
 * (a taken piece costs an atomic on a line the threads share, some 100-200 ns between
 * cores: one item at a time made grid sampling's nearest forward of a batch of 8,
 * 512 blocks of 0.3 us, 1.09-1.14x slower with the cores even); 0 when none is left. */
static inline int sb_share_take(sb_share *s, ptrdiff_t *i, ptrdiff_t *end)
{
    const ptrdiff_t rest = s->total - s->fixed, parts = 4 * sb_share_team();
    const ptrdiff_t piece = rest >= 2 * parts ? rest / parts : 1;
    ptrdiff_t k;
    #pragma omp atomic capture
    { k = s->next; s->next += piece; }
    if (k >= s->total) return 0;
    *i = k;
    *end = k + piece < s->total ? k + piece : s->total;
    return 1;
}

#endif
