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

/// Thread `tid`'s state letter (R running or runnable, D in uninterruptible wait — disk I/O —,
/// S asleep, …), or -1.
static int thread_state(int pid, int tid) {
    char path[96];
    char line[512];
    if (pid == 0) {
        snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    } else {
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
    }
    FILE *file = fopen(path, "r");
    if (file == NULL) return -1;
    size_t length = fread(line, 1, sizeof line - 1, file);
    fclose(file);
    line[length] = 0;
    // The command name, in parentheses, may hold spaces: the state follows its last ')'.
    char *end = strrchr(line, ')');
    if (end == NULL || end[1] != ' ') return -1;
    return end[2];
}

int session_bench_thread_times(int pid, int tid, unsigned long long *ran, unsigned long long *waited, int *runnable,
                               int *disk) {
    char path[96];
    if (pid == 0) {
        snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
    } else {
        snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
    }
    FILE *file = fopen(path, "r");
    if (file == NULL) return -1;
    int read = fscanf(file, "%llu %llu", ran, waited);
    fclose(file);
    if (read != 2) return -1;
    int state = thread_state(pid, tid);
    *runnable = state == 'R';
    *disk = state == 'D';
    return 0;
}

int session_bench_process_times(int pid, unsigned long long *ran, unsigned long long *waited, int *runnable,
                                int *disk) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *tasks = opendir(path);
    if (tasks == NULL) return -1;
    *ran = 0;
    *waited = 0;
    *runnable = 0;
    *disk = 0;
    int threads = 0;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        unsigned long long r = 0, w = 0;
        int now = 0, io = 0;
        if (session_bench_thread_times(pid, atoi(entry->d_name), &r, &w, &now, &io) != 0) continue;
        *ran += r;
        *waited += w;
        *runnable += now;
        *disk += io;
        threads++;
    }
    closedir(tasks);
    return threads > 0 ? 0 : -1;
}

int session_bench_thread_ids(int pid, int *ids, int capacity) {
    char path[64];
    if (pid == 0) {
        snprintf(path, sizeof path, "/proc/self/task");
    } else {
        snprintf(path, sizeof path, "/proc/%d/task", pid);
    }
    DIR *tasks = opendir(path);
    if (tasks == NULL) return -1;
    int count = 0;
    struct dirent *entry;
    while (count < capacity && (entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        ids[count++] = atoi(entry->d_name);
    }
    closedir(tasks);
    return count;
}
