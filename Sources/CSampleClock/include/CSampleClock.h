#ifndef SESSION_BENCH_C_SAMPLE_CLOCK_H
#define SESSION_BENCH_C_SAMPLE_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/// A raw tick count for timing samples: the CPU's time-stamp counter where there is one
/// (a few nanoseconds to read), else CLOCK_MONOTONIC in nanoseconds.
static inline uint64_t session_bench_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec spec;
    clock_gettime(CLOCK_MONOTONIC, &spec);
    return (uint64_t)spec.tv_sec * 1000000000u + (uint64_t)spec.tv_nsec;
#endif
}

/// 1 when ticks are time-stamp-counter cycles (to be calibrated), 0 when they are nanoseconds.
static inline int session_bench_ticks_are_cycles(void) {
#if defined(__x86_64__) || defined(__i386__)
    return 1;
#else
    return 0;
#endif
}

#endif
