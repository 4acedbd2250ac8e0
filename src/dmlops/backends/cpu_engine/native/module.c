/* dmlops.backends.cpu_engine._native: a plan's strided copies on a fork-safe worker pool.
 *
 *   run(table, inputs, outputs, threads) -> bool
 *   fresh(table, empty, shape, dtype, fills, inputs) -> array
 *   into(table, fills, inputs, out) -> bool
 *
 * `table` is a C-contiguous int64 buffer: a header [copies, inputs, outputs, 0], each
 * input's and output's required bytes, then one copy_t record per copy (copies.h).
 * `inputs` and `outputs` are sequences of contiguous buffers (outputs writable). The GIL
 * is released while the copies run. False, with nothing written, where an output's bytes
 * overlap an input's (the caller then runs its ordered path).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blocks.h"
#include "copies.h"
#include "evens.h"
#include "load.h"
#include "compact.h"
#include "indexed.h"
#include "halves.h"
#include "pool.h"
#include "quota.h"
#include "reverse.h"
#include "shuffles.h"
#include "spans.h"
#include "tiles.h"

#define HEADER 4
#define FEW_COPIES 64

static int64_t least_bytes_a_thread = 64 << 10;
static int64_t least_grain = 16 << 10;
static int64_t most_grain = 1 << 20;
static int64_t streaming_bytes = INT64_MAX; /* jobs this large stream their stores */
/* A job keeps the GIL where it moves fewer bytes than this for each thread it may run on
 * (one where another thread's job holds the pool): a job of some tens of microseconds.
 * Released for so short a copy, the GIL is taken by another Python thread calling too, and
 * this one sleeps until that one lets it go: a thread woken a call, slower than the copy.
 * Held, the Python threads' short jobs take turns, each on the threads it asked for.
 * (16-core host, 16 threads calling: 64 KiB transposes 3.1-3.3 -> 1.4 x numpy's time,
 * 1 MiB reversed rows 2.0-2.1 -> 1.3; a 1 MiB job on one or two threads still released.) */
static int64_t gil_held_bytes_a_thread = 512 << 10;

/* A released job whose thread then waited this long for the GIL, while no other job began,
 * found a Python thread that is not calling the engine holding it for long stretches: a
 * thread busy in pure Python, which CPython makes let the GIL go only after its switch
 * interval (5 ms), so that every released job waits that long. For the next
 * `gil_busy_window_ns` (renewed by each such wait), jobs of up to `gil_busy_hold` times the
 * limit above keep it instead: the busy thread still gets it back every switch interval,
 * and each call no longer waits one out. (Where other jobs began meanwhile, the GIL went
 * round threads calling the engine, whose jobs run side by side only where released.)
 * 2-core VM, 1 MiB reversed rows beside a busy Python thread: 179-271 -> 9,482-11,566
 * calls a second (docs/performance/cpu.md). 1: never held for it. */
static int64_t gil_busy_wait_ns = 1000000;
static int64_t gil_busy_window_ns = 100000000;
static int64_t gil_busy_hold = 8;
static _Atomic int64_t gil_busy_until = 0;
static _Atomic int64_t jobs_begun = 0;

/* Whether a job of `bytes` on up to `threads` threads keeps the GIL. */
static int keeps_gil(int64_t bytes, int64_t threads) {
    int64_t below = gil_held_bytes_a_thread * (threads > 1 && !pool_taken() ? threads : 1);
    if (bytes < below) {
        return 1;
    }
    return gil_busy_hold > 1 && bytes < below * gil_busy_hold &&
           atomic_load_explicit(&gil_busy_until, memory_order_relaxed) > pool_now_ns();
}

/* The GIL is back after a released job, the `begun`th, that ended at `ended`: a long wait
 * with no job begun since marks it busy. */
static void gil_back(int64_t ended, int64_t begun) {
    int64_t now = pool_now_ns();
    if (now - ended >= gil_busy_wait_ns &&
        atomic_load_explicit(&jobs_begun, memory_order_relaxed) == begun) {
        atomic_store_explicit(&gil_busy_until, now + gil_busy_window_ns, memory_order_relaxed);
    }
}

/* `job`, on up to `threads` threads, with the GIL released where it moves `bytes` or more
 * than its threads' share of the limit above (more while the GIL is found busy) */
#define UNLOCKED_IF_LONG(bytes, threads, job)                                                  \
    do {                                                                                       \
        int64_t begun_ = atomic_fetch_add_explicit(&jobs_begun, 1, memory_order_relaxed) + 1;  \
        if (keeps_gil((int64_t)(bytes), (int64_t)(threads))) {                                 \
            job;                                                                               \
        } else {                                                                               \
            PyThreadState *saved_ = PyEval_SaveThread();                                       \
            job;                                                                               \
            int64_t ended_ = pool_now_ns();                                                    \
            PyEval_RestoreThread(saved_);                                                      \
            gil_back(ended_, begun_);                                                          \
        }                                                                                      \
    } while (0)

#define KEEP_CACHED 1 /* a plan table's header flag (its fourth word): never stream */

static void release_all(Py_buffer *views, Py_ssize_t count) {
    for (Py_ssize_t k = 0; k < count; k++) {
        PyBuffer_Release(&views[k]);
    }
}

/* The plan table's copies between the bound buffers (`items`: the inputs, then the
 * outputs): a new reference to True, False where an output meets an input (nothing
 * written), NULL with an exception set. */
