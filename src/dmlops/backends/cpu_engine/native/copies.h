/* Strided copies of a plan, cut into pieces for the pool. */
#ifndef DMLOPS_COPIES_H
#define DMLOPS_COPIES_H

#include <stdint.h>

#define MOST_OUTER 12 /* outer dimensions a copy may have (its innermost one apart) */
#define MOST_MEMBERS 64 /* copies one group walks together */

/* One strided copy as the plan table holds it: int64 fields, byte offsets and strides. */
typedef struct {
    int64_t src, dst;             /* binding numbers: inputs (fills after them), outputs */
    int64_t src_offset, dst_offset;
    int64_t element;              /* element bytes */
    int64_t count;                /* elements in the innermost dimension */
    int64_t src_step, dst_step;   /* the innermost dimension's byte strides */
    int64_t outer;                /* outer dimensions used */
    int64_t members;              /* copies from this one on that walk its outer dimensions
                                     together, a row of each in turn (1: alone; 0: walked by
                                     the group before it) */
    int64_t shape[MOST_OUTER];
    int64_t src_strides[MOST_OUTER];
    int64_t dst_strides[MOST_OUTER];
    int64_t tiled;                /* 1: a transpose in square tiles (a lone copy): its last
                                     outer dimension and its innermost one are both `count`
                                     long, the first a unit step in the source, the second in
                                     the destination; a whole tile moves as one block */
    int64_t interleaved;          /* a group's first copy: 1 where its members' rows interleave
                                     element by element into one contiguous row (member m
                                     writes elements m, m + members, ...: an upsampling's or a
                                     depth-to-space's phases), written in one sweep */
} copy_t;

/* A copy's place in one run: how it is cut (bytes of a unit of rows or row segments). */
typedef struct {
    int64_t segments;      /* segments a row is cut into */
    int64_t segment;       /* elements in a segment (the last may be shorter) */
    int64_t units_a_piece; /* rows or segments a piece moves */
    int64_t first_piece;   /* the first piece of this copy */
} cut_t;

typedef struct {
    const copy_t *copies;
    cut_t *cuts;
    int64_t count;
    char *const *src_base;
    char *const *dst_base;
    int streaming; /* 1: destinations written with streaming stores, past the caches (an
                      output larger than they hold: no line read before it is written) */
} job_t;

/* Cuts every copy into pieces of about `grain` bytes; the pieces in all. */
int64_t cut_copies(job_t *job, int64_t grain);

/* Moves one piece (the pool's piece function). */
void move_piece(void *job, int64_t piece);

/* Bytes a copy moves. */
int64_t copy_bytes(const copy_t *copy);

#endif
