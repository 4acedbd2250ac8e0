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
    double tokens_ns;   /* CPU time the process may still spend above the quota's rate */
} quota_budget_t;

/* Threads a job may use now, of `wanted`: all of them where the budget outlasts the job
 * (`job_ns`, its estimated wall time on them; 0 where unknown), else the quota's whole CPUs
 * (at least one). The budget fills at 95 % of the quota's rate, in wall time, drains by the
 * CPU time the process spent, and holds at most 2.5 % of a period's quota, and no more than
 * the quota's fraction above its whole CPUs leaves (those threads alone may spend at 100 %):
 * over any period the process then spends at most the quota, so the kernel never stops its
 * threads for the rest of one. `now_ns`: a monotonic clock; `cpu_ns`: the process's CPU time (every
 * thread's). A clock that went back (a child after fork()) starts the budget anew. */
int quota_threads(quota_budget_t *budget, int wanted, int64_t now_ns, int64_t cpu_ns,
                  double job_ns);

/* This process's quota (0: none) and its period; the budget starts anew. */
void quota_set(int64_t millicpus, int64_t period_us);

/* quota_threads on this process's budget with its clocks read now (no clock read and
 * `wanted` returned where no quota is set, or where `wanted` is within it). Not for two
 * threads at once: the pool calls it holding its lock. */
int quota_allowed(int wanted, double job_ns);

#endif