static PyObject *run_bound(const Py_buffer *table_view, PyObject *const *items, Py_ssize_t given_in,
                           Py_ssize_t given_out, int threads) {
    const Py_buffer table = *table_view;
    PyObject *result = NULL;
    Py_buffer *views = NULL;
    char **bases = NULL;
    cut_t few[FEW_COPIES];
    cut_t *cuts = few;
    Py_ssize_t held = 0;
    const int64_t *words = (const int64_t *)table.buf;
    Py_ssize_t size = table.len / (Py_ssize_t)sizeof(int64_t);
    if (size < HEADER || ((uintptr_t)table.buf & 7)) {
        PyErr_SetString(PyExc_ValueError, "the plan table is not an aligned int64 header");
        goto done;
    }
    int64_t copies = words[0], n_in = words[1], n_out = words[2];
    Py_ssize_t records = (Py_ssize_t)(sizeof(copy_t) / sizeof(int64_t));
    if (copies < 0 || n_in < 0 || n_out < 0 || size != HEADER + n_in + n_out + copies * records) {
        PyErr_SetString(PyExc_ValueError, "the plan table's size does not match its header");
        goto done;
    }
    if (given_in != n_in || given_out != n_out) {
        PyErr_SetString(PyExc_ValueError, "the buffers bound do not match the plan's bindings");
        goto done;
    }
    views = (Py_buffer *)PyMem_Calloc((size_t)(n_in + n_out) + 1, sizeof(Py_buffer));
    bases = (char **)PyMem_Calloc((size_t)(n_in + n_out) + 1, sizeof(char *));
    if (views == NULL || bases == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t k = 0; k < n_in + n_out; k++) {
        int output = k >= n_in;
        PyObject *item = items[k];
        int flags = PyBUF_ANY_CONTIGUOUS | (output ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(item, &views[k], flags) < 0) {
            goto done;
        }
        held++;
        if ((int64_t)views[k].len < words[HEADER + k]) {
            PyErr_Format(PyExc_ValueError, "%s buffer %lld holds %lld bytes; the plan needs %lld",
                         output ? "output" : "input", (long long)(output ? k - n_in : k),
                         (long long)views[k].len, (long long)words[HEADER + k]);
            goto done;
        }
        bases[k] = (char *)views[k].buf;
    }
    /* an output overlapping an input: the ordered path decides what is read */
    for (int64_t o = n_in; o < n_in + n_out; o++) {
        uintptr_t olow = (uintptr_t)views[o].buf, ohigh = olow + (uintptr_t)views[o].len;
        for (int64_t i = 0; i < n_in; i++) {
            uintptr_t ilow = (uintptr_t)views[i].buf, ihigh = ilow + (uintptr_t)views[i].len;
            if (olow < ihigh && ilow < ohigh && views[o].len && views[i].len) {
                result = Py_False;
                Py_INCREF(result);
                goto done;
            }
        }
    }
    const copy_t *list = (const copy_t *)(const void *)(words + HEADER + n_in + n_out);
    if (copies > FEW_COPIES) {
        cuts = (cut_t *)PyMem_Malloc((size_t)copies * sizeof(cut_t));
        if (cuts == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int64_t walked = 0; /* copies still to come that the last group walks */
    for (int64_t c = 0; c < copies; c++) {
        const copy_t *copy = &list[c];
        int bad = copy->outer < 0 || copy->outer > MOST_OUTER || copy->src < 0 ||
                  copy->src >= n_in || copy->dst < 0 || copy->dst >= n_out ||
                  copy->members < 0 || copy->members > MOST_MEMBERS ||
                  c + copy->members > copies || (copy->members == 0) != (walked > 0);
        if (!bad && copy->members > 1) {
            walked = copy->members;
            for (int64_t m = 1; m < copy->members && !bad; m++) {
                bad = copy[m].outer != copy->outer;
                for (int64_t k = 0; k < copy->outer && !bad; k++) {
                    bad = copy[m].shape[k] != copy->shape[k];
                }
            }
            /* interleaved: member m writes exactly where the lead's sweep puts its elements */
            for (int64_t m = 0; m < copy->members && !bad && copy->interleaved; m++) {
                const copy_t *member = &copy[m];
                bad = member->dst != copy->dst || member->element != copy->element ||
                      member->count != copy->count ||
                      member->dst_step != copy->members * copy->element ||
                      member->dst_offset != copy->dst_offset + m * copy->element ||
                      (m > 0 && member->interleaved);
                for (int64_t k = 0; k < copy->outer && !bad; k++) {
                    bad = member->dst_strides[k] != copy->dst_strides[k];
                }
            }
        } else if (copy->interleaved) {
            bad = 1; /* (only a group's first copy) */
        }
        if (!bad && copy->tiled) { /* (a lone copy whose tiles are whole) */
            bad = copy->members != 1 || copy->outer < 1 ||
                  copy->shape[copy->outer - 1] != copy->count;
        }
        if (bad) {
            PyErr_SetString(PyExc_ValueError, "a plan table record is out of range");
            goto done;
        }
        if (walked > 0) {
            walked--;
        }
    }
    job_t job = {list, cuts, copies, bases, bases + n_in, 0};
    int64_t total = 0;
    for (int64_t c = 0; c < copies; c++) {
        total += copy_bytes(&list[c]);
    }
    /* (header flag KEEP_CACHED: the plan's output is written again right after, by a
     * scatter's rows: stores through the cache leave it there for them) */
    job.streaming = total >= streaming_bytes && !(words[3] & KEEP_CACHED);
    int64_t used = total / least_bytes_a_thread;
    if (used > threads) {
        used = threads;
    }
    if (used < 1) {
        used = 1;
    }
    int64_t grain = INT64_MAX / 4; /* one thread: whole copies */
    if (used > 1) {
        grain = total / (used * 8);
        grain = grain < least_grain ? least_grain : grain > most_grain ? most_grain : grain;
    }
    int64_t pieces = cut_copies(&job, grain);
    UNLOCKED_IF_LONG(total, used, pool_run(move_piece, &job, pieces, (int)used, total));
    result = Py_True;
    Py_INCREF(result);
done:
    if (views != NULL) {
        release_all(views, held);
    }
    PyMem_Free(views);
    PyMem_Free(bases);
    if (cuts != few) {
        PyMem_Free(cuts);
    }
    return result;
}

#define FRESH_BINDINGS 16 /* bindings held on the stack */

static PyObject *run(PyObject *self, PyObject *args) {
    Py_buffer table;
    PyObject *inputs, *outputs;
    int threads;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*OOi", &table, &inputs, &outputs, &threads)) {
        return NULL;
    }
    PyObject *result = NULL, *in_seq = NULL, *out_seq = NULL, *few_items[FRESH_BINDINGS];
    PyObject **items = few_items;
    in_seq = PySequence_Fast(inputs, "inputs must be a sequence");
    if (in_seq == NULL) {
        goto done;
    }
    out_seq = PySequence_Fast(outputs, "outputs must be a sequence");
    if (out_seq == NULL) {
        goto done;
    }
    Py_ssize_t n_in = PySequence_Fast_GET_SIZE(in_seq), n_out = PySequence_Fast_GET_SIZE(out_seq);
    if (n_in + n_out > FRESH_BINDINGS) {
        items = PyMem_Malloc((size_t)(n_in + n_out) * sizeof(PyObject *));
        if (items == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < n_in; k++) {
        items[k] = PySequence_Fast_GET_ITEM(in_seq, k);
    }
    for (Py_ssize_t k = 0; k < n_out; k++) {
        items[n_in + k] = PySequence_Fast_GET_ITEM(out_seq, k);
    }
    result = run_bound(&table, items, n_in, n_out, threads);
done:
    if (items != few_items) {
        PyMem_Free(items);
    }
    Py_XDECREF(in_seq);
    Py_XDECREF(out_seq);
    PyBuffer_Release(&table);
    return result;
}

/* A one-output plan (`table`, a buffer) on the calling thread into `out`, `fills` (a tuple)
 * bound after `inputs` (a list or tuple): as `run_bound`. */
static PyObject *run_one(PyObject *table_obj, PyObject *fills, PyObject *inputs, PyObject *out) {
    if (!PyTuple_Check(fills) || !(PyList_Check(inputs) || PyTuple_Check(inputs))) {
        PyErr_SetString(PyExc_TypeError, "a plan's fills are a tuple, its inputs a list or tuple");
        return NULL;
    }
    Py_ssize_t n_fills = PyTuple_GET_SIZE(fills), n_given = PySequence_Fast_GET_SIZE(inputs);
    Py_ssize_t n_in = n_given + n_fills;
    if (n_in + 1 > FRESH_BINDINGS) {
        PyErr_SetString(PyExc_ValueError, "a one-output run binds at most 15 inputs and fills");
        return NULL;
    }
    PyObject *items[FRESH_BINDINGS];
    for (Py_ssize_t k = 0; k < n_given; k++) {
        items[k] = PySequence_Fast_GET_ITEM(inputs, k);
    }
    for (Py_ssize_t k = 0; k < n_fills; k++) {
        items[n_given + k] = PyTuple_GET_ITEM(fills, k);
    }
    items[n_in] = out;
    Py_buffer table;
    if (PyObject_GetBuffer(table_obj, &table, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = run_bound(&table, items, n_in, 1, 1);
    PyBuffer_Release(&table);
    return result;
}

/* fresh(table, empty, shape, dtype, fills, inputs) -> array: a plan of one output into a
 * new array `empty(shape, dtype)` on the calling thread, `fills` bound after the inputs (a
 * small call's whole warm run in one C call). */
static PyObject *fresh(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "fresh takes table, empty, shape, dtype, fills, inputs");
        return NULL;
    }
    PyObject *made = PyObject_Vectorcall(args[1], args + 2, 2, NULL);
    if (made == NULL) {
        return NULL;
    }
    PyObject *result = run_one(args[0], args[4], args[5], made);
    if (result == Py_True) {
        Py_DECREF(result);
        return made;
    }
    if (result != NULL) { /* (a new array meets no input) */
        Py_DECREF(result);
        PyErr_SetString(PyExc_RuntimeError, "a new output met an input");
    }
    Py_DECREF(made);
    return NULL;
}

/* into(table, fills, inputs, out) -> bool: a plan of one output into a given array on the
 * calling thread, fills bound after the inputs; False, with nothing written, where the
 * output's bytes meet an input's (the caller's ordered or staged path). */
static PyObject *into(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "into takes table, fills, inputs, out");
        return NULL;
    }
    return run_one(args[0], args[1], args[2], args[3]);
}

