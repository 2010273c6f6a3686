#ifndef SESSION_BENCH_C_READER_SLOT_H
#define SESSION_BENCH_C_READER_SLOT_H

/// The calling thread's reader slot for the lock-free read store: one pointer in
/// thread-local storage, read with a single thread-pointer-relative load.
void *session_bench_reader_slot(void);
void session_bench_set_reader_slot(void *slot);

#endif
