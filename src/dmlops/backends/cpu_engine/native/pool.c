/* The worker pool (pool.h).
 *
 * One job at a time holds the pool. Its pieces are cut into one range a participant (the
 * caller's, then each helper's: the same thread takes the same part of a job each time, so
 * a call repeated on the same arrays finds its bytes in that core's own cache), each range
 * one 64-bit word, epoch (16 bits) | end (24) | next piece (24), claimed a piece at a time by
 * compare-and-swap: a thread takes its own range from the front, then the others' from the
 * back, so a worker the kernel has not scheduled delays only the piece it is running. A
 * worker that wakes late, after its job is over, sees another epoch or no piece left and
 * claims nothing, so it can never touch a finished job's state. A job's fields are written
 * before its epoch is published and stay valid until its last piece is done, which cannot
 * happen while any claimed piece is still running.
 *
 * Idle workers spin a little (back-to-back calls find them awake), then sleep on their own
 * condition variable; they spin longer after a job that found a free CPU for every thread it
 * wanted (an idle machine: a call that finds its helpers asleep waits for their wake-up,
 * 50-150 µs on a VM's halted CPU) than after one the machine's load cut short (whose
 * spinning would take cores other work wants). A job asks only the workers it wants.
 * Sleeping ones are woken in a tree: the caller wakes two and each worker, once it runs, the
 * two below it, so no thread makes more than two wake-up calls before its first piece (a
 * caller that woke fifteen sleepers in turn on a loaded 16-core host spent 100-450 µs there,
 * every piece already done by the workers it woke). fork(): the prepare handler waits for a
 * running job, and the child forgets the parent's workers (they do not exist there) and
 * starts its own on its first parallel job.
 */
#define _GNU_SOURCE
#include "pool.h"

#include "load.h"
#include "quota.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loose.h"

#if X86
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

#define MOST_WORKERS 1024
#define PIECE_BITS 24
#define PIECE_MASK ((UINT64_C(1) << PIECE_BITS) - 1)

/* One participant's range of a job's pieces: epoch | end | next (see above). */
typedef struct {
    _Alignas(64) _Atomic uint64_t word;
} range_t;

typedef struct {
    pthread_t thread;
    int index; /* in pool.workers */
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    _Atomic uint32_t go;  /* the epoch this worker is asked to join */
    int sleeping;         /* guarded by mutex */
} worker_t;

static struct {
    pthread_mutex_t lock; /* held by the caller whose job runs */
    _Atomic int taken;    /* while that is so (read without the lock: pool_taken) */
    worker_t *workers[MOST_WORKERS];
    int started;
    uint32_t epoch;
    piece_fn fn;
    void *context;
    range_t ranges[MOST_WORKERS + 1]; /* the job's: the caller's, then worker k's at k + 1 */
    _Atomic int parts;                /* ranges the job is cut into */
    _Atomic int64_t pieces;
    _Atomic int home_ranges;          /* a range a participant (else one range for all) */
    _Atomic uint32_t asked; /* epoch (16 bits) | the job's helpers (16): whom workers wake */
    _Atomic int64_t done;
    _Atomic int joined; /* workers that claimed a piece of the job */
    _Atomic int last_joined; /* of the last job that could have asked helpers */
    _Atomic int asleep;      /* workers asleep on their condition variables */
    _Atomic int load_aware;  /* ask only the CPUs other processes leave free (load.h) */
    _Atomic int64_t spin_ns;      /* an idle worker's spin after a job the load cut short */
    _Atomic int64_t idle_spin_ns; /* ... after a job that had a free CPU for every thread */
    _Atomic int64_t job_spin_ns;  /* the spin the last job chose: one of the two above */
    _Atomic int64_t caller_spin_ns; /* the caller's spin for the last pieces before it sleeps */
    /* the caller sleeps here while workers finish the last pieces: its CPU goes idle, so the
     * kernel can pull a descheduled worker onto it at once instead of at its next turn */
    pthread_mutex_t finished_mutex;
    pthread_cond_t finished;
    _Atomic int caller_sleeping;
} pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .spin_ns = 50000,
    .idle_spin_ns = 300000,
    .job_spin_ns = 50000,
    .caller_spin_ns = 20000,
    .load_aware = 1,
    .home_ranges = 1,
    .finished_mutex = PTHREAD_MUTEX_INITIALIZER,
    .finished = PTHREAD_COND_INITIALIZER,
};