static PyObject *configure(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"spin_us",     "least_bytes_a_thread", "least_grain", "most_grain",
                            "straggle_us", "streaming_bytes",      "load_aware",  "long_job_us",
                            "home_ranges", "caller_spin_us", "wide_vectors", "step_shuffles",
                            "tile_blocks", "idle_spin_us", "quota_millicpus", "quota_period_us",
                            "deal_most_bytes", "gil_held_bytes_a_thread", "gil_busy_hold",
                            "gil_busy_wait_us", "gil_busy_window_us", NULL};
    long long spin = -1, least = -1, low = -1, high = -1, straggle = -1, streaming = -1;
    long long load_aware = -1, long_job = -1, home_ranges = -1, caller_spin = -1;
    long long wide_vectors = -1, step_shuffles = -1, tile_blocks = -1, idle_spin = -1;
    long long quota_millicpus = -1, quota_period = -1, deal_most = -1, gil_held = -1;
    long long busy_hold = -1, busy_wait = -1, busy_window = -1;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|LLLLLLLLLLLLLLLLLLLLL", names, &spin,
                                     &least, &low, &high, &straggle, &streaming, &load_aware,
                                     &long_job, &home_ranges, &caller_spin, &wide_vectors,
                                     &step_shuffles, &tile_blocks, &idle_spin, &quota_millicpus,
                                     &quota_period, &deal_most, &gil_held, &busy_hold, &busy_wait,
                                     &busy_window)) {
        return NULL;
    }
    if (busy_hold >= 0) {
        /* (times the limit, clamped to 2^50 above: at most 2^10 keeps it in range) */
        gil_busy_hold = busy_hold < 1 ? 1 : busy_hold > 1024 ? 1024 : busy_hold;
    }
    if (busy_wait >= 0) {
        gil_busy_wait_ns = (busy_wait < (1LL << 40) ? busy_wait : 1LL << 40) * 1000;
    }
    if (busy_window >= 0) {
        gil_busy_window_ns = (busy_window < (1LL << 40) ? busy_window : 1LL << 40) * 1000;
        atomic_store_explicit(&gil_busy_until, 0, memory_order_relaxed); /* (starts anew) */
    }
    if (gil_held >= 0) {
        /* (times a thread count, it must not overflow: a petabyte is "always") */
        gil_held_bytes_a_thread = gil_held < (1LL << 50) ? gil_held : 1LL << 50;
    }
    if (deal_most >= 0) {
        evens_set_deal_most(deal_most);
    }
    if (quota_millicpus >= 0) {
        quota_set(quota_millicpus, quota_period);
    }
    if (idle_spin >= 0) {
        pool_set_idle_spin(idle_spin);
    }
    if (tile_blocks >= 0) {
        tiles_set_blocks((int)tile_blocks);
    }
    if (step_shuffles >= 0) {
        shuffles_set((int)step_shuffles);
    }
    if (wide_vectors >= 0) {
        reverse_set_wide((int)wide_vectors);
    }
    if (caller_spin >= 0) {
        pool_set_caller_spin(caller_spin);
    }
    if (home_ranges >= 0) {
        pool_set_home_ranges((int)home_ranges);
    }
    if (long_job >= 0) {
        pool_set_long_job(long_job);
    }
    if (load_aware >= 0) {
        pool_set_load_aware((int)load_aware);
    }
    if (streaming > 0) {
        streaming_bytes = streaming;
    }
    if (straggle >= 0) {
        pool_set_straggle(straggle);
    }
    if (spin >= 0) {
        pool_set_spin(spin);
    }
    if (least > 0) {
        least_bytes_a_thread = least;
    }
    if (low > 0) {
        least_grain = low;
    }
    if (high > 0) {
        most_grain = high;
    }
    Py_RETURN_NONE;
}

