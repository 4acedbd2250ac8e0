/* A container's CPU quota (quota.h). A group that spends its quota before a period ends
 * (100 ms by default) is stopped until the next one: every thread of it, the caller of a
 * call included, waits up to the rest of the period. Threads that outnumber the quota (3
 * threads for 2.5 CPUs, 2 for 1.5: its whole CPUs rounded up, as the thread count is
 * chosen) reach that point in back-to-back calls; on a 2-core VM in a group of 1.5 CPUs,
 * one call in a hundred of an op-by-op chain took 24 ms where its median was 1.7. So do the
 * quota's whole CPUs where other processes of the group (a server's workers, a pool's
 * children) spend part of it. The pool asks threads only while this budget lasts. */
#define _GNU_SOURCE
#include "quota.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the group's file is read at most this often; the others' use averaged over this long */
#define GROUP_EVERY_NS 1000000
#define OTHERS_OVER_NS 10000000.0
/* CPUs of the others' average taken for the two counters' disagreement (rounding) */
#define OTHERS_NOISE 0.02

/* the others' CPU time since the group's last reading: spent from the budget, and their
 * rate averaged in */
static void read_group(quota_budget_t *budget, int64_t now_ns, int64_t cpu_ns, int64_t group_ns) {
    if (budget->group_at >= 0 && group_ns >= budget->group_at && now_ns > budget->group_wall) {
        /* the group's counter charges a running thread at the scheduler's ticks, the
         * process's clock at once: what it lags behind is owed to the next readings */
        double theirs = budget->owed + (double)(group_ns - budget->group_at) -
                        (double)(cpu_ns - budget->own_at);
        budget->owed = theirs < 0 ? theirs : 0.0;
        if (theirs < 0) {
            theirs = 0;
        }
        budget->tokens_ns -= theirs;
        double span = (double)(now_ns - budget->group_wall);
        double weight = span >= OTHERS_OVER_NS ? 1.0 : span / OTHERS_OVER_NS;
        budget->recent = theirs / span;
        budget->others += (budget->recent - budget->others) * weight;
    }
    budget->group_at = group_ns;
    budget->group_wall = now_ns;
    budget->own_at = cpu_ns;
}

int quota_threads(quota_budget_t *budget, int wanted, int64_t now_ns, int64_t cpu_ns,
                  int64_t group_ns, double job_ns) {
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
        budget->group_at = -1;
        budget->others = 0.0;
        budget->recent = 0.0;
        budget->owed = 0.0;
    } else {
        budget->tokens_ns += rate * (double)(now_ns - budget->wall_at) -
                             (double)(cpu_ns - budget->cpu_at);
    }
    if (group_ns >= 0) {
        read_group(budget, now_ns, cpu_ns, group_ns);
    }
    if (budget->tokens_ns > most) {
        budget->tokens_ns = most;
    }
    /* (a period's debt at most: the kernel forgives the rest once it has stopped the group) */
    if (budget->tokens_ns < -cpus * (double)budget->period_ns) {
        budget->tokens_ns = -cpus * (double)budget->period_ns;
    }
    budget->wall_at = now_ns;
    budget->cpu_at = cpu_ns;
    /* (the others' spending as the larger of its last reading's and its average: a rise
     * counts at once, a fall once it lasts) */
    double others = budget->recent > budget->others ? budget->recent : budget->others;
    if (budget->tokens_ns - ((double)wanted - (rate - others)) * job_ns > 0) {
        return wanted;
    }
    /* the quota's whole CPUs while the group keeps within the budget, else the threads its
     * other processes leave room for */
    int room = whole;
    if (budget->tokens_ns <= 0 && others > OTHERS_NOISE) {
        double left = cpus - others;
        room = left < 1.0 ? 1 : left < (double)whole ? (int)left : whole;
    }
    return wanted < room ? wanted : room;
}

static quota_budget_t own = {.millicpus = 0, .period_ns = 100000000, .group_at = -1};
static int usage_fd = -1;

void quota_set(int64_t millicpus, int64_t period_us) {
    own.millicpus = millicpus > 0 ? millicpus : 0;
    own.period_ns = period_us > 0 ? period_us * 1000 : 100000000;
    own.wall_at = 0;
}

int quota_set_usage(const char *path) {
    if (usage_fd >= 0) {
        close(usage_fd);
        usage_fd = -1;
    }
    own.wall_at = 0;
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    usage_fd = open(path, O_RDONLY | O_CLOEXEC);
    return usage_fd >= 0 ? 0 : -1;
}

int64_t quota_parse_usage(const char *text) {
    static const char key[] = "usage_usec ";
    int64_t scale = 1; /* v1 `cpuacct.usage`: nanoseconds */
    if (strncmp(text, key, sizeof key - 1) == 0) {
        text += sizeof key - 1; /* v2 `cpu.stat`: its first line, microseconds */
        scale = 1000;
    }
    if (*text < '0' || *text > '9') {
        return -1;
    }
    char *end;
    long long value = strtoll(text, &end, 10);
    if (*end != '\n' && *end != '\0') {
        return -1;
    }
    return (int64_t)value * scale;
}

static int64_t group_usage(void) {
    char text[256];
    ssize_t got = pread(usage_fd, text, sizeof text - 1, 0);
    if (got <= 0) {
        return -1;
    }
    text[got] = '\0';
    char *line_end = strchr(text, '\n');
    if (line_end != NULL) {
        line_end[1] = '\0';
    }
    return quota_parse_usage(text);
}

static int64_t clock_ns(clockid_t which) {
    struct timespec t;
    clock_gettime(which, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int quota_allowed(int wanted, double job_ns) {
    if (own.millicpus <= 0 || wanted <= 1 ||
        (usage_fd < 0 && (int64_t)wanted * 1000 <= own.millicpus)) {
        return wanted;
    }
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    int64_t group = -1;
    if (usage_fd >= 0 && (own.wall_at == 0 || own.group_at < 0 ||
                          now < own.group_wall || now - own.group_wall >= GROUP_EVERY_NS)) {
        group = group_usage();
    }
    return quota_threads(&own, wanted, now, clock_ns(CLOCK_PROCESS_CPUTIME_ID), group, job_ns);
}