/* How many workers a job may wake, learnt from the jobs before it (guarded by pool.lock).
 * A job whose caller waited a scheduler-slice-long time for the last pieces after
 * finishing its own (a worker was descheduled: a core is taken by other work) wakes one
 * helper fewer from then on; calm jobs add one back after `probe_after` of them, which
 * doubles each time a step up is punished within eight jobs and halves when one holds. A
 * machine with cores to spare keeps every helper (an odd straggle costs one helper for
 * eight jobs); one with k cores busy settles near k helpers fewer; a two-core machine
 * beside a busy process settles on the caller alone. */
static struct {
    int cap;            /* helpers a job may wake; -1: no limit learnt */
    int64_t calm;       /* calm jobs since the last change */
    int64_t probe_after;
    int raised;         /* the last change was a step up, not yet vindicated */
    int64_t straggle_ns;
    double ns_a_byte;   /* a thread's time a byte in recent jobs of 1 MiB or more (0: none) */
} adapt = {.cap = -1, .probe_after = 8, .straggle_ns = 1000000, .ns_a_byte = 0.0};

static _Atomic int64_t long_job_ns = LONG_JOB_NS;

/* One thread moved `bytes` in `ns`: the running estimate of a thread's time a byte (the
 * last jobs weigh most; under 1 MiB a time is mostly overhead, not counted). Of a job with
 * helpers, the caller's own share is timed, not the job: helpers that share their cores with
 * other work would make a byte look slower than a thread moves it. */
static void time_a_byte(double bytes, int64_t ns) {
    if (bytes < (double)(1 << 20) || ns <= 0) {
        return;
    }
    double sample = (double)ns / bytes;
    adapt.ns_a_byte = adapt.ns_a_byte > 0 ? 0.75 * adapt.ns_a_byte + 0.25 * sample : sample;
}

static int64_t now_ns(void);

