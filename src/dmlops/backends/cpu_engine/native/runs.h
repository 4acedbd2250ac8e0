/* Contiguous runs of 32 bytes or more in 32-byte vector moves (AVX2), for rows copied one
 * after another: inline, so that no call of memcpy and no choice of its size class is paid
 * a row, and a run whose length is a constant compiles to its moves alone. */
#ifndef DMLOPS_RUNS_H
#define DMLOPS_RUNS_H

#include <stdint.h>

#include "loose.h"

/* The longest row of a copy moved this way: rows of 100 to 760 bytes moved 1.1-1.4x faster
 * than by memcpy a row on one thread of the development VM; longer ones were not measured
 * faster, and keep memcpy. Copies that stream their output past the caches keep doing so
 * (copies.c); indexed copies move whole rows of any length this way (indexed.c). */
#define WIDE_RUN_MOST 768

#if X86
#include <immintrin.h>

#define RUN_LOAD(at) _mm256_loadu_si256((const __m256i *)(const void *)(s + (at)))
#define RUN_STORE(at, v) _mm256_storeu_si256((__m256i *)(void *)(d + (at)), (v))

/* A run of 32 * h to 64 * h bytes (h: 1, 2 or 4) as its first and its last 32 * h bytes,
 * which may overlap: every load before any store, as glibc's memcpy moves short runs, so
 * that a gathered row's cache misses are waited for together (20,000 rows of 100 bytes on
 * a VM thread 0.28 -> 0.20 ms against load-store pairs; numpy.take 0.20). Written out for
 * each h: an array of vectors indexed by a variable went through the stack. */
__attribute__((target("avx2"))) static inline void run_ends(char *restrict d,
                                                            const char *restrict s,
                                                            int64_t bytes) {
    const int64_t end = bytes - 32;
    if (bytes <= 64) {
        const __m256i a = RUN_LOAD(0), z = RUN_LOAD(end);
        RUN_STORE(0, a);
        RUN_STORE(end, z);
    } else if (bytes <= 128) {
        const __m256i a = RUN_LOAD(0), b = RUN_LOAD(32), y = RUN_LOAD(end - 32),
                      z = RUN_LOAD(end);
        RUN_STORE(0, a);
        RUN_STORE(32, b);
        RUN_STORE(end - 32, y);
        RUN_STORE(end, z);
    } else {
        const __m256i a = RUN_LOAD(0), b = RUN_LOAD(32), c = RUN_LOAD(64), e = RUN_LOAD(96);
        const __m256i w = RUN_LOAD(end - 96), x = RUN_LOAD(end - 64), y = RUN_LOAD(end - 32),
                      z = RUN_LOAD(end);
        RUN_STORE(0, a);
        RUN_STORE(32, b);
        RUN_STORE(64, c);
        RUN_STORE(96, e);
        RUN_STORE(end - 96, w);
        RUN_STORE(end - 64, x);
        RUN_STORE(end - 32, y);
        RUN_STORE(end, z);
    }
}

/* `bytes` (32 or more) of s to d, which do not meet; nothing outside the run is read or
 * written. Runs over 256 bytes: 128 bytes a step (four loads, then four stores), then 32,
 * then the run's last 32 bytes (which may overlap the step before). */
__attribute__((target("avx2"))) static inline void wide_run(char *restrict d,
                                                            const char *restrict s,
                                                            int64_t bytes) {
    if (bytes <= 256) {
        run_ends(d, s, bytes);
        return;
    }
    const int64_t last = bytes - 32;
    int64_t k = 0;
    for (; k + 128 <= last; k += 128) {
        const __m256i a = RUN_LOAD(k), b = RUN_LOAD(k + 32), c = RUN_LOAD(k + 64),
                      e = RUN_LOAD(k + 96);
        RUN_STORE(k, a);
        RUN_STORE(k + 32, b);
        RUN_STORE(k + 64, c);
        RUN_STORE(k + 96, e);
    }
    for (; k < last; k += 32) {
        RUN_STORE(k, RUN_LOAD(k));
    }
    RUN_STORE(last, RUN_LOAD(last));
}

#undef RUN_LOAD
#undef RUN_STORE
#endif

#endif
