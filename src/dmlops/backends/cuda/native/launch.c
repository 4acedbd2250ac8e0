/* dmlops' CUDA launch path: cuLaunchKernel through libcuda, found with dlopen at the
 * first launch (no CUDA headers or libraries are needed to build this). One call of a C
 * function per launch, the same arguments as CuPy's driver.launchKernel, which a warm call
 * would otherwise pay for (and whose first use imports all of CuPy). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);

static launch_fn cu_launch = NULL;

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

/* launch_kernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra) */
static PyObject *launch_kernel(PyObject *self, PyObject *const *args, Py_ssize_t n)
{
    (void)self;
    if (n != 11) {
        PyErr_SetString(PyExc_TypeError, "launch_kernel takes 11 arguments");
        return NULL;
    }
    unsigned long long v[11];
    for (Py_ssize_t k = 0; k < 11; ++k) {
        v[k] = PyLong_AsUnsignedLongLongMask(args[k]);
        if (v[k] == (unsigned long long)-1 && PyErr_Occurred())
            return NULL;
    }
    if (load() < 0)
        return NULL;
    int status = cu_launch((void *)(uintptr_t)v[0], (unsigned)v[1], (unsigned)v[2],
                           (unsigned)v[3], (unsigned)v[4], (unsigned)v[5], (unsigned)v[6],
                           (unsigned)v[7], (void *)(uintptr_t)v[8], (void **)(uintptr_t)v[9],
                           (void **)(uintptr_t)v[10]);
    if (status != 0) {
        PyErr_Format(PyExc_RuntimeError, "cuLaunchKernel failed with CUDA driver error %d",
                     status);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"launch_kernel", (PyCFunction)(void (*)(void))launch_kernel, METH_FASTCALL,
     "cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_launch",
                                    "dmlops' CUDA kernel launches", -1, methods};

PyMODINIT_FUNC PyInit__launch(void) { return PyModule_Create(&module); }
