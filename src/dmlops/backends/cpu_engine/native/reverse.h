/* Rows read backwards: a run of elements whose source steps back one element each. */
#ifndef DMLOPS_REVERSE_H
#define DMLOPS_REVERSE_H

#include <stdint.h>

/* n elements of `size` bytes (1, 2, 4 or 8) into d's contiguous run, element j from
 * s - j * size (s: the source's last element, read first). The source is read from its
 * lowest address up (a walk down its lines defeats the hardware prefetchers: a float32
 * row reversal took 3.5x a copy of its bytes on the development VM), in whole 32-byte
 * vectors where the CPU has AVX2 and `reverse_set_wide` allows it (rows of 64 bytes or
 * more: the first and last vectors may overlap the others, so d must not meet s). */
void reverse_elements(char *d, const char *s, int64_t n, int64_t size);

/* Whether 32-byte vectors may be used where the CPU has them, here and in evens.c (1 to
 * begin with; 0 keeps the portable loops: tests compare the two). */
void reverse_set_wide(int on);

#if defined(__x86_64__) || defined(__i386__)
/* Whether the CPU has AVX2 and reverse_set_wide allows 32-byte vectors. */
int wide_vectors(void);
#endif

#endif
