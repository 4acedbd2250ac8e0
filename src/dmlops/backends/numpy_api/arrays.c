/* dmlops.backends._numpy_api: what the calls read of many numpy arrays, in C (numpy's C API).
 *
 *   arrays_key(arrays) -> bytes | None
 *   owners(arrays, block_type) -> list
 *   addresses(arrays) -> list | None
 *
 * Each array's type (numpy's type number and byte order), rank, sizes and strides, packed,
 * a run of arrays with equal records as one record and its count: the same arrays give the
 * same bytes, and two lists give the same bytes only where every array of one has the type,
 * sizes and strides of its fellow in the other. None where an item is not a plain ndarray
 * or its type is not one of numpy's fixed-size numeric types (a subclass, a flexible, object,
 * datetime or user type: the caller keys those in Python). Read in Python, a list's key costs
 * three attribute reads an array (a tuple made for each of two), then a hash of a tuple a
 * array: about 0.2 µs an array, where a join of 1,024 small arrays takes numpy 0.3 ms.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <stdint.h>
#include <string.h>

#define MOST_RANK 64

typedef struct {
    char *bytes;
    size_t used, size;
} buffer_t;

static int put(buffer_t *b, const void *data, size_t n) {
    if (b->used + n > b->size) {
        size_t size = b->size ? 2 * b->size : 1024;
        while (size < b->used + n) {
            size *= 2;
        }
        char *grown = PyMem_Realloc(b->bytes, size);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->bytes = grown;
        b->size = size;
    }
    memcpy(b->bytes + b->used, data, n);
    b->used += n;
    return 0;
}

/* `arrays` as a fast sequence (a new reference, NULL with Python's error set), its items
 * and their count in `each` and `count`. */
static PyObject *items_of(PyObject *arrays, const char *what, PyObject ***each, Py_ssize_t *count) {
    PyObject *items = PySequence_Fast(arrays, what);
    if (items != NULL) {
        *count = PySequence_Fast_GET_SIZE(items);
        *each = PySequence_Fast_ITEMS(items);
    }
    return items;
}

/* One array's record: type number, byte order, rank, sizes, strides; its length in
 * `record` (int64 words), or -1 where the array is not keyed here. */
