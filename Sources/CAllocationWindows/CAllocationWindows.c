#include "CAllocationWindows.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// The Swift concurrency runtime (libswift_Concurrency), called from inside allocations: reading
// the task running on this thread is one thread-local read, and allocates nothing.

/// The task running on this thread (an `AsyncTask *`), or NULL.
extern void *swift_task_getCurrent(void) __attribute__((swiftcall));

/// The runtime's hooks for enqueueing a job on the global executor and on the main actor.
typedef __attribute__((swiftcall)) void (*enqueue_original)(void *job);
typedef __attribute__((swiftcall)) void (*enqueue_hook)(void *job, enqueue_original original);
extern enqueue_hook swift_task_enqueueGlobal_hook;
extern enqueue_hook swift_task_enqueueMainExecutor_hook;

struct session_bench_windows {
    /// Windows in use, and allocated.
    size_t callers;
    size_t capacity;
    /// Which window is whose: a task's key at its hash, or at the next free slot after it.
    size_t mask;
    unsigned shift;
    void *_Atomic *tasks;
    uint32_t *indexes;
    session_bench_window *windows;
    pthread_mutex_t registering;
};

/// The windows counting now, if any.
static _Atomic(session_bench_windows *) installed = NULL;

/// Set while this thread counts an allocation, so that nothing under it counts itself.
static __thread int counting __attribute__((tls_model("initial-exec")));

/// The job the runtime is enqueueing on this thread now. A task that suspends in a call (an
/// actor hop, a continuation) leaves its thread, and the runtime then enqueues it where it
/// resumes: Swift 6 clears the running task before enqueueing it, so the enqueue's
/// allocations (a dispatch continuation) are found by the job instead. Swift 6.3 calls the
/// global hook; its main actor and actors enqueue past both.
static __thread void *enqueueing __attribute__((tls_model("initial-exec")));

__attribute__((swiftcall)) static void enqueue_counted(void *job, enqueue_original original) {
    void *outer = enqueueing;
    enqueueing = job;
    original(job);
    enqueueing = outer;
}

/// Windows given back, for reuse. Never freed: a hook that read `installed` just before the
/// windows were uninstalled may still be reading them. Reuse is safe where freeing is not: a
/// hook writes only into the open window of a task running (or being enqueued) on its own
/// thread, and windows are given back only once every caller that had one has finished.
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static session_bench_windows *spare = NULL;

static size_t slot_of(const session_bench_windows *windows, const void *task) {
    return (size_t)(((uint64_t)(uintptr_t)task * 0x9E3779B97F4A7C15ULL) >> windows->shift);
}

static void reset(session_bench_windows *windows, size_t callers) {
    windows->callers = callers;
    for (size_t slot = 0; slot <= windows->mask; slot++) {
        atomic_store_explicit(&windows->tasks[slot], NULL, memory_order_relaxed);
    }
    memset(windows->windows, 0, windows->capacity * sizeof(session_bench_window));
    atomic_thread_fence(memory_order_release);
}

session_bench_windows *session_bench_windows_make(size_t callers) {
    pthread_mutex_lock(&spare_lock);
    session_bench_windows *reused = NULL;
    if (spare != NULL && spare->capacity >= callers) {
        reused = spare;
        spare = NULL;
    }
    pthread_mutex_unlock(&spare_lock);
    if (reused != NULL) {
        reset(reused, callers);
        return reused;
    }
    // At least twice as many slots as callers: probes stay short and always end at a free one.
    unsigned bits = 4;
    while (((size_t)1 << bits) < 2 * callers) bits++;
    size_t slots = (size_t)1 << bits;
    session_bench_windows *windows = calloc(1, sizeof(session_bench_windows));
    if (windows == NULL) return NULL;
    windows->capacity = callers == 0 ? 1 : callers;
    windows->mask = slots - 1;
    windows->shift = 64 - bits;
    windows->tasks = calloc(slots, sizeof(void *));
    windows->indexes = calloc(slots, sizeof(uint32_t));
    void *block = NULL;
    if (posix_memalign(&block, 64, windows->capacity * sizeof(session_bench_window)) != 0) block = NULL;
    windows->windows = block;
    if (windows->tasks == NULL || windows->indexes == NULL || windows->windows == NULL) {
        free(windows->tasks);
        free(windows->indexes);
        free(windows->windows);
        free(windows);
        return NULL;
    }
    pthread_mutex_init(&windows->registering, NULL);
    reset(windows, callers);
    return windows;
}

void session_bench_windows_release(session_bench_windows *windows) {
    if (windows == NULL) return;
    pthread_mutex_lock(&spare_lock);
    // The larger is kept for reuse; the other stays where it is (see `spare`).
    if (spare == NULL || windows->capacity >= spare->capacity) spare = windows;
    pthread_mutex_unlock(&spare_lock);
}

