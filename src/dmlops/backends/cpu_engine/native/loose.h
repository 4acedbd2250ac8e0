/* What the copy loops share: element types that may sit at any address and alias anything
 * (loops over them with a step known at compile time vectorise, shuffles of whole vectors,
 * where memcpy at a run-time step stays one element at a time), and whether the machine is
 * an x86 one (its vector intrinsics then included; a function uses the wider ones under a
 * `target` attribute, after a check of the CPU it runs on). */
#ifndef DMLOPS_LOOSE_H
#define DMLOPS_LOOSE_H

#include <stdint.h>

typedef uint16_t loose16 __attribute__((aligned(1), may_alias));
typedef uint32_t loose32 __attribute__((aligned(1), may_alias));
typedef uint64_t loose64 __attribute__((aligned(1), may_alias));
typedef uint8_t loose8 __attribute__((may_alias));

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define X86 1
#else
#define X86 0
#endif

#endif
