#define _GNU_SOURCE
#include "CPlacement.h"
#include <errno.h>
#include <sched.h>
#include <dirent.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int session_bench_cpu_limit(void) { return CPU_SETSIZE; }

int session_bench_allowed_cpus(int *cpus, int capacity) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < capacity; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    return count;
}

int session_bench_pin_cpus(const int *cpus, int count) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < count; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) {
            errno = EINVAL;
            return -1;
        }
        CPU_SET(cpus[i], &set);
    }
    // sched_setaffinity(0, ...) moves only the calling thread: every thread of the process
    // is moved, so threads the runtime already started run on the given CPUs too.
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) return sched_setaffinity(0, sizeof set, &set);
    int status = 0;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        pid_t tid = (pid_t)atoi(entry->d_name);
        if (sched_setaffinity(tid, sizeof set, &set) != 0 && errno != ESRCH) status = -1;
    }
    closedir(tasks);
    return status;
}

int session_bench_lower_thread_priority(void) {
    // On Linux a nice value belongs to a thread: this one alone is lowered.
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}
