#ifndef SESSION_BENCH_C_SAMPLE_CLOCK_H
#define SESSION_BENCH_C_SAMPLE_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/// Which clock `session_bench_ticks` reads, chosen once when the process starts (see
/// CSampleClock.c): the CPU's time-stamp counter only where the CPU says it is invariant.
enum {
    /// CLOCK_MONOTONIC, in nanoseconds.
    SESSION_BENCH_CLOCK_MONOTONIC = 0,
    /// `rdtscp; lfence`: waits for every earlier instruction, and holds back every later one.
    SESSION_BENCH_CLOCK_RDTSCP = 1,
    /// `lfence; rdtsc; lfence`, for CPUs without rdtscp.
    SESSION_BENCH_CLOCK_LFENCE_RDTSC = 2,
};

extern int session_bench_clock_mode;
/// Why the clock is what it is, for reports: e.g. "CPU flags lack nonstop_tsc".
extern const char *session_bench_clock_reason;

/// The chosen clock (one of the values above) and why, for Swift (which may not read a
/// mutable C global): both are set once, before `main`.
static inline int session_bench_clock_kind(void) { return session_bench_clock_mode; }
static inline const char *session_bench_clock_why(void) { return session_bench_clock_reason; }

static inline uint64_t session_bench_monotonic_ns(void) {
    struct timespec spec;
    clock_gettime(CLOCK_MONOTONIC, &spec);
    return (uint64_t)spec.tv_sec * 1000000000u + (uint64_t)spec.tv_nsec;
}

/// A raw tick count for timing samples, serialized so that the instructions being timed
/// cannot drift across the read.
static inline uint64_t session_bench_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (session_bench_clock_mode == SESSION_BENCH_CLOCK_RDTSCP) {
        unsigned int aux;
        uint64_t ticks = __rdtscp(&aux);
        _mm_lfence();
        return ticks;
    }
    if (session_bench_clock_mode == SESSION_BENCH_CLOCK_LFENCE_RDTSC) {
        _mm_lfence();
        uint64_t ticks = __rdtsc();
        _mm_lfence();
        return ticks;
    }
#endif
    return session_bench_monotonic_ns();
}

/// 1 when ticks are time-stamp-counter cycles (to be calibrated), 0 when they are nanoseconds.
static inline int session_bench_ticks_are_cycles(void) {
    return session_bench_clock_mode != SESSION_BENCH_CLOCK_MONOTONIC;
}

#endif
