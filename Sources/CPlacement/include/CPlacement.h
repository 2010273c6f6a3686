#ifndef SESSION_BENCH_C_PLACEMENT_H
#define SESSION_BENCH_C_PLACEMENT_H

/// The CPUs this process may run on, written to `cpus` in ascending order (at most
/// `capacity` of them). Returns how many, or -1 with errno set.
int session_bench_allowed_cpus(int *cpus, int capacity);

/// Restricts this process (every thread, and the children it starts afterwards) to the
/// given CPUs. Returns 0, or -1 with errno set (EINVAL: none of them can be used).
int session_bench_pin_cpus(const int *cpus, int count);

/// Gives the calling thread the lowest scheduling priority (nice 19), so that a crowd of
/// busy threads yields to every other thread of the machine. Returns 0, or -1 with errno set.
int session_bench_lower_thread_priority(void);

/// CPUs the kernel can name in one affinity mask.
int session_bench_cpu_limit(void);

#endif
