/* float32 to float16 and back by CAST's rules, without numpy's per-element floating-point status
 * calls (its conversion takes ~70 ns an element where results overflow, underflow or are
 * subnormal: a tensor of small activations cast to half ran 7x slower than one of ones). */
#ifndef DMLOPS_HALVES_H
#define DMLOPS_HALVES_H

#include <stdint.h>

/* n float32 values to float16 bits: round to nearest, ties to even; past the range, an
 * infinity of the value's sign; subnormal results exact; a NaN 0x7FFF (the positive quiet
 * NaN with every payload bit set). F16C's conversion where the CPU has it and `hardware`
 * is nonzero, else integer arithmetic (the same bits). */
void halves_from_floats(const uint32_t *from, uint16_t *to, int64_t n, int hardware);

/* n float16 bit patterns to float32 values (exact; a NaN 0x7FFFFFFF), F16C's conversion
 * where the CPU has it and `hardware` is nonzero. */
void floats_from_halves(const uint16_t *from, uint32_t *to, int64_t n, int hardware);

/* n float64 values to float16 bits by the same rules (one rounding, from the double). */
void halves_from_doubles(const uint64_t *from, uint16_t *to, int64_t n);

/* Whether halves_from_floats and floats_from_halves use the CPU's F16C conversion. */
int halves_in_hardware(void);

#endif
