/* A container's CPU quota (quota.h). A group that spends its quota before a period ends
 * (100 ms by default) is stopped until the next one: every thread of it, the caller of a
 * call included, waits up to the rest of the period. Threads that outnumber the quota (3
 * threads for 2.5 CPUs, 2 for 1.5: its whole CPUs rounded up, as the thread count is
 * chosen) reach that point in back-to-back calls; on a 2-core VM in a group of 1.5 CPUs,
 * one call in a hundred of an op-by-op chain took 24 ms where its median was 1.7. The
 * pool asks the extra threads only while this budget lasts. */
#define _GNU_SOURCE
#include "quota.h"

#include <time.h>

int quota_threads(quota_budget_t *budget, int wanted, int64_t now_ns, int64_t cpu_ns,
                  double job_ns) {
    if (budget->millicpus <= 0) {
        return wanted;
    }
    double cpus = (double)budget->millicpus / 1000.0;
    int whole = (int)(budget->millicpus / 1000);
    if (whole < 1) {
        whole = 1;
    }
    /* (what the quota's whole CPUs leave: the whole threads may spend at the full rate) */
    double spare = 0.025 * cpus < cpus - whole ? 0.025 * cpus : cpus - whole;
    double rate = 0.95 * cpus, most = spare > 0 ? spare * (double)budget->period_ns : 0.0;
    if (budget->wall_at == 0 || now_ns < budget->wall_at || cpu_ns < budget->cpu_at) {
        budget->tokens_ns = most; /* (first use, or a forked child's clocks) */
    } else {
        budget->tokens_ns += rate * (double)(now_ns - budget->wall_at) -
                             (double)(cpu_ns - budget->cpu_at);
        if (budget->tokens_ns > most) {
            budget->tokens_ns = most;
        }
    }
    budget->wall_at = now_ns;
    budget->cpu_at = cpu_ns;
    if (budget->tokens_ns - ((double)wanted - rate) * job_ns > 0) {
        return wanted;
    }
    return wanted < whole ? wanted : whole;
}

static quota_budget_t own = {.millicpus = 0, .period_ns = 100000000};

void quota_set(int64_t millicpus, int64_t period_us) {
    own.millicpus = millicpus > 0 ? millicpus : 0;
    own.period_ns = period_us > 0 ? period_us * 1000 : 100000000;
    own.wall_at = 0;
}

static int64_t clock_ns(clockid_t which) {
    struct timespec t;
    clock_gettime(which, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int quota_allowed(int wanted, double job_ns) {
    if (own.millicpus <= 0 || (int64_t)wanted * 1000 <= own.millicpus) {
        return wanted;
    }
    return quota_threads(&own, wanted, clock_ns(CLOCK_MONOTONIC),
                         clock_ns(CLOCK_PROCESS_CPUTIME_ID), job_ns);
}
