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

/// How long thread `tid` of process `pid` (0: this process) has run on a CPU, and how long it
/// has waited runnable for one, in nanoseconds (/proc/PID/task/TID/schedstat; a wait is counted
/// once the thread gets the CPU), whether it is runnable now (1 or 0), and whether it is in an
/// uninterruptible wait now, as for disk I/O (1 or 0). Returns 0, or -1 when the thread has ended
/// or the kernel keeps no such count.
int session_bench_thread_times(int pid, int tid, unsigned long long *ran, unsigned long long *waited, int *runnable,
                               int *disk);

/// The same, summed over the live threads of process `pid` (`runnable`, `disk`: how many are).
/// Returns 0, or -1.
int session_bench_process_times(int pid, unsigned long long *ran, unsigned long long *waited, int *runnable,
                                int *disk);

/// The kernel ids of the live threads of process `pid` (0: this process), written to `ids` (at
/// most `capacity` of them). Returns how many, or -1 when the kernel cannot say.
int session_bench_thread_ids(int pid, int *ids, int capacity);

/// CPUs the kernel can name in one affinity mask.
int session_bench_cpu_limit(void);

#endif