static PyObject *workers(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(pool_workers());
}

static PyObject *taken(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(pool_taken());
}

static PyObject *gil_busy(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(atomic_load_explicit(&gil_busy_until, memory_order_relaxed) >
                           pool_now_ns());
}

/* fields_key(*fields): an operator's fields as one bytes key, each value with its type (so
 * that 1.0 or True never finds the call of 1), or None where a value is not None, a bool, an
 * int of 64 bits, a float, a str, or a list or tuple of them (a field's at most 7 deep):
 * the caller pickles those. Starts with a byte no pickle starts with. */
#define KEY_DEPTH 8

typedef struct {
    char *bytes; /* `first` until it outgrows it, then the heap's */
    char *first;
    Py_ssize_t used, size;
} field_bytes_t;

static int key_put(field_bytes_t *k, const void *data, Py_ssize_t n) {
    if (k->used + n > k->size) {
        Py_ssize_t size = (k->size + n) * 2;
        char *grown = PyMem_Malloc((size_t)size);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(grown, k->bytes, (size_t)k->used);
        if (k->bytes != k->first) {
            PyMem_Free(k->bytes);
        }
        k->bytes = grown;
        k->size = size;
    }
    memcpy(k->bytes + k->used, data, (size_t)n);
    k->used += n;
    return 0;
}

/* 1: written; 0: a value the key does not take; -1: an error */
static int key_value(field_bytes_t *k, PyObject *v, int depth) {
    char tag;
    if (v == Py_None) {
        return key_put(k, "N", 1) < 0 ? -1 : 1;
    }
    if (v == Py_True || v == Py_False) {
        return key_put(k, v == Py_True ? "T" : "F", 1) < 0 ? -1 : 1;
    }
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow) {
            return 0;
        }
        if (n == -1 && PyErr_Occurred()) {
            return -1;
        }
        tag = 'I';
        return key_put(k, &tag, 1) < 0 || key_put(k, &n, 8) < 0 ? -1 : 1;
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        tag = 'D';
        return key_put(k, &tag, 1) < 0 || key_put(k, &d, 8) < 0 ? -1 : 1;
    }
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *text = PyUnicode_AsUTF8AndSize(v, &n);
        if (text == NULL) {
            PyErr_Clear(); /* (a lone surrogate: pickled instead) */
            return 0;
        }
        tag = 'S';
        return key_put(k, &tag, 1) < 0 || key_put(k, &n, sizeof n) < 0 ||
                       key_put(k, text, n) < 0
                   ? -1
                   : 1;
    }
    int list = PyList_CheckExact(v);
    if ((list || PyTuple_CheckExact(v)) && depth < KEY_DEPTH) {
        Py_ssize_t n = list ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v);
        tag = list ? 'L' : 'U';
        if (key_put(k, &tag, 1) < 0 || key_put(k, &n, sizeof n) < 0) {
            return -1;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            /* (a list's length is read again: a value's __del__ cannot run here, but stay safe) */
            if (list && j >= PyList_GET_SIZE(v)) {
                return 0;
            }
            PyObject *item = list ? PyList_GET_ITEM(v, j) : PyTuple_GET_ITEM(v, j);
            int done = key_value(k, item, depth + 1);
            if (done <= 0) {
                return done;
            }
        }
        return 1;
    }
    return 0;
}

static PyObject *fields_key(PyObject *self, PyObject *args) {
    (void)self;
    char first[256];
    field_bytes_t k = {first, first, 0, sizeof first};
    PyObject *result = NULL;
    int done = key_put(&k, "\x01", 1) < 0 ? -1 : key_value(&k, args, 0);
    if (done > 0) {
        result = PyBytes_FromStringAndSize(k.bytes, k.used);
    } else if (done == 0) {
        result = Py_None;
        Py_INCREF(result);
    }
    if (k.bytes != first) {
        PyMem_Free(k.bytes);
    }
    return result;
}

static PyObject *begun(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLongLong(atomic_load_explicit(&jobs_begun, memory_order_relaxed));
}

static PyObject *estimate_spare(PyObject *self, PyObject *args) {
    const char *text;
    int ours, in_set, online;
    (void)self;
    if (!PyArg_ParseTuple(args, "siii", &text, &ours, &in_set, &online)) {
        return NULL;
    }
    return PyLong_FromLong(load_estimate_spare(text, ours, in_set, online));
}

/* quota_trace(millicpus, period_us, wanted, readings) -> [threads]: quota_threads on a
 * fresh budget for each (wall ns, CPU ns[, the job's ns[, the group's CPU ns or -1]])
 * reading in turn. */
static PyObject *quota_trace(PyObject *self, PyObject *args) {
    long long millicpus, period_us;
    int wanted;
    PyObject *readings;
    (void)self;
    if (!PyArg_ParseTuple(args, "LLiO", &millicpus, &period_us, &wanted, &readings)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(readings, "quota_trace: readings must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = PyList_New(n);
    quota_budget_t budget = {
        .millicpus = millicpus, .period_ns = period_us * 1000, .group_at = -1};
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        long long wall, cpu, group = -1;
        double job = 0.0;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "LL|dL", &wall, &cpu, &job,
                              &group)) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, i,
                        PyLong_FromLong(quota_threads(&budget, wanted, wall, cpu, group, job)));
    }
    Py_DECREF(seq);
    return result;
}

