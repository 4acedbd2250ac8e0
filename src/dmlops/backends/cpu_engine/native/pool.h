/* A fork-safe pool of worker threads that share one job's pieces dynamically. */
#ifndef DMLOPS_POOL_H
#define DMLOPS_POOL_H

#include <stdint.h>

/* Moves piece `piece` of the job whose state is `context`. */
typedef void (*piece_fn)(void *context, int64_t piece);

/* Runs pieces [0, pieces) on the calling thread and up to `threads` - 1 workers; returns
 * when every piece is done. The caller takes pieces too, and pieces are claimed one at a
 * time (a thread's own range first, then what is left of the others'), so a worker the
 * kernel has not scheduled delays nothing it has not claimed. Where another thread's job
 * holds the pool, the caller runs every piece itself. `bytes`: what the
 * job moves; a job long for the threads its machine's load leaves it (LONG_JOB_NS) asks
 * every thread (`threads`) regardless. */
void pool_run(piece_fn fn, void *context, int64_t pieces, int threads, int64_t bytes);

/* How long a job must take on the threads the load and the learnt cap leave it (estimated
 * from the time a byte took a thread in the jobs before it) for it to ask every thread: a
 * scheduler slice's wait for a worker that shares its core with other work is then a small
 * part of the job, and that worker's share a gain. */
#define LONG_JOB_NS 16000000LL

/* Whether another thread's job holds the pool now (a job started now would run alone). */
int pool_taken(void);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t pool_now_ns(void);

/* Workers started so far (0 in a fresh child after fork()). */
int pool_workers(void);

/* Workers that took part (a piece or more each) in the last job that could have asked
 * helpers: 0 where the machine's load or what the pool learnt left it to the caller. */
int pool_last_joined(void);

/* Helpers a job may wake now, as learnt from straggling jobs (-1: no limit). */
int pool_helper_cap(void);

/* A caller's wait for the last pieces longer than this (and than its own share) counts as
 * a straggle; resets what was learnt (the helper cap, the time a byte takes). */
void pool_set_straggle(int64_t microseconds);

/* Whether a job asks only the CPUs of the set that other runnable tasks leave free (load.h;
 * on by default). */
void pool_set_load_aware(int on);

/* Whether a job's pieces are cut into one range a thread, each thread taking its own range
 * first (on by default: a call repeated on the same arrays finds each part of them in the
 * cache of the core that moved it last), or kept in one range all threads take from. */
void pool_set_home_ranges(int on);

/* How long a job must take on the threads its machine's load leaves it to ask every thread
 * (LONG_JOB_NS to begin with). */
void pool_set_long_job(int64_t microseconds);

/* How long an idle worker spins before it sleeps, in microseconds, after a job that the
 * machine's load (or what the pool learnt of it) left fewer threads than it wanted. */
void pool_set_spin(int64_t microseconds);

/* The same after a job that found a free CPU for every thread it wanted. */
void pool_set_idle_spin(int64_t microseconds);

/* The spin (µs) the last job that asked helpers gave its workers. */
int64_t pool_job_spin_us(void);

/* Workers asleep now (not spinning). */
int pool_asleep(void);

/* How long a caller with no piece left to take spins for the last ones before it sleeps
 * (its core then idle for a descheduled worker), in microseconds. */
void pool_set_caller_spin(int64_t microseconds);

/* The range of the job whose piece the calling thread runs: 0 the caller's (the whole job
 * where the caller runs it alone), k + 1 worker k's (-1 before a thread's first piece). */
int pool_participant(void);

/* Registers the fork handlers; call once when the module loads. */
int pool_init(void);

#endif
