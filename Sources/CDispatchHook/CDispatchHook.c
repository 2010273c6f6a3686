// Dispatch's block entry points, defined in the executable: Swift's Dispatch overlay
// (libswiftDispatch.so) calls them through its PLT, so the linker exports these definitions and
// the overlay's calls land here first (research/dispatch-interpose). Each asks the hook, set only
// in an exploring process, and otherwise passes the call on to libdispatch unchanged.
#define _GNU_SOURCE
#include "CDispatchHook.h"

// Under ThreadSanitizer the sanitizer's runtime, linked into the executable, defines these entry
// points itself to see the order Dispatch makes; a definition here would replace its own, and it
// would report races a serial queue rules out. There Dispatch is left alone (and explore reports a
// store that hops through it as UNCONTROLLED, as before).
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SB_DISPATCH_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define SB_DISPATCH_SANITIZED 1
#endif

#if defined(__linux__) && !defined(SB_DISPATCH_SANITIZED)
#include <dlfcn.h>
#include <stddef.h>

// Dispatch's types as this file needs them: every object is a pointer, every block too.
typedef void *dispatch_queue_t;
typedef void *dispatch_group_t;
typedef void *dispatch_block_t;
typedef uint64_t dispatch_time_t;
extern char _dispatch_main_q;  // what dispatch_get_main_queue() returns the address of
void *dispatch_get_global_queue(long identifier, unsigned long flags);
dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta);
void dispatch_group_enter(dispatch_group_t group);
void dispatch_group_leave(dispatch_group_t group);
void dispatch_retain(void *object);
void dispatch_release(void *object);

int (*sb_dispatch_hook)(sb_dispatch_kind, void *, uint64_t, void *, sb_dispatch_block_t) = NULL;
int (*sb_dispatch_wait_hook)(sb_dispatch_wait_kind, sb_dispatch_wait_phase, int) = NULL;

// libdispatch's definition of each, looked up once (a race stores the same value twice).
#define REAL(name, ...)                                     \
    static void (*real_##name)(__VA_ARGS__) = NULL;          \
    if (!real_##name) real_##name = (void (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);

void dispatch_async(dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_async, (void *)queue, 0, NULL, block)) return;
    REAL(dispatch_async, dispatch_queue_t, dispatch_block_t)
    real_dispatch_async(queue, block);
}

void dispatch_after(dispatch_time_t when, dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_after, (void *)queue, when, NULL, block)) return;
    REAL(dispatch_after, dispatch_time_t, dispatch_queue_t, dispatch_block_t)
    real_dispatch_after(when, queue, block);
}

void dispatch_barrier_async(dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_barrier_async, (void *)queue, 0, NULL, block)) return;
    REAL(dispatch_barrier_async, dispatch_queue_t, dispatch_block_t)
    real_dispatch_barrier_async(queue, block);
}

void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_group_async, (void *)queue, 0, (void *)group, block)) return;
    REAL(dispatch_group_async, dispatch_group_t, dispatch_queue_t, dispatch_block_t)
    real_dispatch_group_async(group, queue, block);
}

void dispatch_group_notify(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_group_notify, (void *)queue, 0, (void *)group, block)) return;
    REAL(dispatch_group_notify, dispatch_group_t, dispatch_queue_t, dispatch_block_t)
    real_dispatch_group_notify(group, queue, block);
}

// The waits: one that would block asks the hook first (DISPATCH_TIME_NOW is 0, FOREVER all ones).
// On the driving thread, a thread the scheduler does not run may still end it: the wait goes on
// for up to a second (or its own timeout, if sooner) before the hook hears it did not end.
#define SB_WAIT(name, kind, object, timeout)                                                        \
    REAL_LONG(name)                                                                                 \
    if (!sb_dispatch_wait_hook) return real_##name(object, timeout);                               \
    long ready = real_##name(object, 0);                                                            \
    if (ready == 0 || timeout == 0) return ready;                                                   \
    int forever = timeout == ~(dispatch_time_t)0;                                                   \
    if (!sb_dispatch_wait_hook(kind, sb_dispatch_wait_would_block, forever))                        \
        return real_##name(object, timeout);                                                        \
    dispatch_time_t second = dispatch_time(0, 1000000000);                                          \
    int sooner = !forever && !(timeout >> 63) && timeout < second;                                  \
    ready = real_##name(object, sooner ? timeout : second);                                         \
    sb_dispatch_wait_hook(kind, ready == 0 ? sb_dispatch_wait_ended_elsewhere : sb_dispatch_wait_never_ends, \
                          forever);                                                                 \
    return ready;