static void learn(int helpers, int most, int64_t own_ns, int64_t tail_ns) {
    if (helpers > 0 && tail_ns > adapt.straggle_ns && tail_ns > 2 * own_ns) {
        adapt.cap = helpers - 1;
        adapt.calm = 0;
        if (adapt.raised && adapt.probe_after < 4096) {
            adapt.probe_after *= 2;
        }
        adapt.raised = 0;
        return;
    }
    if (adapt.cap < 0 || adapt.cap >= most) {
        adapt.cap = -1;
        return;
    }
    adapt.calm++;
    if (adapt.raised && adapt.calm >= 8) {
        adapt.raised = 0;
        adapt.probe_after = adapt.probe_after > 16 ? adapt.probe_after / 2 : 8;
    }
    if (adapt.calm >= adapt.probe_after) {
        adapt.cap++;
        adapt.calm = 0;
        adapt.raised = 1;
    }
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t pool_now_ns(void) { return now_ns(); }

/* Wakes worker `k` if it sleeps; it is already asked to join (its go is set). */
static void wake(int k) {
    worker_t *w = pool.workers[k];
    pthread_mutex_lock(&w->mutex);
    if (w->sleeping) {
        pthread_cond_signal(&w->wake);
    }
    pthread_mutex_unlock(&w->mutex);
}

/* The caller is the wake tree's root (node 0) and pool.workers[k] its node k + 1; node n
 * wakes nodes 2n + 1 and 2n + 2 of the job's helpers. */
static void wake_below(int node, int helpers) {
    for (int child = 2 * node + 1; child <= 2 * node + 2 && child <= helpers; child++) {
        wake(child - 1);
    }
}

/* Claims and runs pieces of `epoch` until none is left: participant `me`'s own range from
 * the front, then the others' from the back. A worker (`me` > 0: not the caller) counts
 * itself in the job's `joined` with its first piece, before that piece can be done. Returns
 * how many it ran. */
static _Thread_local int participant = -1;

int pool_participant(void) { return participant; }

static int64_t take_pieces(uint32_t epoch, int me) {
    int64_t ran = 0;
    int uncounted = me > 0; /* (a worker not yet in `joined`) */
    participant = me;
    int parts = atomic_load_explicit(&pool.parts, memory_order_relaxed);
    for (int r = 0; r < parts; r++) {
        _Atomic uint64_t *word = &pool.ranges[(me + r) % parts].word;
        int own = r == 0;
        for (;;) {
            uint64_t seen = atomic_load_explicit(word, memory_order_acquire);
            if ((uint32_t)(seen >> (2 * PIECE_BITS)) != (epoch & 0xFFFF)) {
                return ran; /* (a later job's: this one is over) */
            }
            uint64_t end = (seen >> PIECE_BITS) & PIECE_MASK;
            uint64_t next = seen & PIECE_MASK;
            if (next >= end) {
                break;
            }
            uint64_t claimed = own ? seen + 1 : seen - (UINT64_C(1) << PIECE_BITS);
            if (!atomic_compare_exchange_weak_explicit(word, &seen, claimed, memory_order_acq_rel,
                                                       memory_order_acquire)) {
                continue;
            }
            if (uncounted) {
                atomic_fetch_add(&pool.joined, 1);
                uncounted = 0;
            }
            pool.fn(pool.context, (int64_t)(own ? next : end - 1));
            ran++;
            int64_t done = atomic_fetch_add(&pool.done, 1) + 1; /* (seq_cst: see pool_run) */
            if (done == atomic_load_explicit(&pool.pieces, memory_order_relaxed) &&
                atomic_load(&pool.caller_sleeping)) {
                pthread_mutex_lock(&pool.finished_mutex);
                pthread_cond_signal(&pool.finished);
                pthread_mutex_unlock(&pool.finished_mutex);
            }
        }
    }
    return ran;
}

static void *work(void *argument) {
    worker_t *self = (worker_t *)argument;
    uint32_t seen = 0;
    for (;;) {
        uint32_t asked = atomic_load_explicit(&self->go, memory_order_acquire);
        if (asked == seen) {
            int64_t until =
                now_ns() + atomic_load_explicit(&pool.job_spin_ns, memory_order_relaxed);
            for (int k = 1; asked == seen; k++) {
                CPU_RELAX();
                asked = atomic_load_explicit(&self->go, memory_order_acquire);
                if (asked == seen && (k & 63) == 0 && now_ns() > until) {
                    break;
                }
            }
        }
        if (asked == seen) {
            pthread_mutex_lock(&self->mutex);
            atomic_fetch_add(&pool.asleep, 1);
            while ((asked = atomic_load_explicit(&self->go, memory_order_acquire)) == seen) {
                self->sleeping = 1;
                pthread_cond_wait(&self->wake, &self->mutex);
            }
            self->sleeping = 0;
            atomic_fetch_sub(&pool.asleep, 1);
            pthread_mutex_unlock(&self->mutex);
        }
        seen = asked;
        uint32_t job = atomic_load_explicit(&pool.asked, memory_order_acquire);
        if ((job >> 16) == (asked & 0xFFFF)) { /* (else a later job's: this one is over) */
            wake_below(self->index + 1, (int)(job & 0xFFFF));
        }
        take_pieces(asked, self->index + 1);
    }
    return NULL;
}

/* Starts workers until `wanted` run (fewer where the system refuses a thread). */
static void start_workers(int wanted) {
    if (wanted > MOST_WORKERS) {
        wanted = MOST_WORKERS;
    }
    while (pool.started < wanted) {
        worker_t *w = (worker_t *)calloc(1, sizeof(worker_t));
        if (w == NULL) {
            return;
        }
        pthread_mutex_init(&w->mutex, NULL);
        pthread_cond_init(&w->wake, NULL);
        atomic_store(&w->go, 0);
        w->index = pool.started;
        /* the workers take no signals: Python handles them on its main thread */
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &before);
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attributes, 256 << 10);
        int failed = pthread_create(&w->thread, &attributes, work, w);
        pthread_attr_destroy(&attributes);
        pthread_sigmask(SIG_SETMASK, &before, NULL);
        if (failed) {
            pthread_cond_destroy(&w->wake);
            pthread_mutex_destroy(&w->mutex);
            free(w);
            return;
        }
        pool.workers[pool.started++] = w;
    }
}

