/* Flat byte views of strided arrays (a numpy view's bytes from its lowest to its highest
 * element), made in one C call: the array's start read through the buffer protocol. */
#include "spans.h"

typedef struct {
    PyObject_HEAD
    PyObject *owner;
    char *start;
    Py_ssize_t size;
    int readonly;
} Span;

PyObject *span_of(PyObject *self, PyObject *args) {
    PyObject *owner;
    Py_ssize_t low, size;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onn", &owner, &low, &size)) {
        return NULL;
    }
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "span: a negative byte count");
        return NULL;
    }
    Py_buffer view;
    /* strides without a format: any element type, contiguous or not */
    if (PyObject_GetBuffer(owner, &view, PyBUF_STRIDES) < 0) {
        return NULL;
    }
    char *first = (char *)view.buf;
    int readonly = view.readonly;
    PyBuffer_Release(&view);
    Span *made = PyObject_New(Span, &SpanType);
    if (made == NULL) {
        return NULL;
    }
    Py_INCREF(owner);
    made->owner = owner;
    made->start = first + low;
    made->size = size;
    made->readonly = readonly;
    return (PyObject *)made;
}

static void span_dealloc(Span *self) {
    Py_XDECREF(self->owner);
    PyObject_Free(self);
}

static int span_getbuffer(Span *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->start, self->size, self->readonly,
                             flags);
}

static PyBufferProcs span_buffer = {(getbufferproc)span_getbuffer, NULL};

PyTypeObject SpanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dmlops.backends.cpu_engine._native.Span",
    .tp_basicsize = sizeof(Span),
    .tp_dealloc = (destructor)span_dealloc,
    .tp_as_buffer = &span_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A strided array's bytes from its lowest element on, as one flat buffer.",
};

int spans_init(void) { return PyType_Ready(&SpanType); }
