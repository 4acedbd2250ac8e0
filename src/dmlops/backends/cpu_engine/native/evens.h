/* Every second element of a row into a contiguous run (a stride-2 slice, a Focus stem's
 * columns, a pixel unshuffle's). */
#ifndef DMLOPS_EVENS_H
#define DMLOPS_EVENS_H

#include <stdint.h>

/* d[j] = s[2 j] for the first elements of n (`size`-byte elements, 4 or 8), in 32-byte
 * vectors where the CPU has AVX2 (reverse.h's setting allows it); returns how many it moved,
 * never reading past s's element 2 (n - 1): the rest is the caller's loop. */
int64_t every_second(char *d, const char *s, int64_t n, int64_t size);

/* d0[j] = s[2 j] and d1[j] = s[2 j + 1] for the first elements of n (a row of 2 n elements
 * dealt to two rows: a pixel unshuffle's, a space-to-depth's column phases), in 32-byte
 * vectors where the CPU has AVX2; returns how many of each it moved (the rest: the
 * caller's loop). */
int64_t deal_two(char *d0, char *d1, const char *s, int64_t n, int64_t size);

/* The longest rows (n * size bytes) deal_two moves (0: none; longer ones are the caller's). */
void evens_set_deal_most(int64_t bytes);

/* the bytes of a row (n * size) from which every_second moves any */
#define EVENS_LEAST_BYTES 64

/* the bytes of a row (n * size) from which deal_two moves any: one vector each (its two
 * loads read the 2 n elements that the two rows read) */
#define DEAL_LEAST_BYTES 32

#endif
