import Foundation

/// CPU time and peak resident memory of this process, from `clock_gettime` and `getrusage`.
public enum ResourceUsage {
    /// User plus system CPU time consumed by the process so far, in seconds.
    public static var cpuSeconds: Double {
        var spec = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// The process's peak resident set so far, in bytes.
    public static var peakResidentBytes: UInt64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        #if os(Linux)
            return UInt64(usage.ru_maxrss) * 1024  // kilobytes on Linux
        #else
            return UInt64(usage.ru_maxrss)
        #endif
    }
}
