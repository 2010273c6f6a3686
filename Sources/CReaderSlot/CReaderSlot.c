#include "CReaderSlot.h"

__thread void *session_bench_reader_slot_pointer __attribute__((tls_model("initial-exec")));