static void run_alone(piece_fn fn, void *context, int64_t pieces) {
    participant = 0;
    for (int64_t p = 0; p < pieces; p++) {
        fn(context, p);
    }
}

void pool_run(piece_fn fn, void *context, int64_t pieces, int threads, int64_t bytes) {
    if (threads <= 1 || pieces <= 1 || pieces > (int64_t)PIECE_MASK) {
        run_alone(fn, context, pieces);
        return;
    }
    if (pthread_mutex_trylock(&pool.lock) != 0) {
        run_alone(fn, context, pieces); /* another thread's job holds the pool */
        return;
    }
    atomic_store_explicit(&pool.taken, 1, memory_order_relaxed);
    int most = threads - 1;
    if (most > pieces - 1) {
        most = (int)(pieces - 1);
    }
    int helpers = most;
    if (adapt.cap >= 0 && helpers > adapt.cap) {
        helpers = adapt.cap;
    }
    if (helpers > 0 && atomic_load_explicit(&pool.load_aware, memory_order_relaxed)) {
        /* runnable now and ours: this thread and the workers not asleep (spinning) */
        int spare = load_spare_cpus(1 + pool.started - atomic_load(&pool.asleep));
        if (spare > 0 && helpers > spare - 1) {
            helpers = spare - 1;
        }
    }
    /* every thread it wanted has a CPU: its workers spin longer after it (see above) */
    int unhindered = helpers == most;
    /* long for the threads left it: every thread (what it learns is for short jobs) */
    int64_t long_ns = atomic_load_explicit(&long_job_ns, memory_order_relaxed);
    double estimate_ns = (double)bytes * adapt.ns_a_byte / (helpers + 1);
    int long_job = helpers < most && estimate_ns >= (double)long_ns;
    if (long_job) {
        helpers = most;
    }
    /* a CPU quota's budget spent: the quota's whole CPUs (quota.h), its workers' spin short */
    double job_ns = (double)bytes * adapt.ns_a_byte / (helpers + 1);
    int within_quota = quota_allowed(helpers + 1, job_ns) - 1;
    if (helpers > within_quota) {
        helpers = within_quota;
        unhindered = 0;
    }
    if (helpers == 0) {
        int64_t alone_from = now_ns();
        run_alone(fn, context, pieces);
        time_a_byte((double)bytes, now_ns() - alone_from);
        atomic_store(&pool.last_joined, 0);
        learn(0, threads - 1, 0, 0);
        atomic_store_explicit(&pool.taken, 0, memory_order_relaxed);
        pthread_mutex_unlock(&pool.lock);
        return;
    }
    atomic_store_explicit(&pool.job_spin_ns,
                          atomic_load_explicit(unhindered ? &pool.idle_spin_ns : &pool.spin_ns,
                                               memory_order_relaxed),
                          memory_order_relaxed);
    start_workers(helpers);
    if (helpers > pool.started) {
        helpers = pool.started;
    }
    pool.epoch = (pool.epoch + 1) & 0xFFFF;
    if (pool.epoch == 0) {
        pool.epoch = 1; /* (0 is every worker's starting point) */
    }
    uint32_t epoch = pool.epoch;
    pool.fn = fn;
    pool.context = context;
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.joined, 0, memory_order_relaxed);
    int parts = atomic_load_explicit(&pool.home_ranges, memory_order_relaxed) ? helpers + 1 : 1;
    for (int k = 0; k < parts; k++) {
        uint64_t first = (uint64_t)(pieces * k / parts), end = (uint64_t)(pieces * (k + 1) / parts);
        atomic_store_explicit(&pool.ranges[k].word,
                              ((uint64_t)epoch << (2 * PIECE_BITS)) | (end << PIECE_BITS) | first,
                              memory_order_relaxed);
    }
    atomic_store_explicit(&pool.parts, parts, memory_order_relaxed);
    atomic_store_explicit(&pool.pieces, pieces, memory_order_relaxed);
    atomic_store_explicit(&pool.asked, (epoch << 16) | (uint32_t)helpers, memory_order_release);
    for (int k = 0; k < helpers; k++) {
        atomic_store_explicit(&pool.workers[k]->go, epoch, memory_order_release);
    }
    wake_below(0, helpers);
    int64_t started = now_ns();
    int64_t mine = take_pieces(epoch, 0);
    int64_t own_done = now_ns();
    /* the last pieces may still run on workers: spin a little, then sleep until the last
     * one is done (a sleeping caller leaves its CPU idle for a worker the kernel moved off
     * its own; spinning or yielding would keep it busy) */
    int64_t until = now_ns() + atomic_load_explicit(&pool.caller_spin_ns, memory_order_relaxed);
    for (int k = 1; atomic_load_explicit(&pool.done, memory_order_acquire) < pieces; k++) {
        CPU_RELAX();
        if ((k & 63) == 0 && now_ns() > until) {
            pthread_mutex_lock(&pool.finished_mutex);
            atomic_store(&pool.caller_sleeping, 1);
            while (atomic_load(&pool.done) < pieces) { /* seq_cst with the flag: no lost wake */
                pthread_cond_wait(&pool.finished, &pool.finished_mutex);
            }
            atomic_store(&pool.caller_sleeping, 0);
            pthread_mutex_unlock(&pool.finished_mutex);
            break;
        }
    }
    atomic_store(&pool.last_joined, atomic_load(&pool.joined));
    time_a_byte((double)bytes * (double)mine / (double)pieces, own_done - started);
    if (!long_job) {
        learn(helpers, threads - 1, own_done - started, now_ns() - own_done);
    }
    atomic_store_explicit(&pool.taken, 0, memory_order_relaxed);
    pthread_mutex_unlock(&pool.lock);
}

