#ifndef SESSION_BENCH_C_READER_SLOT_H
#define SESSION_BENCH_C_READER_SLOT_H

/// The calling thread's reader slot for the lock-free read store: one pointer in
/// thread-local storage. Initial-exec, so that reading it is a single thread-pointer-relative
/// load rather than a call to __tls_get_addr (the default for position-independent code).
extern __thread void *session_bench_reader_slot_pointer __attribute__((tls_model("initial-exec")));

static inline void *session_bench_reader_slot(void) { return session_bench_reader_slot_pointer; }
static inline void session_bench_set_reader_slot(void *slot) { session_bench_reader_slot_pointer = slot; }

#endif