session_bench_window *session_bench_windows_register(session_bench_windows *windows, size_t index) {
    void *task = swift_task_getCurrent();
    if (windows == NULL || task == NULL || index >= windows->callers) return NULL;
    pthread_mutex_lock(&windows->registering);
    size_t slot = slot_of(windows, task);
    void *key;
    while ((key = atomic_load_explicit(&windows->tasks[slot], memory_order_relaxed)) != NULL && key != task) {
        slot = (slot + 1) & windows->mask;
    }
    windows->indexes[slot] = (uint32_t)index;
    atomic_store_explicit(&windows->tasks[slot], task, memory_order_release);
    pthread_mutex_unlock(&windows->registering);
    return &windows->windows[index];
}

int session_bench_windows_install(session_bench_windows *windows) {
    // Someone else's enqueue hooks (a custom global executor) are left alone: not counted.
    if (swift_task_enqueueGlobal_hook != NULL || swift_task_enqueueMainExecutor_hook != NULL) return -1;
    session_bench_windows *none = NULL;
    if (!atomic_compare_exchange_strong(&installed, &none, windows)) return -1;
    swift_task_enqueueGlobal_hook = enqueue_counted;
    swift_task_enqueueMainExecutor_hook = enqueue_counted;
    return 0;
}

void session_bench_windows_uninstall(session_bench_windows *windows) {
    session_bench_windows *expected = windows;
    if (!atomic_compare_exchange_strong(&installed, &expected, NULL)) return;
    swift_task_enqueueGlobal_hook = NULL;
    swift_task_enqueueMainExecutor_hook = NULL;
}

void session_bench_windows_totals(const session_bench_windows *windows, uint64_t *count, uint64_t *bytes) {
    uint64_t total = 0, totalBytes = 0;
    for (size_t index = 0; index < windows->callers; index++) {
        total += __atomic_load_n(&windows->windows[index].count, __ATOMIC_RELAXED);
        totalBytes += __atomic_load_n(&windows->windows[index].bytes, __ATOMIC_RELAXED);
    }
    *count = total;
    *bytes = totalBytes;
}

/// The window of `task`, open or not, or NULL if it has none.
static session_bench_window *window_of(session_bench_windows *windows, const void *task) {
    size_t slot = slot_of(windows, task);
    void *key;
    while ((key = atomic_load_explicit(&windows->tasks[slot], memory_order_acquire)) != NULL) {
        if (key == task) return &windows->windows[windows->indexes[slot]];
        slot = (slot + 1) & windows->mask;
    }
    return NULL;
}

/// The open window an allocation made here now belongs to, or NULL: that of the caller being
/// enqueued here, or else that of the task running here.
static session_bench_window *open_window(void) {
    session_bench_windows *windows = atomic_load_explicit(&installed, memory_order_acquire);
    if (windows == NULL) return NULL;
    session_bench_window *window = enqueueing != NULL ? window_of(windows, enqueueing) : NULL;
    if (window == NULL) {
        void *task = swift_task_getCurrent();
        if (task == NULL) return NULL;
        window = window_of(windows, task);
        if (window == NULL) return NULL;
    }
    return __atomic_load_n(&window->open, __ATOMIC_RELAXED) ? window : NULL;
}

/// Adds one allocation. Atomic: a caller's enqueue may still be allocating on one thread
/// while the caller, already resumed, allocates on another.
static void add(session_bench_window *window, uint64_t bytes) {
    __atomic_fetch_add(&window->count, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&window->bytes, bytes, __ATOMIC_RELAXED);
}

void session_bench_count_allocation(size_t bytes) {
    if (counting) return;
    counting = 1;
    session_bench_window *window = open_window();
    if (window != NULL) add(window, bytes);
    counting = 0;
}

// jemalloc's hooks: its `hook_alloc_t` and `hook_expand_t` (jemalloc/internal/hook.h).
enum { jemalloc_expand_realloc = 0 };

static void jemalloc_alloc_hook(void *extra, int type, void *result, uintptr_t result_raw, uintptr_t args[3]) {
    (void)extra, (void)type, (void)result_raw, (void)args;
    if (result == NULL || counting) return;
    counting = 1;
    session_bench_window *window = open_window();
    // Size-class bytes, as jemalloc's arena statistics count them.
    if (window != NULL) add(window, malloc_usable_size(result));
    counting = 0;
}

static void jemalloc_expand_hook(
    void *extra, int type, void *address, size_t old_usize, size_t new_usize, uintptr_t result_raw,
    uintptr_t args[4]) {
    (void)extra, (void)address, (void)old_usize, (void)result_raw, (void)args;
    // A realloc jemalloc did in place is a realloc all the same, as the interposer counts it.
    if (type == jemalloc_expand_realloc) session_bench_count_allocation(new_usize);
}

session_bench_jemalloc_hooks *session_bench_jemalloc_counting_hooks(void) {
    static session_bench_jemalloc_hooks hooks = {
        (void *)jemalloc_alloc_hook, NULL, (void *)jemalloc_expand_hook, NULL,
    };
    return &hooks;
}
