#include <stdint.h>
typedef void (^sb_block_t)(void);
extern void (*sb_dispatch_hook)(int kind, void *queue, uint64_t when, sb_block_t block);
