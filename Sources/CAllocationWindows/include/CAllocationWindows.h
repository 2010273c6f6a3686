#ifndef SESSION_BENCH_C_ALLOCATION_WINDOWS_H
#define SESSION_BENCH_C_ALLOCATION_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

/// The allocations one caller made inside its calls to the store: counted while `open` is
/// set, by the allocation hook, on whichever thread is running the caller's task at the time.
/// Touched only by that task (and the hook, inside an allocation the task makes), so plain
/// fields need no lock. 64 bytes, in an array aligned to 64: a cache line of its own, so
/// callers on different cores never share one.
typedef struct session_bench_window {
    uint64_t open;
    uint64_t count;
    uint64_t bytes;
    uint64_t unused[5];
} session_bench_window;

_Static_assert(sizeof(session_bench_window) == 64, "one window, one cache line");

/// Every caller's window in one run, found by the allocation hook from the task running now.
typedef struct session_bench_windows session_bench_windows;

/// Marks the caller as inside a call to the store: from here to `close` its allocations count.
/// A plain store, no lock and no allocation; the fences keep the compiler from moving or
/// dropping it (it may assume `malloc` reads no memory of ours).
static inline void session_bench_window_open(session_bench_window *window) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&window->open, 1, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/// Marks the caller as back from the store.
static inline void session_bench_window_close(session_bench_window *window) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&window->open, 0, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/// Windows for `callers` callers, all closed and empty; `NULL` if memory ran out.
session_bench_windows *session_bench_windows_make(size_t callers);

/// Gives back windows whose callers have all finished, for a later run to reuse. Windows a
/// caller may still be inside (a store that never returned) are never given back.
void session_bench_windows_release(session_bench_windows *windows);

/// Caller `index`'s window, tied to the task calling this: called from the caller's own task,
/// before its first call. `NULL` outside a task or for an index out of range.
session_bench_window *session_bench_windows_register(session_bench_windows *windows, size_t index);

/// Makes these the windows the hook counts into, and installs the runtime's enqueue hooks;
/// 0, or -1 if other windows are counting now or someone else's enqueue hooks are installed.
int session_bench_windows_install(session_bench_windows *windows);

/// Stops counting into these windows.
void session_bench_windows_uninstall(session_bench_windows *windows);

/// The sum over every caller's window.
void session_bench_windows_totals(const session_bench_windows *windows, uint64_t *count, uint64_t *bytes);

/// Counts one allocation of `bytes` into the window of the caller the runtime is enqueueing
/// on this thread, or else of the task running on this thread, if it has one and it is open.
/// Allocates nothing and takes no lock: it runs inside `malloc`. The malloc interposer's
/// allocation hook.
void session_bench_count_allocation(size_t bytes);

/// jemalloc's allocation hooks (`experimental.hooks.install`; the layout of jemalloc 5.2 and
/// later's `hooks_t`): each allocation, and each `realloc` jemalloc does in place, counted
/// through ``session_bench_count_allocation`` with jemalloc's size-class bytes.
typedef struct session_bench_jemalloc_hooks {
    void *alloc_hook;
    void *dalloc_hook;
    void *expand_hook;
    void *extra;
} session_bench_jemalloc_hooks;

/// The hooks to hand to jemalloc, built once.
session_bench_jemalloc_hooks *session_bench_jemalloc_counting_hooks(void);

#endif
