/* How often, and for how long, each CPU is taken away from a thread that never blocks.

   One thread pinned to each CPU named reads the monotonic clock in a loop for the given
   seconds; wherever two reads lie more than the threshold apart the thread was not
   running (an interrupt, another task, the hypervisor taking the virtual CPU), and that
   gap is printed: "gap <cpu> <start ns from the run's start> <length ns>". A last line a
   CPU gives its reads: "reads <cpu> <count>".

   cc -O2 -pthread cpu_jitter.c -o cpu_jitter; ./cpu_jitter SECONDS THRESHOLD_NS CPU...
   (benchmarks/cpu_jitter.py builds, runs and reads it.) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MOST_GAPS 200000

typedef struct {
    int cpu;
    int64_t reads, n_gaps;
    int64_t *starts, *lengths;
} spinner_t;

static int64_t run_ns, threshold_ns, origin_ns;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void *spin(void *arg) {
    spinner_t *s = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(s->cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
        fprintf(stderr, "could not pin a thread to CPU %d\n", s->cpu);
        exit(2);
    }
    int64_t last = now_ns();
    const int64_t end = origin_ns + run_ns;
    while (last < end) {
        const int64_t t = now_ns();
        if (t - last > threshold_ns && s->n_gaps < MOST_GAPS) {
            s->starts[s->n_gaps] = last - origin_ns;
            s->lengths[s->n_gaps] = t - last;
            s->n_gaps++;
        }
        s->reads++;
        last = t;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SECONDS THRESHOLD_NS CPU...\n", argv[0]);
        return 2;
    }
    run_ns = (int64_t)(atof(argv[1]) * 1e9);
    threshold_ns = atoll(argv[2]);
    const int n = argc - 3;
    spinner_t *spinners = calloc((size_t)n, sizeof *spinners);
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    origin_ns = now_ns() + 50000000; /* 50 ms for every thread to start and pin itself */
    for (int i = 0; i < n; i++) {
        spinners[i].cpu = atoi(argv[3 + i]);
        spinners[i].starts = malloc(MOST_GAPS * sizeof(int64_t));
        spinners[i].lengths = malloc(MOST_GAPS * sizeof(int64_t));
        pthread_create(&threads[i], NULL, spin, &spinners[i]);
    }
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < n; i++) {
        const spinner_t *s = &spinners[i];
        for (int64_t g = 0; g < s->n_gaps; g++)
            if (s->starts[g] >= 0) printf("gap %d %lld %lld\n", s->cpu, (long long)s->starts[g],
                                          (long long)s->lengths[g]);
        printf("reads %d %lld\n", s->cpu, (long long)s->reads);
    }
    return 0;
}
