#define _GNU_SOURCE
#include "CPlacement.h"
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
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

int session_bench_thread_id(void) { return (int)syscall(SYS_gettid); }

int session_bench_thread_activity(int tid, int *runnable, unsigned long long *cpu_nanoseconds) {
    char path[64];
    char line[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *file = fopen(path, "r");
    if (file == NULL) return -1;
    size_t length = fread(line, 1, sizeof line - 1, file);
    fclose(file);
    line[length] = 0;
    // The command name, in parentheses, may hold spaces: the fields follow its last ')'.
    char *end = strrchr(line, ')');
    if (end == NULL) return -1;
    char state = 0;
    unsigned long user = 0, system = 0;
    if (sscanf(end + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &state, &user, &system) != 3)
        return -1;
    *runnable = state == 'R';
    // schedstat counts in nanoseconds; stat in clock ticks (10 ms), where schedstat is missing.
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    file = fopen(path, "r");
    unsigned long long ran = 0;
    if (file != NULL && fscanf(file, "%llu", &ran) == 1) {
        *cpu_nanoseconds = ran;
    } else {
        long tick = sysconf(_SC_CLK_TCK);
        *cpu_nanoseconds = (unsigned long long)(user + system) * (1000000000ULL / (unsigned long long)(tick > 0 ? tick : 100));
    }
    if (file != NULL) fclose(file);
    return 0;
}
