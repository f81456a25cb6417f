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

/* This thread's number in the team (0 outside a parallel region or without OpenMP). */
static inline ptrdiff_t sb_share_thread(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
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
    const ptrdiff_t t = sb_share_thread();
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

/* Items in home ranges, taken back by others: thread t of a team of nt owns the t-th of
 * nt equal contiguous ranges of the items (what schedule(static) gives it, and what the
 * loops over (sample, channel) planes around it give it: the samples it wrote or will
 * read), takes its own items from the front, one at a time, and when they are done takes
 * the next items of the other ranges.  So with cores of equal speed each thread runs its
 * home (its data stays in its caches), and a faster one takes over the slower one's last
 * items.  Each range's counter lies on a cache line of its own.  Used inside a parallel
 * region, `home` shared (sb_home_init before it):
 *
 *     sb_home_start(&home);                            (every thread; ends in a barrier)
 *     while ((k = sb_home_take(&home)) >= 0)  work(k);
 *
 * Which thread runs an item never changes its result where each writes its own outputs;
 * the loop ends with no barrier. */
#define SB_HOME_STRIDE 8  /* ptrdiff_t counters a cache line apart */
#define SB_HOME_MOST 64   /* ranges at most: a larger team shares them */

typedef struct {
    ptrdiff_t total;
    ptrdiff_t next[SB_HOME_MOST * SB_HOME_STRIDE];  /* range q's next item: next[q * stride] */
} sb_home;

static inline void sb_home_init(sb_home *h, ptrdiff_t total) { h->total = total; }

/* The ranges: one a thread of the team, at most SB_HOME_MOST. */
static inline ptrdiff_t sb_home_ranges(void)
{
    const ptrdiff_t nt = sb_share_team();
    return nt < SB_HOME_MOST ? nt : SB_HOME_MOST;
}

/* Every thread of the team: its range's counter at its first item, then a barrier. */
static inline void sb_home_start(sb_home *h)
{
    const ptrdiff_t t = sb_share_thread();
    const ptrdiff_t nt = sb_home_ranges();
    if (t < nt) h->next[t * SB_HOME_STRIDE] = h->total * t / nt;
    #pragma omp barrier
}

/* The next item for this thread: its own range's, else another's; -1 when none is left. */
static inline ptrdiff_t sb_home_take(sb_home *h)
{
    const ptrdiff_t t = sb_share_thread();
    const ptrdiff_t nt = sb_home_ranges();
    ptrdiff_t r, k;
    for (r = 0; r < nt; r++) {
        const ptrdiff_t q = (t + r) % nt;
        #pragma omp atomic capture
        { k = h->next[q * SB_HOME_STRIDE]; h->next[q * SB_HOME_STRIDE] += 1; }
        if (k < h->total * (q + 1) / nt) return k;
    }
    return -1;
}

#endif
