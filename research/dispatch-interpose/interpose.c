// Probe: does a definition of libdispatch's block entry points in the executable catch the calls
// Swift's Dispatch overlay (libswiftDispatch.so) makes, so an exploring process can hold each
// block as a job of its own scheduler? Built by ./run.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

typedef void *queue_t;
typedef void *group_t;
typedef void (^block_t)(void);

// Set by the Swift side: 0 = pass through; else called with (kind, queue, when, block), the block
// copied by the hook (Block_copy is the hook's business). Kinds: 1 async, 2 after, 3 sync,
// 4 barrier async, 5 barrier sync, 6 group async, 7 group notify.
void (*sb_dispatch_hook)(int kind, queue_t queue, uint64_t when, block_t block) = 0;

#define REAL(name, type) ((type)dlsym(RTLD_NEXT, #name))

void dispatch_async(queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(1, queue, 0, block); return; }
    REAL(dispatch_async, void (*)(queue_t, block_t))(queue, block);
}

void dispatch_after(uint64_t when, queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(2, queue, when, block); return; }
    REAL(dispatch_after, void (*)(uint64_t, queue_t, block_t))(when, queue, block);
}

void dispatch_sync(queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(3, queue, 0, block); return; }
    REAL(dispatch_sync, void (*)(queue_t, block_t))(queue, block);
}

void dispatch_barrier_async(queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(4, queue, 0, block); return; }
    REAL(dispatch_barrier_async, void (*)(queue_t, block_t))(queue, block);
}

void dispatch_barrier_sync(queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(5, queue, 0, block); return; }
    REAL(dispatch_barrier_sync, void (*)(queue_t, block_t))(queue, block);
}

void dispatch_group_async(group_t group, queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(6, queue, (uint64_t)(uintptr_t)group, block); return; }
    REAL(dispatch_group_async, void (*)(group_t, queue_t, block_t))(group, queue, block);
}

void dispatch_group_notify(group_t group, queue_t queue, block_t block) {
    if (sb_dispatch_hook) { sb_dispatch_hook(7, queue, (uint64_t)(uintptr_t)group, block); return; }
    REAL(dispatch_group_notify, void (*)(group_t, queue_t, block_t))(group, queue, block);
}
