/* The machine's load (load.h). A job that asks every CPU of its set while another process
 * keeps one busy oversubscribes the set: a worker that shares a CPU with it is descheduled
 * for a time slice with a piece in hand, and idle workers' spinning keeps the caller itself
 * waiting for a CPU between calls. The pool asks only the CPUs left free. */
#define _GNU_SOURCE
#include "load.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__) /* (/proc/loadavg and sched_getaffinity: elsewhere no estimate) */
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#define HAS_LOADAVG 1
#else
#define HAS_LOADAVG 0
#endif

int load_estimate_spare(const char *loadavg, int ours, int in_set, int online) {
    const char *p = loadavg;
    for (int field = 0; field < 3; field++) { /* the three load averages */
        while (*p == ' ') {
            p++;
        }
        while (*p != '\0' && *p != ' ') {
            p++;
        }
    }
    while (*p == ' ') {
        p++;
    }
    if (*p < '0' || *p > '9') {
        return -1;
    }
    char *end;
    long running = strtol(p, &end, 10);
    if (*end != '/') {
        return -1;
    }
    long others = running - ours;
    long outside = (long)online - in_set;
    if (others < 0) {
        others = 0;
    }
    if (outside < 0) {
        outside = 0;
    }
    long taken = others > outside ? others - outside : 0;
    long spare = (long)in_set - taken;
    return spare < 1 ? 1 : (int)spare;
}

#if HAS_LOADAVG
static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int load_spare_cpus(int ours) {
    static int64_t read_at = INT64_MIN / 2;
    static int spare = -1;
    static int unavailable = 0;
    if (unavailable) {
        return -1;
    }
    int64_t now = monotonic_ns();
    if (now - read_at < 1000000) {
        return spare;
    }
    read_at = now;
    char text[256];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        unavailable = 1;
        return spare = -1;
    }
    ssize_t got = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (got <= 0) {
        return spare = -1;
    }
    text[got] = '\0';
    cpu_set_t set;
    int in_set = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    int online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (in_set <= 0 || online <= 0) {
        return spare = -1;
    }
    return spare = load_estimate_spare(text, ours, in_set, online);
}
#else
int load_spare_cpus(int ours) {
    (void)ours;
    return -1;
}
#endif