static int record_of(PyObject *obj, int64_t *record) {
    if (!PyArray_CheckExact(obj)) {
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    PyArray_Descr *descr = PyArray_DESCR(a);
    int type = descr->type_num;
    if (type > NPY_HALF || type == NPY_OBJECT || type == NPY_STRING || type == NPY_UNICODE ||
        type == NPY_VOID || type == NPY_DATETIME || type == NPY_TIMEDELTA) {
        return -1;
    }
    int rank = PyArray_NDIM(a);
    if (rank > MOST_RANK) {
        return -1;
    }
    npy_intp *sizes = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    record[0] = ((int64_t)type << 16) | ((int64_t)(unsigned char)descr->byteorder << 8) | rank;
    for (int d = 0; d < rank; d++) {
        record[1 + d] = (int64_t)sizes[d];
        record[1 + rank + d] = (int64_t)strides[d];
    }
    return 1 + 2 * rank;
}

static PyObject *arrays_key(PyObject *self, PyObject *arrays) {
    (void)self;
    PyObject **each;
    Py_ssize_t count;
    PyObject *items = items_of(arrays, "arrays_key: a sequence of arrays", &each, &count);
    if (items == NULL) {
        return NULL;
    }
    buffer_t out = {NULL, 0, 0};
    int64_t last[1 + 2 * MOST_RANK], now[1 + 2 * MOST_RANK];
    int last_n = 0;
    int64_t repeats = 0;
    PyObject *result = NULL;
    for (Py_ssize_t k = 0; k <= count; k++) {
        int n = 0;
        if (k < count) {
            n = record_of(each[k], now);
            if (n < 0) {
                result = Py_None;
                Py_INCREF(result);
                goto done;
            }
            if (n == last_n && memcmp(now, last, (size_t)n * sizeof(int64_t)) == 0) {
                repeats++;
                continue;
            }
        }
        if (last_n > 0) { /* the run before: its record, then how many arrays have it */
            if (put(&out, last, (size_t)last_n * sizeof(int64_t)) < 0 ||
                put(&out, &repeats, sizeof(repeats)) < 0) {
                goto done;
            }
        }
        memcpy(last, now, (size_t)n * sizeof(int64_t));
        last_n = n;
        repeats = 1;
    }
    result = PyBytes_FromStringAndSize(out.bytes, (Py_ssize_t)out.used);
done:
    PyMem_Free(out.bytes);
    Py_DECREF(items);
    return result;
}

/* The object that allocated an array's memory: its base chain's root where that is a plain
 * ndarray owning its data or an object of `block_type` (the engine's memory blocks), else
 * None (memory of unknown origin); the numpy backend's `owner`, for each item. */
static PyObject *owner_of(PyObject *obj, PyObject *block_type) {
    while (PyArray_CheckExact(obj)) {
        PyObject *base = PyArray_BASE((PyArrayObject *)obj);
        if (base == NULL) {
            return PyArray_CHKFLAGS((PyArrayObject *)obj, NPY_ARRAY_OWNDATA) ? obj : Py_None;
        }
        obj = base;
    }
    return (PyObject *)Py_TYPE(obj) == block_type ? obj : Py_None;
}

static PyObject *owners(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    (void)self;
    if (n != 2) {
        PyErr_SetString(PyExc_TypeError, "owners(arrays, block_type)");
        return NULL;
    }
    PyObject **each;
    Py_ssize_t count;
    PyObject *items = items_of(args[0], "owners: a sequence of arrays", &each, &count);
    if (items == NULL) {
        return NULL;
    }
    PyObject *found = PyList_New(count);
    if (found != NULL) {
        for (Py_ssize_t k = 0; k < count; k++) {
            PyObject *owner = owner_of(each[k], args[1]);
            Py_INCREF(owner);
            PyList_SET_ITEM(found, k, owner);
        }
    }
    Py_DECREF(items);
    return found;
}

/* Each array's address (its data pointer, `__array_interface__["data"][0]`, which builds a
 * dict an array: about 1 µs), or None where an item is not an ndarray. */
static PyObject *addresses(PyObject *self, PyObject *arrays) {
    (void)self;
    PyObject **each;
    Py_ssize_t count;
    PyObject *items = items_of(arrays, "addresses: a sequence of arrays", &each, &count);
    if (items == NULL) {
        return NULL;
    }
    PyObject *found = PyList_New(count);
    for (Py_ssize_t k = 0; found != NULL && k < count; k++) {
        if (!PyArray_Check(each[k])) {
            Py_DECREF(found);
            found = Py_None;
            Py_INCREF(found);
            break;
        }
        PyObject *at = PyLong_FromVoidPtr(PyArray_DATA((PyArrayObject *)each[k]));
        if (at == NULL) {
            Py_CLEAR(found);
            break;
        }
        PyList_SET_ITEM(found, k, at);
    }
    Py_DECREF(items);
    return found;
}

static PyMethodDef methods[] = {
    {"addresses", addresses, METH_O,
     "Each array's data address (None where an item is not an ndarray), in one C call."},
    {"arrays_key", arrays_key, METH_O,
     "The key of many numpy arrays (types, ranks, sizes, strides), or None."},
    {"owners", (PyCFunction)(void (*)(void))owners, METH_FASTCALL,
     "Each array's owner (the numpy backend's `owner`), in one C call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_numpy_api",
                                    "What the calls read of many numpy arrays, in C", -1,
                                    methods};

PyMODINIT_FUNC PyInit__numpy_api(void) {
    import_array();
    return PyModule_Create(&module);
}
