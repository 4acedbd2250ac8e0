/* The machine's load: how many CPUs of this process's set other runnable tasks leave free. */
#ifndef DMLOPS_LOAD_H
#define DMLOPS_LOAD_H

/* CPUs of the set that `/proc/loadavg`'s runnable count (its fourth field, "running/all")
 * leaves free once `ours` of those runnable tasks are this process's own: the others are
 * counted against the CPUs outside the set first (they may run there), the rest against the
 * set; at least 1. -1 where the text has no runnable count. */
int load_estimate_spare(const char *loadavg, int ours, int in_set, int online);

/* The estimate for this process now, read at most once a millisecond (the last one kept
 * between), with `ours` of its own threads runnable; -1 where the system gives no count.
 * Not for two threads at once: the pool calls it holding its lock. */
int load_spare_cpus(int ours);

#endif