int pool_taken(void) { return atomic_load_explicit(&pool.taken, memory_order_relaxed); }

int pool_workers(void) { return pool.started; }

int pool_last_joined(void) { return atomic_load(&pool.last_joined); }

int pool_helper_cap(void) { return adapt.cap; }

void pool_set_straggle(int64_t microseconds) {
    adapt.straggle_ns = microseconds * 1000;
    adapt.ns_a_byte = 0.0;
    adapt.cap = -1;
    adapt.calm = 0;
    adapt.probe_after = 8;
    adapt.raised = 0;
}

void pool_set_long_job(int64_t microseconds) {
    atomic_store_explicit(&long_job_ns, microseconds * 1000, memory_order_relaxed);
}

void pool_set_load_aware(int on) { atomic_store(&pool.load_aware, on != 0); }

void pool_set_home_ranges(int on) { atomic_store(&pool.home_ranges, on != 0); }

void pool_set_spin(int64_t microseconds) {
    atomic_store(&pool.spin_ns, microseconds < 0 ? 0 : microseconds * 1000);
}

void pool_set_idle_spin(int64_t microseconds) {
    atomic_store(&pool.idle_spin_ns, microseconds < 0 ? 0 : microseconds * 1000);
}

int64_t pool_job_spin_us(void) { return atomic_load(&pool.job_spin_ns) / 1000; }

int pool_asleep(void) { return atomic_load(&pool.asleep); }

void pool_set_caller_spin(int64_t microseconds) {
    atomic_store(&pool.caller_spin_ns, microseconds < 0 ? 0 : microseconds * 1000);
}

static void before_fork(void) { pthread_mutex_lock(&pool.lock); }

static void after_fork_in_parent(void) { pthread_mutex_unlock(&pool.lock); }

static void after_fork_in_child(void) {
    /* only the forking thread exists here: the parent's workers are gone */
    memset(pool.workers, 0, sizeof(pool.workers));
    pool.started = 0;
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&pool.lock, &fresh, sizeof(fresh));
    memcpy(&pool.finished_mutex, &fresh, sizeof(fresh));
    pthread_cond_t woken = PTHREAD_COND_INITIALIZER;
    memcpy(&pool.finished, &woken, sizeof(woken));
    atomic_store(&pool.caller_sleeping, 0);
    atomic_store(&pool.asleep, 0);
    atomic_store(&pool.taken, 0);
    adapt.cap = -1;
    adapt.calm = 0;
    adapt.probe_after = 8;
    adapt.raised = 0;
}

int pool_init(void) { return pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); }
