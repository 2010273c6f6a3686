import Foundation

/// CPU time and resident memory of this process, from `clock_gettime`, `getrusage` and
/// `/proc/self/statm`.
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

    /// The process's resident set now, in bytes, where the system says (Linux).
    public static var currentResidentBytes: UInt64? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count >= 2, let pages = UInt64(fields[1]) else { return nil }
        return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
    }
}
