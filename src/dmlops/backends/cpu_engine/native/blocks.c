/* New outputs' memory (blocks.h). A fresh array of a few megabytes costs more in first-touch
 * page faults than the copy that fills it (the allocator hands large blocks back to the
 * operating system when they are freed, so every call faults them in again): on the
 * 16-core host a QKV split into new arrays took 4 ms, into arrays made before 0.45 ms.
 * Blocks keep the memory of dropped outputs mapped, up to a limit, and hand it to the next
 * output of the same size: the newest one that the same output of the same call had
 * before (its tag), else the newest of the size. A call repeated on the same arrays then
 * writes the same memory each time, each part of it from the core that wrote it last (the
 * pool gives a thread the same range of a job each time); two calls whose outputs are of
 * one size would otherwise trade them at every round. A Block is the base of the arrays
 * made on it, so its memory returns only when the last view of it is gone. */
#include "blocks.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define MOST_KEPT 64
#define ALIGNMENT 64
#define HUGE_PAGE ((Py_ssize_t)2 << 20)
#define HUGE_FROM ((Py_ssize_t)4 << 20) /* blocks this large asked for in huge pages */

/* size bytes of new memory at a line's boundary; from 4 MiB on at a huge page's, its whole
 * huge pages asked for as such (numpy's own arrays of that size are: a 4 KiB page a TLB
 * entry left a 4 MiB join into a new output 1.2-1.4 x slower than into numpy's array on a
 * VM thread, where the kernel backs only memory that asks with huge pages) */
static char *new_memory(Py_ssize_t size) {
    void *made = NULL;
    size_t alignment = size >= HUGE_FROM ? (size_t)HUGE_PAGE : ALIGNMENT;
    if (posix_memalign(&made, alignment, (size_t)(size > 0 ? size : 1)) != 0) {
        return NULL;
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_FROM) {
        (void)madvise(made, (size_t)(size & ~(HUGE_PAGE - 1)), MADV_HUGEPAGE);
    }
#endif
    return (char *)made;
}

typedef struct {
    PyObject_HEAD
    char *memory;
    Py_ssize_t size;
    Py_ssize_t exports;
    long long tag;
} Block;

static struct {
    pthread_mutex_t lock;
    char *memory[MOST_KEPT]; /* oldest first */
    Py_ssize_t size[MOST_KEPT];
    long long tag[MOST_KEPT];
    int count;
    Py_ssize_t bytes;
    Py_ssize_t limit;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .limit = (Py_ssize_t)256 << 20};

static void drop_oldest(void) { /* (lock held) */
    free(cache.memory[0]);
    cache.bytes -= cache.size[0];
    cache.count--;
    memmove(cache.memory, cache.memory + 1, (size_t)cache.count * sizeof(char *));
    memmove(cache.size, cache.size + 1, (size_t)cache.count * sizeof(Py_ssize_t));
    memmove(cache.tag, cache.tag + 1, (size_t)cache.count * sizeof(long long));
}

static char *take(Py_ssize_t size, long long tag) {
    char *found = NULL;
    int chosen = -1;
    pthread_mutex_lock(&cache.lock);
    for (int k = cache.count - 1; k >= 0; k--) { /* the newest first: warmest in cache */
        if (cache.size[k] == size) {
            if (chosen < 0) {
                chosen = k;
            }
            if (cache.tag[k] == tag) {
                chosen = k;
                break;
            }
        }
    }
    if (chosen >= 0) {
        found = cache.memory[chosen];
        cache.bytes -= size;
        cache.count--;
        size_t after = (size_t)(cache.count - chosen);
        memmove(cache.memory + chosen, cache.memory + chosen + 1, after * sizeof(char *));
        memmove(cache.size + chosen, cache.size + chosen + 1, after * sizeof(Py_ssize_t));
        memmove(cache.tag + chosen, cache.tag + chosen + 1, after * sizeof(long long));
    }
    pthread_mutex_unlock(&cache.lock);
    if (found == NULL) {
        found = new_memory(size);
    }
    return found;
}

static void give_back(char *memory, Py_ssize_t size, long long tag) {
    pthread_mutex_lock(&cache.lock);
    if (size > cache.limit) {
        pthread_mutex_unlock(&cache.lock);
        free(memory);
        return;
    }
    while (cache.count > 0 && (cache.count == MOST_KEPT || cache.bytes + size > cache.limit)) {
        drop_oldest();
    }
    cache.memory[cache.count] = memory;
    cache.size[cache.count] = size;
    cache.tag[cache.count] = tag;
    cache.count++;
    cache.bytes += size;
    pthread_mutex_unlock(&cache.lock);
}

PyObject *block_new(Py_ssize_t size, long long tag) {
    Block *self = PyObject_New(Block, &BlockType);
    if (self == NULL) {
        return NULL;
    }
    self->memory = take(size, tag);
    self->size = size;
    self->exports = 0;
    self->tag = tag;
    if (self->memory == NULL) {
        self->size = 0;
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void block_dealloc(Block *self) {
    if (self->memory != NULL) {
        give_back(self->memory, self->size, self->tag);
    }
    PyObject_Free(self);
}

static int block_getbuffer(Block *self, Py_buffer *view, int flags) {
    int done = PyBuffer_FillInfo(view, (PyObject *)self, self->memory, self->size, 0, flags);
    if (done == 0) {
        self->exports++;
    }
    return done;
}

static void block_releasebuffer(Block *self, Py_buffer *view) {
    (void)view;
    self->exports--;
}

static PyBufferProcs block_buffer = {
    (getbufferproc)block_getbuffer,
    (releasebufferproc)block_releasebuffer,
};

PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "dmlops.backends.cpu_engine._native.Block",
    .tp_basicsize = sizeof(Block),
    .tp_dealloc = (destructor)block_dealloc,
    .tp_as_buffer = &block_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of new outputs: back to dmlops' cache when the last view is gone.",
};

void blocks_set_limit(Py_ssize_t bytes) {
    pthread_mutex_lock(&cache.lock);
    cache.limit = bytes < 0 ? 0 : bytes;
    while (cache.count > 0 && cache.bytes > cache.limit) {
        drop_oldest();
    }
    pthread_mutex_unlock(&cache.lock);
}

Py_ssize_t blocks_cached(void) {
    pthread_mutex_lock(&cache.lock);
    Py_ssize_t bytes = cache.bytes;
    pthread_mutex_unlock(&cache.lock);
    return bytes;
}

void blocks_clear(void) {
    pthread_mutex_lock(&cache.lock);
    while (cache.count > 0) {
        drop_oldest();
    }
    pthread_mutex_unlock(&cache.lock);
}

static void after_fork_in_child(void) {
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&cache.lock, &fresh, sizeof(fresh));
}

int blocks_init(void) {
    if (PyType_Ready(&BlockType) < 0) {
        return -1;
    }
    return pthread_atfork(NULL, NULL, after_fork_in_child);
}