/* quota_usage(path): the file that counts the quota's group's CPU time ("": none) */
static PyObject *quota_usage(PyObject *self, PyObject *args) {
    const char *path;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &path)) {
        return NULL;
    }
    if (quota_set_usage(path) != 0) {
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
    }
    Py_RETURN_NONE;
}

/* quota_watch(limit_path, period_path): the quota's own files, read again once a second */
static PyObject *quota_watch_files(PyObject *self, PyObject *args) {
    const char *limit, *period;
    (void)self;
    if (!PyArg_ParseTuple(args, "ss", &limit, &period)) {
        return NULL;
    }
    if (quota_watch(limit, period) != 0) {
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, limit);
    }
    Py_RETURN_NONE;
}

/* parse_limit(limit_text, period_text) -> (millicpus, period_us), or None */
static PyObject *parse_limit(PyObject *self, PyObject *args) {
    const char *limit, *period;
    int64_t millicpus, period_us;
    (void)self;
    if (!PyArg_ParseTuple(args, "ss", &limit, &period)) {
        return NULL;
    }
    if (quota_parse_limit(limit, period[0] != '\0' ? period : NULL, &millicpus, &period_us) != 0) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("LL", (long long)millicpus, (long long)period_us);
}

/* quota_now() -> (millicpus, period_us) of the budget; quota_ask(wanted) -> threads now */
static PyObject *quota_state(PyObject *self, PyObject *unused) {
    int64_t millicpus, period_us;
    (void)self;
    (void)unused;
    quota_now(&millicpus, &period_us);
    return Py_BuildValue("LL", (long long)millicpus, (long long)period_us);
}

static PyObject *quota_files(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLongLong((long long)quota_files_now());
}

static PyObject *quota_ask(PyObject *self, PyObject *args) {
    int wanted;
    (void)self;
    if (!PyArg_ParseTuple(args, "i", &wanted)) {
        return NULL;
    }
    return PyLong_FromLong(quota_allowed(wanted, 0.0));
}

/* parse_usage(text) -> ns: a usage file's text as the budget reads it (-1: not one) */
static PyObject *parse_usage(PyObject *self, PyObject *args) {
    const char *text;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &text)) {
        return NULL;
    }
    return PyLong_FromLongLong((long long)quota_parse_usage(text));
}

static PyObject *job_spin(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLongLong((long long)pool_job_spin_us());
}

static PyObject *asleep(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(pool_asleep());
}

static PyObject *joined(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(pool_last_joined());
}

/* A job whose piece k sleeps `piece_us` and records the range of the thread that ran it. */
typedef struct {
    int32_t *runner;
    _Atomic int32_t *runs;
    int64_t piece_ns;
} probe_job_t;

static void probe_piece(void *context, int64_t k) {
    const probe_job_t *job = (const probe_job_t *)context;
    struct timespec pause = {(time_t)(job->piece_ns / 1000000000),
                             (long)(job->piece_ns % 1000000000)};
    if (job->piece_ns > 0) {
        nanosleep(&pause, NULL);
    }
    job->runner[k] = (int32_t)pool_participant();
    atomic_fetch_add(&job->runs[k], 1);
}

/* pool_probe(pieces, threads, piece_us) -> (runners, runs): for each piece the range of the
 * thread that ran it (0: the caller's) and how many times it ran (for tests). */
static PyObject *pool_probe(PyObject *self, PyObject *args) {
    long long pieces, piece_us;
    int threads;
    (void)self;
    if (!PyArg_ParseTuple(args, "LiL", &pieces, &threads, &piece_us)) {
        return NULL;
    }
    if (pieces < 1 || pieces > (1 << 20) || threads < 1 || piece_us < 0) {
        PyErr_SetString(PyExc_ValueError, "pool_probe: 1 to 2^20 pieces, 1 thread or more");
        return NULL;
    }
    PyObject *runner = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)pieces * 4);
    int32_t *runs = (int32_t *)calloc((size_t)pieces, sizeof(int32_t));
    if (runner == NULL || runs == NULL) {
        Py_XDECREF(runner);
        free(runs);
        return PyErr_NoMemory();
    }
    probe_job_t job = {(int32_t *)(void *)PyBytes_AS_STRING(runner), (_Atomic int32_t *)runs,
                       (int64_t)piece_us * 1000};
    Py_BEGIN_ALLOW_THREADS
    pool_run(probe_piece, &job, (int64_t)pieces, threads, 0);
    Py_END_ALLOW_THREADS
    PyObject *counts = PyBytes_FromStringAndSize((const char *)runs, (Py_ssize_t)pieces * 4);
    free(runs);
    if (counts == NULL) {
        Py_DECREF(runner);
        return NULL;
    }
    return Py_BuildValue("(NN)", runner, counts);
}

static PyObject *helper_cap(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(pool_helper_cap());
}

static PyObject *block(PyObject *self, PyObject *args) {
    Py_ssize_t size;
    long long tag = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "n|L", &size, &tag)) {
        return NULL;
    }
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "a block's size is a count of bytes >= 0");
        return NULL;
    }
    return block_new(size, tag);
}

static PyObject *cache_limit(PyObject *self, PyObject *args) {
    Py_ssize_t bytes;
    (void)self;
    if (!PyArg_ParseTuple(args, "n", &bytes)) {
        return NULL;
    }
    blocks_set_limit(bytes);
    Py_RETURN_NONE;
}

static PyObject *cached(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromSsize_t(blocks_cached());
}

static PyObject *clear_cache(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    blocks_clear();
    Py_RETURN_NONE;
}

/* scatter(destination, targets, rows, size, row, step): row k of `rows` (C-contiguous, `row`
 * elements of `size` bytes each) written at element targets[k] of `destination`, its
 * elements `step` elements apart, in k's order: of rows to one place the later stays
 * (DirectML's later-update-wins) with no search for repeats. `targets` holds intp. Every
 * target is checked before anything is written (ValueError, nothing written). */
