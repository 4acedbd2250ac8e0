/* Flat byte views of strided arrays, read in one C call. */
#ifndef DMLOPS_SPANS_H
#define DMLOPS_SPANS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The Span type: `nbytes` bytes from `low` bytes past a strided array's first element,
 * exposed as a flat buffer (read-only where the array is), keeping the array alive. */
extern PyTypeObject SpanType;

/* span(array, low, nbytes) -> Span. */
PyObject *span_of(PyObject *self, PyObject *args);

int spans_init(void);

#endif
