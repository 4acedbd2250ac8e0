/* A container's CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`): its budget. */
#ifndef DMLOPS_QUOTA_H
#define DMLOPS_QUOTA_H

#include <stdint.h>

/* What the budget knows: the quota, the last clock readings and what is left. */
typedef struct {
    int64_t millicpus;  /* the quota, in thousandths of a CPU; 0: none */
    int64_t period_ns;  /* the quota's period (100 ms unless the group says otherwise) */
    int64_t wall_at;    /* the last reading of a monotonic clock (0: none yet) */
    int64_t cpu_at;     /* the process's CPU time then */
    double tokens_ns;   /* CPU time the group may still spend above the quota's rate */
    int64_t group_at;   /* the group's CPU time (every process's) at its last reading; -1: none */
    int64_t group_wall; /* when it was read */
    int64_t own_at;     /* the process's CPU time then */
    double others;      /* CPUs the group's other processes used lately (a moving average) */
    double recent;      /* and between the group's last two readings */
    double owed;        /* what the group's counter lagged behind the process's clock (<= 0) */
    int room;           /* the threads within the whole CPUs the last reading left the process */
} quota_budget_t;

/* Threads a job may use now, of `wanted`: all of them where the budget outlasts the job
 * (`job_ns`, its estimated wall time on them; 0 where unknown), else the threads the quota
 * leaves this process beside the group's other processes, at most its whole CPUs (at least
 * one). The budget fills at 95 % of the quota's rate, in wall time, drains by the CPU time
 * the group spent (this process's, and the others' where `group_ns` is read), and holds at
 * most 2.5 % of a period's quota, and no more than the quota's fraction above its whole CPUs
 * leaves (those threads alone may spend at 100 %): over any period the group then spends at
 * most the quota, so the kernel never stops its threads for the rest of one. `now_ns`: a
 * monotonic clock; `cpu_ns`: the process's CPU time (every thread's); `group_ns`: the
 * group's CPU time, or -1 where not read this time. A clock that went back (a child after
 * fork()) starts the budget anew. */
int quota_threads(quota_budget_t *budget, int wanted, int64_t now_ns, int64_t cpu_ns,
                  int64_t group_ns, double job_ns);

/* This process's quota (0: none) and its period; the budget starts anew. */
void quota_set(int64_t millicpus, int64_t period_us);

/* The file that counts the CPU time of the quota's group, every process of it (v2
 * `cpu.stat`'s usage_usec, v1 `cpuacct.usage`); NULL or "": none, the budget counts this
 * process's own. 0, or -1 with errno where it cannot be opened. */
int quota_set_usage(const char *path);

/* A usage file's text as nanoseconds (-1: not one). */
int64_t quota_parse_usage(const char *text);

/* The files that set the quota (v2 `cpu.max`, `period_path` ""; v1 `cpu.cfs_quota_us` and
 * `cpu.cfs_period_us`; "": none), read again at most once a second: a quota changed while
 * the process runs (a Kubernetes pod resized in place, `docker update --cpus`) replaces the
 * budget's, a quota set by `quota_set` stays until the files change. 0, or -1 with errno. */
int quota_watch(const char *limit_path, const char *period_path);

/* The quota of the texts of those files as thousandths of a CPU (0: none, "max" or "-1")
 * and its period in µs; -1 where they are not a quota's. */
int quota_parse_limit(const char *limit_text, const char *period_text, int64_t *millicpus,
                      int64_t *period_us);

/* The budget's quota now: thousandths of a CPU (0: none) and its period in µs. */
void quota_now(int64_t *millicpus, int64_t *period_us);

/* The quota as its watched files say now, read again where a second has passed: thousandths
 * of a CPU (0: none; -1: no files watched). */
int64_t quota_files_now(void);

/* quota_threads on this process's budget with its clocks read now (the group's file at most
 * once a millisecond; no clock read and `wanted` returned where no quota is set, or where
 * `wanted` is within its whole CPUs and no group's file is read; within them between the
 * group's readings, the room the last one left, by a monotonic clock's read alone). Not for
 * two threads at once: the pool calls it holding its lock. */
int quota_allowed(int wanted, double job_ns);

#endif
