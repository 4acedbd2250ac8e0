/* Memory for new outputs, kept mapped between uses. */
#ifndef DMLOPS_BLOCKS_H
#define DMLOPS_BLOCKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The Block type: a writable buffer whose memory goes back to the cache when the last
 * array viewing it is gone. */
extern PyTypeObject BlockType;

/* A new Block of `size` bytes (from the cache where one of that size waits: the newest
 * given back with `tag`, else the newest). `tag`: which output of which call (0: none). */
PyObject *block_new(Py_ssize_t size, long long tag);

/* Bytes the cache may keep (0: none; blocks are freed as soon as they are dropped). */
void blocks_set_limit(Py_ssize_t bytes);

/* Bytes the cache keeps now. */
Py_ssize_t blocks_cached(void);

/* Frees every cached block. */
void blocks_clear(void);

/* Registers the fork handler (a child's cache lock starts free). */
int blocks_init(void);

#endif
