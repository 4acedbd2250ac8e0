/* dmlops' CUDA launch path: cuLaunchKernel through libcuda, found with dlopen at the
 * first launch (no CUDA headers or libraries are needed to build this). One call of a C
 * function per launch, the same arguments as CuPy's driver.launchKernel, which a warm call
 * would otherwise pay for (and whose first use imports all of CuPy). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <string.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);

static launch_fn cu_launch = NULL;

/* CUDA_ERROR_INVALID_CONTEXT: the calling thread has no context current (one whose CUDA
 * calls so far never reached the driver); raised as launch.py's NoContext, which its
 * callers answer by making their device's primary context current and launching again. */
#define NO_CONTEXT 201
static PyObject *no_context = NULL;

/* Python's error for a launch's failed `status`. */
static void launch_failed(int status)
{
    PyObject *type = status == NO_CONTEXT && no_context != NULL ? no_context : PyExc_RuntimeError;
    PyErr_Format(type, "cuLaunchKernel failed with CUDA driver error %d", status);
}

static int load(void)
{
    if (cu_launch != NULL)
        return 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        PyErr_Format(PyExc_RuntimeError, "dmlops could not load libcuda.so.1: %s", dlerror());
        return -1;
    }
    cu_launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
    if (cu_launch == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "libcuda.so.1 has no cuLaunchKernel");
        return -1;
    }
    return 0;
}

/* The first `count` arguments as unsigned 64-bit words (handles, sizes, addresses);
 * -1 with Python's error set where one is not an int. */
static int words_of(PyObject *const *args, Py_ssize_t count, unsigned long long *v)
{
    for (Py_ssize_t k = 0; k < count; ++k) {
        v[k] = PyLong_AsUnsignedLongLongMask(args[k]);
        if (v[k] == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* launch_kernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra) */
static PyObject *launch_kernel(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n != 11) {
        PyErr_SetString(PyExc_TypeError, "launch_kernel takes 11 arguments");
        return NULL;
    }
    unsigned long long v[11];
    if (words_of(args, 11, v) < 0)
        return NULL;
    if (load() < 0)
        return NULL;
    int status = cu_launch((void *)(uintptr_t)v[0], (unsigned)v[1], (unsigned)v[2],
                           (unsigned)v[3], (unsigned)v[4], (unsigned)v[5], (unsigned)v[6],
                           (unsigned)v[7], (void *)(uintptr_t)v[8], (void **)(uintptr_t)v[9],
                           (void **)(uintptr_t)v[10]);
    if (status != 0) {
        launch_failed(status);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The most words a piece table passed by value may hold (32,000 bytes: with the launch's
 * other parameters, under the 32,764 bytes of parameters a kernel may take). */
#define TABLE_WORDS_MOST 4000

/* launch_table(function, grid, threads, stream, table, patches, addresses, pieces, tiles):
 * a piece-table kernel (kernels/common.cuh, TABLE_WORDS) launched with its table by value:
 * `table`'s int64 words, each word that `patches` (int32 pairs: word, address) names raised
 * by that entry of `addresses`; then `pieces` (int) and `tiles` (long long). */
static PyObject *launch_table(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n != 9) {
        PyErr_SetString(PyExc_TypeError, "launch_table takes 9 arguments");
        return NULL;
    }
    unsigned long long v[4];
    if (words_of(args, 4, v) < 0)
        return NULL;
    int pieces = (int)PyLong_AsLong(args[7]);
    long long tiles = PyLong_AsLongLong(args[8]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer table, patches;
    if (PyObject_GetBuffer(args[4], &table, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[5], &patches, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&table);
        return NULL;
    }
    PyObject *addresses = PySequence_Fast(args[6], "launch_table's addresses: a sequence");
    PyObject *result = NULL;
    static _Thread_local long long words[TABLE_WORDS_MOST];
    Py_ssize_t count = table.len / 8, patched = patches.len / 8;
    if (addresses == NULL)
        goto done;
    if (table.len % 8 || count > TABLE_WORDS_MOST) {
        PyErr_SetString(PyExc_ValueError, "launch_table: a table of whole words, at most 4,000");
        goto done;
    }
    memcpy(words, table.buf, (size_t)table.len);
    Py_ssize_t known = PySequence_Fast_GET_SIZE(addresses);
    PyObject **items = PySequence_Fast_ITEMS(addresses);
    const int *pairs = (const int *)patches.buf;
    for (Py_ssize_t k = 0; k < patched; ++k) {
        int word = pairs[2 * k], which = pairs[2 * k + 1];
        if (word < 0 || word >= count || which < 0 || which >= known) {
            PyErr_SetString(PyExc_ValueError, "launch_table: a patch outside its table");
            goto done;
        }
        unsigned long long at = PyLong_AsUnsignedLongLongMask(items[which]);
        if (at == (unsigned long long)-1 && PyErr_Occurred())
            goto done;
        words[word] += (long long)at;
    }
    if (load() < 0)
        goto done;
    void *params[3] = {words, &pieces, &tiles};
    int status = cu_launch((void *)(uintptr_t)v[0], (unsigned)v[1], 1, 1, (unsigned)v[2], 1, 1, 0,
                           (void *)(uintptr_t)v[3], params, NULL);
    if (status != 0) {
        launch_failed(status);
        goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(addresses);
    PyBuffer_Release(&patches);
    PyBuffer_Release(&table);
    return result;
}

/* set_no_context(type): the exception a launch raises where no context is current. */
static PyObject *set_no_context(PyObject *self, PyObject *type)
{
    (void)self;
    Py_XSETREF(no_context, Py_NewRef(type));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"launch_kernel", (PyCFunction)(void (*)(void))launch_kernel, METH_FASTCALL,
     "cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra)"},
    {"launch_table", (PyCFunction)(void (*)(void))launch_table, METH_FASTCALL,
     "A piece-table kernel launched with its table by value, addresses added in."},
    {"set_no_context", set_no_context, METH_O,
     "The exception a launch raises where the calling thread has no CUDA context."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_launch",
                                    "dmlops' CUDA kernel launches", -1, methods};

PyMODINIT_FUNC PyInit__launch(void) { return PyModule_Create(&module); }
