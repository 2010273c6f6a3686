#include "CSampleClock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int session_bench_clock_mode = SESSION_BENCH_CLOCK_MONOTONIC;
const char *session_bench_clock_reason = "not an x86 CPU";

/// Whether the `flags` line of /proc/cpuinfo lists `flag` as a whole word.
static int has_flag(const char *flags, const char *flag) {
    size_t length = strlen(flag);
    for (const char *at = strstr(flags, flag); at; at = strstr(at + 1, flag)) {
        int starts = at == flags || at[-1] == ' ' || at[-1] == '\t' || at[-1] == ':';
        int ends = at[length] == ' ' || at[length] == '\n' || at[length] == '\0';
        if (starts && ends) return 1;
    }
    return 0;
}

/// Picks the clock before anything can read it: the time-stamp counter only when it ticks
/// at one rate on every core and in every power state (constant_tsc and nonstop_tsc), which
/// is what lets one calibration hold for the whole run; CLOCK_MONOTONIC otherwise.
__attribute__((constructor)) static void session_bench_choose_clock(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (getenv("SESSION_BENCH_CLOCK") && strcmp(getenv("SESSION_BENCH_CLOCK"), "monotonic") == 0) {
        session_bench_clock_reason = "SESSION_BENCH_CLOCK=monotonic";
        return;
    }
    FILE *file = fopen("/proc/cpuinfo", "r");
    if (!file) {
        session_bench_clock_reason = "/proc/cpuinfo unreadable, so the time-stamp counter's invariance is unknown";
        return;
    }
    char *line = NULL;
    size_t capacity = 0;
    int found = 0, constant = 0, nonstop = 0, rdtscp = 0;
    while (getline(&line, &capacity, file) > 0) {
        if (strncmp(line, "flags", 5) != 0) continue;
        found = 1;
        constant = has_flag(line, "constant_tsc");
        nonstop = has_flag(line, "nonstop_tsc");
        rdtscp = has_flag(line, "rdtscp");
        break;
    }
    free(line);
    fclose(file);
    if (!found) {
        session_bench_clock_reason = "/proc/cpuinfo lists no CPU flags, so the time-stamp counter's invariance is unknown";
    } else if (!constant) {
        session_bench_clock_reason = "CPU flags lack constant_tsc: the time-stamp counter's rate may change";
    } else if (!nonstop) {
        session_bench_clock_reason = "CPU flags lack nonstop_tsc: the time-stamp counter may stop in idle states";
    } else if (rdtscp) {
        session_bench_clock_mode = SESSION_BENCH_CLOCK_RDTSCP;
        session_bench_clock_reason = "invariant time-stamp counter (constant_tsc, nonstop_tsc)";
    } else {
        session_bench_clock_mode = SESSION_BENCH_CLOCK_LFENCE_RDTSC;
        session_bench_clock_reason = "invariant time-stamp counter (constant_tsc, nonstop_tsc); no rdtscp";
    }
#endif
}
