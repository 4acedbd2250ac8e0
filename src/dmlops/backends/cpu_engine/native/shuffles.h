/* Rows read every few elements (steps of -4 to 4 but -1, 0 and 1; 1-, 2- and 4-byte
 * elements, where chosen: shuffles_set) by byte shuffles of 16-byte vectors: the strided
 * windows, a stride-3 stem's, a reversed stride-2 slice's rows. */
#ifndef DMLOPS_SHUFFLES_H
#define DMLOPS_SHUFFLES_H

#include <stdint.h>

/* d[j] = s[step * j] (elements of `size` bytes) for the first elements of n, 16 bytes of d a
 * vector, where the CPU has AVX2 (reverse.h's setting allows it) and `shuffles_set` does;
 * returns how many it moved (0 where it does not apply: the rest is the caller's loop).
 * Never reads outside the row's own elements (from s[0] to s[step * (n - 1)]). */
int64_t shuffled_steps(char *d, const char *s, int64_t n, int64_t size, int64_t step);

/* Whether shuffled_steps moves rows of this element size and step (and wide enough rows,
 * n elements) at all here. */
int shuffles_apply(int64_t size, int64_t step, int64_t n);

/* Where the shuffles are used: 1 (to begin with) the element sizes and steps where they
 * won on Xeon threads (1-byte elements at steps 3, -2, -3, -4), 2 every one they can move
 * (for tests and A/B timings on other machines), 0 none (the loops they replace). */
void shuffles_set(int level);

#endif
