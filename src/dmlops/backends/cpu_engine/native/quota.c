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

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the group's file is read at most this often, and no more than one part in 200 of the
 * time (a v2 `cpu.stat` read flushes the group's statistics: 1-2 µs on a quiet host, more
 * where many groups are busy); the others' use averaged over this long */
#define GROUP_EVERY_NS 1000000
#define GROUP_READ_SHARE 200
#define OTHERS_OVER_NS 10000000.0
/* CPUs of the others' average taken for the two counters' disagreement (rounding) */
#define OTHERS_NOISE 0.02

static int64_t clock_ns(clockid_t which) {
    struct timespec t;
    clock_gettime(which, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

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
    /* the quota's whole CPUs while the group keeps within the budget, else the threads its
     * other processes leave room for */
    int room = whole;
    if (budget->tokens_ns <= 0 && others > OTHERS_NOISE) {
        double left = cpus - others;
        room = left < 1.0 ? 1 : left < (double)whole ? (int)left : whole;
    }
    budget->room = room;
    if (budget->tokens_ns - ((double)wanted - (rate - others)) * job_ns > 0) {
        return wanted;
    }
    return wanted < room ? wanted : room;
}

static quota_budget_t own = {.millicpus = 0, .period_ns = 100000000, .group_at = -1};
static int usage_fd = -1;
static int64_t group_every_ns = GROUP_EVERY_NS;

/* the quota's own files (quota_watch), the last quota read from them and when */
#define LIMIT_EVERY_NS 1000000000
static int limit_fd = -1, period_fd = -1;
static int64_t limit_read_at = 0, limit_seen = -1, period_seen = -1;

void quota_set(int64_t millicpus, int64_t period_us) {
    own.millicpus = millicpus > 0 ? millicpus : 0;
    own.period_ns = period_us > 0 ? period_us * 1000 : 100000000;
    own.wall_at = 0;
}

static void close_file(int *fd) {
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

int quota_set_usage(const char *path) {
    close_file(&usage_fd);
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

void quota_now(int64_t *millicpus, int64_t *period_us) {
    *millicpus = own.millicpus;
    *period_us = own.period_ns / 1000;
}

static int64_t parse_count(const char *text, const char **end) {
    char *stop;
    long long value = strtoll(text, &stop, 10);
    *end = stop;
    return stop == text ? -2 : (int64_t)value;
}

int quota_parse_limit(const char *limit_text, const char *period_text, int64_t *millicpus,
                      int64_t *period_us) {
    const char *at = limit_text, *end;
    int64_t quota = -1;
    if (strncmp(at, "max", 3) == 0) {
        end = at + 3;
    } else {
        quota = parse_count(at, &end);
        if (quota == -2 || (quota < 0 && quota != -1)) {
            return -1;
        }
    }
    int64_t period = parse_count(period_text != NULL ? period_text : end, &end);
    if (period <= 0 || (*end != '\n' && *end != '\0')) {
        return -1;
    }
    /* (rounded, at least 1, as the engine is told the quota when it loads) */
    *millicpus = quota <= 0 ? 0 : (quota * 1000 + period / 2) / period;
    if (quota > 0 && *millicpus == 0) {
        *millicpus = 1;
    }
    *period_us = period;
    return 0;
}

static int read_text(int fd, char *text, size_t size) {
    ssize_t got = pread(fd, text, size - 1, 0);
    if (got <= 0) {
        return -1;
    }
    text[got] = '\0';
    return 0;
}

/* the quota's files read again; a change from what they said before replaces the budget's */
static void read_limit(int64_t now) {
    char limit[128], period[64];
    int64_t millicpus, period_us;
    limit_read_at = now;
    if (read_text(limit_fd, limit, sizeof limit) != 0 ||
        (period_fd >= 0 && read_text(period_fd, period, sizeof period) != 0) ||
        quota_parse_limit(limit, period_fd >= 0 ? period : NULL, &millicpus, &period_us) != 0) {
        return;
    }
    if (millicpus != limit_seen || period_us != period_seen) {
        if (limit_seen >= 0) {
            quota_set(millicpus, period_us);
        }
        limit_seen = millicpus;
        period_seen = period_us;
    }
}

int quota_watch(const char *limit_path, const char *period_path) {
    close_file(&limit_fd);
    close_file(&period_fd);
    limit_read_at = 0;
    limit_seen = period_seen = -1;
    if (limit_path == NULL || limit_path[0] == '\0') {
        return 0;
    }
    limit_fd = open(limit_path, O_RDONLY | O_CLOEXEC);
    if (limit_fd >= 0 && period_path != NULL && period_path[0] != '\0') {
        period_fd = open(period_path, O_RDONLY | O_CLOEXEC);
        if (period_fd < 0) {
            close_file(&limit_fd);
        }
    }
    if (limit_fd < 0) {
        return -1;
    }
    read_limit(clock_ns(CLOCK_MONOTONIC)); /* (what they say now: the quota it was given) */
    return 0;
}

static int64_t group_usage(void) {
    char text[256];
    if (read_text(usage_fd, text, sizeof text) != 0) {
        return -1;
    }
    char *line_end = strchr(text, '\n');
    if (line_end != NULL) {
        line_end[1] = '\0';
    }
    return quota_parse_usage(text);
}

/* the quota's files read again where a second has passed since (a clock read; 0: none
 * watched, no clock read) */
static int64_t refresh_limit(void) {
    if (limit_fd < 0) {
        return 0;
    }
    int64_t now = clock_ns(CLOCK_MONOTONIC);
    if (now < limit_read_at || now - limit_read_at >= LIMIT_EVERY_NS) {
        read_limit(now);
    }
    return now;
}

int64_t quota_files_now(void) {
    return refresh_limit() != 0 ? limit_seen : -1;
}

int quota_allowed(int wanted, double job_ns) {
    if (wanted <= 1) {
        return wanted;
    }
    int64_t now = refresh_limit();
    int within = (int64_t)wanted * 1000 <= own.millicpus;
    if (own.millicpus <= 0 || (usage_fd < 0 && within)) {
        return wanted;
    }
    if (now == 0) {
        now = clock_ns(CLOCK_MONOTONIC);
    }
    int due = usage_fd >= 0 && (own.wall_at == 0 || own.group_at < 0 || now < own.group_wall ||
                                now - own.group_wall >= group_every_ns);
    if (within && !due) {
        /* (within the whole CPUs between the group's readings: the room the last one left,
         * no read of the process's CPU clock, a system call of about 0.5 µs) */
        return wanted < own.room ? wanted : own.room;
    }
    int64_t group = -1;
    if (due) {
        int64_t before = clock_ns(CLOCK_MONOTONIC);
        group = group_usage();
        int64_t took = clock_ns(CLOCK_MONOTONIC) - before;
        group_every_ns = took * GROUP_READ_SHARE > GROUP_EVERY_NS ? took * GROUP_READ_SHARE
                                                                 : GROUP_EVERY_NS;
        if (group < 0) {
            close_file(&usage_fd); /* (a counter that cannot be read: the process's own time) */
        }
    }
    return quota_threads(&own, wanted, now, clock_ns(CLOCK_PROCESS_CPUTIME_ID), group, job_ns);
}
