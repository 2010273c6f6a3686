#include "CReaderSlot.h"

static __thread void *reader_slot;

void *session_bench_reader_slot(void) { return reader_slot; }
void session_bench_set_reader_slot(void *slot) { reader_slot = slot; }