#define SCATTER_LOOP(TYPE)                                                             \
    do {                                                                               \
        TYPE *to = (TYPE *)dst;                                                        \
        const TYPE *from = (const TYPE *)src;                                          \
        for (Py_ssize_t k = 0; k < count; k++) {                                       \
            const Py_ssize_t t = targets[k];                                           \
            for (Py_ssize_t j = 0; j < row; j++) {                                     \
                to[t + j * step] = from[k * row + j];                                  \
            }                                                                          \
        }                                                                              \
    } while (0)

/* Rows of `row` elements of `size` bytes from src, in order, to the targets in dst. */
static void scatter_rows(void *dst, const Py_ssize_t *targets, Py_ssize_t count, const void *src,
                         Py_ssize_t size, Py_ssize_t row, Py_ssize_t step) {
    switch (size) {
    case 1: SCATTER_LOOP(uint8_t); break;
    case 2: SCATTER_LOOP(uint16_t); break;
    case 4: SCATTER_LOOP(uint32_t); break;
    case 8: SCATTER_LOOP(uint64_t); break;
    default:
        for (Py_ssize_t k = 0; k < count; k++) {
            for (Py_ssize_t j = 0; j < row; j++) {
                memcpy((char *)dst + (targets[k] + j * step) * size,
                       (const char *)src + (k * row + j) * size, (size_t)size);
            }
        }
    }
}

/* A conversion cut into pieces for the pool. */
typedef struct {
    const void *from;
    void *to;
    int64_t count, piece;
    int hardware;
    int mode; /* NARROW (float32 to float16), WIDEN (float16 to float32), NARROW_DOUBLES */
} halves_job_t;

enum { NARROW, WIDEN, NARROW_DOUBLES };

static void halves_piece(void *context, int64_t k) {
    const halves_job_t *job = (const halves_job_t *)context;
    int64_t first = k * job->piece;
    int64_t n = job->count - first < job->piece ? job->count - first : job->piece;
    if (job->mode == WIDEN) {
        floats_from_halves((const uint16_t *)job->from + first, (uint32_t *)job->to + first, n,
                           job->hardware);
    } else if (job->mode == NARROW) {
        halves_from_floats((const uint32_t *)job->from + first, (uint16_t *)job->to + first, n,
                           job->hardware);
    } else {
        halves_from_doubles((const uint64_t *)job->from + first, (uint16_t *)job->to + first, n);
    }
}

#define HALVES_PIECE (64 << 10) /* elements a piece: 256 KiB read, 128 KiB written */

/* A conversion's pieces, on the pool where there are several and threads for them. */
static void convert_all(halves_job_t *job, int64_t pieces, int threads, int64_t bytes) {
    if (threads > 1 && pieces > 1) {
        pool_run(halves_piece, job, pieces, threads < pieces ? threads : (int)pieces, bytes);
    } else if (job->count > 0) {
        for (int64_t k = 0; k < pieces; k++) {
            halves_piece(job, k);
        }
    }
}

/* A float16 <-> float32 (or float64 -> float16) conversion of src's elements into dst on
 * up to `threads` threads (a piece of 64K elements each). */
static PyObject *converted(PyObject *args, int mode) {
    Py_buffer src, dst;
    int hardware = 1; /* 0: the integer conversion even where F16C is there (for tests) */
    int threads = 1;
    if (!PyArg_ParseTuple(args, "y*w*|pi", &src, &dst, &hardware, &threads)) {
        return NULL;
    }
    Py_ssize_t in_size = mode == WIDEN ? 2 : mode == NARROW ? 4 : 8;
    Py_ssize_t out_size = mode == WIDEN ? 4 : 2;
    if (src.len % in_size != 0 || dst.len * in_size != src.len * out_size) {
        PyBuffer_Release(&src);
        PyBuffer_Release(&dst);
        PyErr_SetString(PyExc_ValueError,
                        mode == WIDEN    ? "floats: dst must hold 4 bytes for each 2 of src"
                        : mode == NARROW ? "halves: dst must hold 2 bytes for each 4 of src"
                                         : "halves_of_doubles: dst must hold 2 bytes for each 8 "
                                           "of src");
        return NULL;
    }
    halves_job_t job = {src.buf, dst.buf, src.len / in_size, HALVES_PIECE, hardware, mode};
    int64_t pieces = (job.count + HALVES_PIECE - 1) / HALVES_PIECE;
    UNLOCKED_IF_LONG(dst.len, pieces > 1 ? threads : 1,
                     convert_all(&job, pieces, threads, (int64_t)dst.len));
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    Py_RETURN_NONE;
}

/* halves(src, dst[, hardware[, threads]]): float32 elements (src's bytes) to float16 bits in
 * dst, by CAST's rules. */
static PyObject *halves(PyObject *self, PyObject *args) {
    (void)self;
    return converted(args, NARROW);
}

/* halves_of_doubles(src, dst[, hardware[, threads]]): float64 elements to float16 bits, one
 * rounding (integer arithmetic: no hardware conversion of doubles to halves). */
static PyObject *halves_of_doubles(PyObject *self, PyObject *args) {
    (void)self;
    return converted(args, NARROW_DOUBLES);
}

/* floats(src, dst[, hardware[, threads]]): float16 elements to float32 in dst (exact; a NaN
 * the canonical 0x7FFFFFFF). */
static PyObject *floats(PyObject *self, PyObject *args) {
    (void)self;
    return converted(args, WIDEN);
}

/* The lowest and highest byte offsets a box of `shape` with byte `strides` reaches. */
static void reach(const int64_t *shape, const int64_t *strides, int rank, int64_t *low,
                  int64_t *high) {
    *low = 0;
    *high = 0;
    for (int d = 0; d < rank; d++) {
        int64_t extent = (shape[d] - 1) * strides[d];
        if (extent < 0) {
            *low += extent;
        } else {
            *high += extent;
        }
    }
}

/* A sequence of at most MOST_COMPACT_RANK ints into `into`; its length, or -1 (set). */
static int int64s(PyObject *sequence, int64_t *into) {
    PyObject *fast = PySequence_Fast(sequence, "compact: expected a sequence of ints");
    if (fast == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MOST_COMPACT_RANK) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "compact: too many dimensions");
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        into[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, k));
        if (into[k] == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return (int)n;
}

