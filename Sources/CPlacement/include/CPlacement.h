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

/// The calling thread's kernel id (its name under /proc/self/task), or -1 where there is none.
int session_bench_thread_id(void);

/// What the kernel says of thread `tid` of this process: whether it is runnable (on a CPU or
/// waiting for one) and the CPU time it has used, in nanoseconds. Returns 0, or -1 when the
/// thread has ended or cannot be read (no /proc).
int session_bench_thread_activity(int tid, int *runnable, unsigned long long *cpu_nanoseconds);

/// CPUs the kernel can name in one affinity mask.
int session_bench_cpu_limit(void);

#endif