#define REAL_LONG(name)                                                  \
    static long (*real_##name)(void *, dispatch_time_t) = NULL;          \
    if (!real_##name) real_##name = (long (*)(void *, dispatch_time_t))dlsym(RTLD_NEXT, #name);

long dispatch_semaphore_wait(void *semaphore, dispatch_time_t timeout) {
    SB_WAIT(dispatch_semaphore_wait, sb_dispatch_wait_semaphore, semaphore, timeout)
}

long dispatch_group_wait(void *group, dispatch_time_t timeout) {
    SB_WAIT(dispatch_group_wait, sb_dispatch_wait_group, group, timeout)
}

void sb_dispatch_set_wait_hook(int (*hook)(sb_dispatch_wait_kind, sb_dispatch_wait_phase, int)) { sb_dispatch_wait_hook = hook; }

void sb_dispatch_real_sync(void *queue, sb_dispatch_block_t block) {
    REAL(dispatch_sync, dispatch_queue_t, dispatch_block_t)
    real_dispatch_sync((dispatch_queue_t)queue, block);
}

void sb_dispatch_real_barrier_sync(void *queue, sb_dispatch_block_t block) {
    REAL(dispatch_barrier_sync, dispatch_queue_t, dispatch_block_t)
    real_dispatch_barrier_sync((dispatch_queue_t)queue, block);
}

void dispatch_sync(dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_sync, (void *)queue, 0, NULL, block)) return;
    sb_dispatch_real_sync((void *)queue, block);
}

void dispatch_barrier_sync(dispatch_queue_t queue, dispatch_block_t block) {
    if (sb_dispatch_hook && sb_dispatch_hook(sb_dispatch_barrier_sync, (void *)queue, 0, NULL, block)) return;
    sb_dispatch_real_barrier_sync((void *)queue, block);
}

void sb_dispatch_set_hook(int (*hook)(sb_dispatch_kind, void *, uint64_t, void *, sb_dispatch_block_t)) {
    sb_dispatch_hook = hook;
}

int sb_dispatch_is_main(void *queue) { return queue == (void *)&_dispatch_main_q; }

int sb_dispatch_is_global(void *queue) {
    static const long classes[] = {0x21, 0x19, 0x15, 0x11, 0x09, 0x00};
    for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) {
        for (unsigned long flags = 0; flags <= 2; flags += 2) {
            if (queue == (void *)dispatch_get_global_queue(classes[i], flags)) return 1;
        }
    }
    return 0;
}

uint64_t sb_dispatch_now(void) { return dispatch_time(0, 0); }

int sb_dispatch_group_is_empty(void *group) {
    REAL_LONG(dispatch_group_wait)
    return real_dispatch_group_wait(group, 0) == 0;
}

void sb_dispatch_group_enter(void *group) { dispatch_group_enter((dispatch_group_t)group); }
void sb_dispatch_group_leave(void *group) { dispatch_group_leave((dispatch_group_t)group); }
void sb_dispatch_retain(void *object) { dispatch_retain(object); }
void sb_dispatch_release(void *object) { dispatch_release(object); }

#else
// Elsewhere, and under ThreadSanitizer, Dispatch is left alone: explore drives tasks only.
int (*sb_dispatch_hook)(sb_dispatch_kind, void *, uint64_t, void *, sb_dispatch_block_t) = 0;
int (*sb_dispatch_wait_hook)(sb_dispatch_wait_kind, sb_dispatch_wait_phase, int) = 0;
void sb_dispatch_set_wait_hook(int (*hook)(sb_dispatch_wait_kind, sb_dispatch_wait_phase, int)) {}
void sb_dispatch_real_sync(void *queue, sb_dispatch_block_t block) {}
void sb_dispatch_set_hook(int (*hook)(sb_dispatch_kind, void *, uint64_t, void *, sb_dispatch_block_t)) {}
void sb_dispatch_real_barrier_sync(void *queue, sb_dispatch_block_t block) {}
int sb_dispatch_is_main(void *queue) { return 0; }
int sb_dispatch_is_global(void *queue) { return 0; }
uint64_t sb_dispatch_now(void) { return 0; }
int sb_dispatch_group_is_empty(void *group) { return 1; }
void sb_dispatch_group_enter(void *group) {}
void sb_dispatch_group_leave(void *group) {}
void sb_dispatch_retain(void *object) {}
void sb_dispatch_release(void *object) {}
#endif
