#ifndef CDISPATCHHOOK_H
#define CDISPATCHHOOK_H

#include <stdint.h>

/// A block as Dispatch takes it (a pointer to the block: this target is compiled without blocks;
/// Swift sees it as `@convention(block) () -> Void` once cast).
typedef void *sb_dispatch_block_t;

/// What the hook is asked to take: a block for `queue`, to run after `when` (a `dispatch_time_t`;
/// 0 for at once), for `group` (or NULL).
typedef enum {
    sb_dispatch_async = 1,
    sb_dispatch_after = 2,
    sb_dispatch_sync = 3,
    sb_dispatch_barrier_async = 4,
    sb_dispatch_barrier_sync = 5,
    sb_dispatch_group_async = 6,
    sb_dispatch_group_notify = 7,
} sb_dispatch_kind;

/// Set by the exploring process: called for each block handed to Dispatch through its block entry
/// points; returns 1 when it took the block, 0 to let Dispatch have it. NULL (the default, and in
/// every other process): Dispatch has them all.
extern int (*_Nullable sb_dispatch_hook)(
    sb_dispatch_kind kind, void *_Nonnull queue, uint64_t when, void *_Nullable group, sb_dispatch_block_t _Nonnull block);

/// Sets ``sb_dispatch_hook`` (once, before the calls it is to catch).
void sb_dispatch_set_hook(int (*_Nullable hook)(
    sb_dispatch_kind, void *_Nonnull, uint64_t, void *_Nullable, sb_dispatch_block_t _Nonnull));

/// A wait that blocks the calling thread until another signals it.
typedef enum {
    sb_dispatch_wait_semaphore = 1,
    sb_dispatch_wait_group = 2,
} sb_dispatch_wait_kind;

/// Where a wait stands when the hook hears of it.
typedef enum {
    /// It would block (it is not signalled yet): the hook answers 1 when this is the thread that
    /// runs every job, 0 to let it block as Dispatch would.
    sb_dispatch_wait_would_block = 0,
    /// On that thread, something the scheduler does not run signalled it within a second.
    sb_dispatch_wait_ended_elsewhere = 1,
    /// On that thread, nothing did: a timed wait returns timed out; one with no timeout is the
    /// hook's to report (it does not return).
    sb_dispatch_wait_never_ends = 2,
} sb_dispatch_wait_phase;

/// Set by the exploring process: called for a `dispatch_semaphore_wait` or `dispatch_group_wait`
/// that would block, `forever` when it has no timeout (see ``sb_dispatch_wait_phase``).
extern int (*_Nullable sb_dispatch_wait_hook)(sb_dispatch_wait_kind kind, sb_dispatch_wait_phase phase, int forever);

/// Sets ``sb_dispatch_wait_hook``.
void sb_dispatch_set_wait_hook(int (*_Nullable hook)(sb_dispatch_wait_kind, sb_dispatch_wait_phase, int));

/// Dispatch's own entry points, past the hook: for the hook to run a block it took on its queue.
void sb_dispatch_real_sync(void *_Nonnull queue, sb_dispatch_block_t _Nonnull block);
void sb_dispatch_real_barrier_sync(void *_Nonnull queue, sb_dispatch_block_t _Nonnull block);

/// Whether `queue` is the main queue, or one of the global concurrent queues.
int sb_dispatch_is_main(void *_Nonnull queue);
int sb_dispatch_is_global(void *_Nonnull queue);

/// `dispatch_time(DISPATCH_TIME_NOW, 0)`: what a `when` is measured against.
uint64_t sb_dispatch_now(void);

/// Whether `group` has no block outstanding (a wait that does not block); and Dispatch's own
/// enter and leave, for the blocks the hook runs for a group.
int sb_dispatch_group_is_empty(void *_Nonnull group);
void sb_dispatch_group_enter(void *_Nonnull group);
void sb_dispatch_group_leave(void *_Nonnull group);

/// Dispatch's reference counting, for the queues and groups of the blocks the hook holds (as
/// Dispatch itself keeps them alive while a block is pending).
void sb_dispatch_retain(void *_Nonnull object);
void sb_dispatch_release(void *_Nonnull object);

#endif
