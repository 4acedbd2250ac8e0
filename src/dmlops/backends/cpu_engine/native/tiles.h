/* A transpose's square tiles: 64 bytes a side (64 x 64 1-byte elements ... 8 x 8 8-byte
 * ones), a whole tile a call. */
#ifndef DMLOPS_TILES_H
#define DMLOPS_TILES_H

#include <stdint.h>

/* Destination row r (drow bytes apart), element j, from the source's element r of its row
 * j (rows scol bytes apart, elements contiguous), for a tile of `side` elements of `element`
 * bytes a side; returns 0 (nothing moved) where the side is not 64 bytes. */
int move_tile(char *d, const char *s, int64_t side, int64_t drow, int64_t scol, int64_t element);

/* 1 where tiles can move as 16-byte blocks (an SSE2 machine) */
#if defined(__SSE2__)
#define TILE_BLOCKS 1
#else
#define TILE_BLOCKS 0
#endif

/* Whether tiles move as 16-byte blocks transposed in registers (1 to begin with; 0 keeps
 * the element loops, for tests and A/B timings). */
void tiles_set_blocks(int on);

#endif