/* compact(src, src_offset, shape, src_strides, element, sign_free, dst, dst_offset,
 * row_stride, column_stride, columns[, threads]) -> count: a stream compaction (compact.h), byte
 * offsets and strides; every place it may touch is checked against the buffers first. */
static PyObject *compact(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    Py_ssize_t src_offset, dst_offset, row_stride, column_stride;
    PyObject *shape_list, *strides_list;
    int element, sign_free, columns, threads = 1;
    int64_t shape[MOST_COMPACT_RANK], strides[MOST_COMPACT_RANK];
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nOOipw*nnni|i", &src, &src_offset, &shape_list,
                          &strides_list, &element, &sign_free, &dst, &dst_offset, &row_stride,
                          &column_stride, &columns, &threads)) {
        return NULL;
    }
    int rank = int64s(shape_list, shape);
    int same = rank < 0 ? -1 : int64s(strides_list, strides);
    const char *bad = NULL;
    int64_t rows = 1, low, high, dst_low, dst_high;
    if (rank < 0 || same < 0) {
        bad = "";
    } else if (same != rank || (element != 1 && element != 2 && element != 4 && element != 8) ||
               columns < 1) {
        bad = "compact: strides, element size or columns do not fit the box";
    } else {
        for (int d = 0; d < rank; d++) {
            rows = shape[d] > 0 ? rows * shape[d] : 0;
        }
        reach(shape, strides, rank, &low, &high);
        int64_t box[2] = {rows, columns}, steps[2] = {row_stride, column_stride};
        reach(box, steps, 2, &dst_low, &dst_high);
        if (rows > 0 && (src_offset + low < 0 || src_offset + high + element > src.len ||
                         dst_offset + dst_low < 0 || dst_offset + dst_high + 4 > dst.len)) {
            bad = "compact: the box or its rows lie outside their buffers";
        }
    }
    if (bad != NULL) {
        PyBuffer_Release(&src);
        PyBuffer_Release(&dst);
        if (*bad) {
            PyErr_SetString(PyExc_ValueError, bad);
        }
        return NULL;
    }
    int64_t found = 0;
    if (rows > 0) {
        UNLOCKED_IF_LONG(src.len, threads,
                         found = compact_nonzero((const char *)src.buf + src_offset, shape,
                                                 strides, rank, element, sign_free,
                                                 (char *)dst.buf + dst_offset, row_stride,
                                                 column_stride, columns, threads));
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return PyLong_FromLongLong(found);
}

static PyObject *hardware_halves(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyBool_FromLong(halves_in_hardware());
}

static PyObject *scatter(PyObject *self, PyObject *args) {
    Py_buffer dst, at, src;
    Py_ssize_t size, row, step;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*y*y*nnn", &dst, &at, &src, &size, &row, &step)) {
        return NULL;
    }
    const Py_ssize_t *targets = (const Py_ssize_t *)at.buf;
    const Py_ssize_t count = at.len / (Py_ssize_t)sizeof(Py_ssize_t);
    const Py_ssize_t places = size > 0 ? dst.len / size : 0;
    int bad = size <= 0 || row < 1 || step < 0 || src.len < count * row * size;
    for (Py_ssize_t k = 0; k < count && !bad; k++) {
        bad = targets[k] < 0 || targets[k] + (row - 1) * step >= places;
    }
    if (bad) {
        PyBuffer_Release(&dst);
        PyBuffer_Release(&at);
        PyBuffer_Release(&src);
        PyErr_SetString(PyExc_ValueError, "scatter: a target lies outside the destination");
        return NULL;
    }
    UNLOCKED_IF_LONG(count * row * size, 1,
                     scatter_rows(dst.buf, targets, count, src.buf, size, row, step));
    PyBuffer_Release(&dst);
    PyBuffer_Release(&at);
    PyBuffer_Release(&src);
    Py_RETURN_NONE;
}

/* Whether the byte ranges of two buffers meet. */
static int buffers_meet(const Py_buffer *a, const Py_buffer *b) {
    const char *a0 = (const char *)a->buf, *b0 = (const char *)b->buf;
    return a->len > 0 && b->len > 0 && a0 < b0 + b->len && b0 < a0 + a->len;
}

/* indexed(meta, src, dst, index, element, threads[, how]) -> True (done), False (an index
 * out of range where that is an error: nothing written unless how is INDEXED_MOVE) or None
 * (not run: dst meets src or the index, which the caller's ordered path handles).
 * ValueError for a table that reaches outside its buffers (indexed.h). */
static PyObject *indexed(PyObject *self, PyObject *args) {
    Py_buffer meta, src, dst, idx;
    PyObject *src_object, *dst_object, *idx_object;
    int element, threads, how = INDEXED_CHECK_THEN_MOVE;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*OOOii|i", &meta, &src_object, &dst_object, &idx_object,
                          &element, &threads, &how)) {
        return NULL;
    }
    /* (bound buffers: arrays contiguous in either order, as the plan's copies take them) */
    if (PyObject_GetBuffer(src_object, &src, PyBUF_ANY_CONTIGUOUS) < 0) {
        PyBuffer_Release(&meta);
        return NULL;
    }
    if (PyObject_GetBuffer(dst_object, &dst, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&meta);
        PyBuffer_Release(&src);
        return NULL;
    }
    if (PyObject_GetBuffer(idx_object, &idx, PyBUF_ANY_CONTIGUOUS) < 0) {
        PyBuffer_Release(&meta);
        PyBuffer_Release(&src);
        PyBuffer_Release(&dst);
        return NULL;
    }
    int done = INDEXED_BAD_TABLE, meet = buffers_meet(&dst, &src) || buffers_meet(&dst, &idx);
    if (!meet && meta.len % (Py_ssize_t)sizeof(int64_t) == 0) {
        /* (the bytes it moves: a gather's output, a scatter's rows, at most) */
        UNLOCKED_IF_LONG(src.len < dst.len ? src.len : dst.len, threads,
                         done = indexed_run((const int64_t *)meta.buf, (int64_t)(meta.len / 8),
                                            (const char *)src.buf, (int64_t)src.len,
                                            (char *)dst.buf, (int64_t)dst.len,
                                            (const uint8_t *)idx.buf, (int64_t)idx.len, element,
                                            threads < 1 ? 1 : threads, how));
    }
    PyBuffer_Release(&meta);
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&idx);
    if (meet) {
        Py_RETURN_NONE;
    }
    if (done == INDEXED_BAD_TABLE) {
        PyErr_SetString(PyExc_ValueError,
                        "indexed: the table is not an indexed copy's or reaches outside its "
                        "buffers");
        return NULL;
    }
    return PyBool_FromLong(done == INDEXED_DONE);
}

static PyMethodDef methods[] = {
    {"compact", compact, METH_VARARGS,
     "Nonzero elements' coordinates of a strided box as UINT32 rows; returns their count."},
    {"halves", halves, METH_VARARGS,
     "float32 elements to float16 bits by CAST's rules (round to nearest even, NaN 0x7FFF)."},
    {"floats", floats, METH_VARARGS,
     "float16 elements to float32 (exact; NaN 0x7FFFFFFF)."},
    {"halves_of_doubles", halves_of_doubles, METH_VARARGS,
     "float64 elements to float16 bits by CAST's rules, rounded once."},
    {"hardware_halves", hardware_halves, METH_NOARGS,
     "Whether halves uses the CPU's F16C conversion."},
    {"indexed", indexed, METH_VARARGS,
     "An indexed copy's rows (a meta table) moved, every index checked first."},
    {"scatter", scatter, METH_VARARGS,
     "Rows written at element targets in order (the later of two to one place stays)."},
    {"block", block, METH_VARARGS,
     "A new Block of this many bytes (memory of a new output; the tag's own block first)."},
    {"cache_limit", cache_limit, METH_VARARGS, "Bytes of dropped outputs' memory kept."},
    {"cached", cached, METH_NOARGS, "Bytes of dropped outputs' memory kept now."},
    {"clear_cache", clear_cache, METH_NOARGS, "Free the memory of dropped outputs kept."},
    {"run", run, METH_VARARGS, "Run a plan table's copies between the bound buffers."},
    {"fresh", (PyCFunction)(void (*)(void))fresh, METH_FASTCALL,
     "A one-output plan into a new array empty(shape, dtype), on the calling thread."},
    {"into", (PyCFunction)(void (*)(void))into, METH_FASTCALL,
     "A one-output plan into a given array, on the calling thread; False where they meet."},
    {"span", span_of, METH_VARARGS,
     "A strided array's bytes from `low` past its first element, `nbytes` long, as a flat buffer."},
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "Set the pool's spin time, the engine's grain sizes and its streaming threshold."},
    {"workers", workers, METH_NOARGS, "Worker threads started in this process."},
    {"pool_taken", taken, METH_NOARGS, "Whether a thread's job holds the pool now."},
    {"jobs_begun", begun, METH_NOARGS, "How many native jobs this process has begun."},
    {"fields_key", fields_key, METH_VARARGS,
     "An operator's fields as one bytes key, each value with its type; None: pickle them."},
    {"gil_busy", gil_busy, METH_NOARGS,
     "Whether a released job lately waited long for the GIL (longer jobs keep it)."},
    {"estimate_spare", estimate_spare, METH_VARARGS,
     "The spare-CPU estimate of a /proc/loadavg text, ours runnable, the set's and online CPUs."},
    {"quota_trace", quota_trace, METH_VARARGS,
     "A fresh quota budget's threads for each (wall, CPU[, job[, group CPU]] ns) reading."},
    {"quota_usage", quota_usage, METH_VARARGS,
     "Count the quota's budget by this file of its group's CPU time (\"\": this process's)."},
    {"quota_watch", quota_watch_files, METH_VARARGS,
     "Read the quota again from these files (limit, period or \"\") at most once a second."},
    {"parse_limit", parse_limit, METH_VARARGS,
     "A quota's files' texts as (thousandths of a CPU, period in µs), or None."},
    {"quota_now", quota_state, METH_NOARGS,
     "The budget's quota: (thousandths of a CPU, period in µs)."},
    {"quota_ask", quota_ask, METH_VARARGS, "Threads the budget gives a job now, of these."},
    {"quota_files_now", quota_files, METH_NOARGS,
     "The quota as its watched files say now, in thousandths of a CPU (0: none; -1: none watched)."},
    {"parse_usage", parse_usage, METH_VARARGS,
     "A group CPU-time file's first line as nanoseconds, as the budget reads it (-1: none)."},
    {"job_spin", job_spin, METH_NOARGS,
     "The idle spin (µs) the last job that asked helpers gave its workers."},
    {"asleep", asleep, METH_NOARGS, "Workers asleep now (not spinning)."},
    {"joined", joined, METH_NOARGS,
     "Workers that took part in the last job that could have asked helpers (0: none asked)."},
    {"pool_probe", pool_probe, METH_VARARGS,
     "Run a job of sleeping pieces; each piece's runner (0: the caller) and run count."},
    {"helper_cap", helper_cap, METH_NOARGS,
     "Workers a job may wake, as learnt from straggling jobs (-1: no limit)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native", "dmlops' CPU copy engine.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (blocks_init() != 0) {
        return NULL;
    }
    if (spans_init() != 0) {
        return NULL;
    }
    if (pool_init() != 0) {
        PyErr_SetString(PyExc_OSError, "could not register the engine's fork handlers");
        return NULL;
    }
    PyObject *made = PyModule_Create(&module);
    if (made == NULL) {
        return NULL;
    }
    PyModule_AddIntConstant(made, "MOST_OUTER", MOST_OUTER);
    PyModule_AddIntConstant(made, "MOST_MEMBERS", MOST_MEMBERS);
    PyModule_AddIntConstant(made, "RECORD", (int)(sizeof(copy_t) / sizeof(int64_t)));
    PyModule_AddIntConstant(made, "KEEP_CACHED", KEEP_CACHED);
    PyModule_AddIntConstant(made, "TILE_BLOCKS", TILE_BLOCKS);
    PyModule_AddIntConstant(made, "INDEXED_MOVE", INDEXED_MOVE);
    PyModule_AddIntConstant(made, "INDEXED_CHECK", INDEXED_CHECK);
    Py_INCREF(&BlockType);
    PyModule_AddObject(made, "Block", (PyObject *)&BlockType);
    return made;
}
