#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts heap allocations through jemalloc's own statistics (`mallctl`).
///
/// jemalloc is found at run time (`dlsym`), so the tool builds without it; the command line
/// starts its measuring processes with `LD_PRELOAD` set to jemalloc when it is installed.
/// Counts are read from the arena statistics summed over all arenas: allocation requests
/// (`small.nrequests` + `large.nrequests`) and bytes (requests per size class × the class's
/// size, so bytes are what jemalloc handed out, rounded up to its size classes).
///
/// Limits, stated plainly: arena statistics see a thread-cached allocation only when the
/// thread cache flushes, so exact counts need `MALLOC_CONF=tcache:false`, which the command
/// line sets for its measuring processes. Without the thread cache every allocation takes an
/// arena lock, so stores that allocate on a path run that path slower than in production;
/// stores whose path does not allocate are unaffected. Counts are process-wide: the harness
/// keeps its own measured loops allocation-free, so what remains is the store's.
public struct AllocationCounter: Sendable {
    public struct Snapshot: Sendable, Hashable {
        public let count: UInt64
        public let bytes: UInt64
    }

    private typealias Mallctl = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
    ) -> Int32

    private let mallctl: Mallctl
    private let binSizes: [UInt64]
    private let largeSizes: [UInt64]

    /// Why counting is not possible here, and how to make it possible; `nil` when it is.
    public static let unavailableReason: String? = {
        if AllocationCounter() == nil {
            return "jemalloc is not loaded: install it (apt-get install libjemalloc2) and run through the "
                + "session-bench command line, or start with LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=tcache:false"
        }
        if !threadCacheDisabled {
            return "jemalloc's thread cache is on, so its counts lag: set MALLOC_CONF=tcache:false"
        }
        return nil
    }()

    /// Whether jemalloc's thread cache is off (counts exact).
    static var threadCacheDisabled: Bool {
        guard let counter = AllocationCounter() else { return false }
        var enabled = true
        var size = MemoryLayout<Bool>.size
        return counter.mallctl("opt.tcache", &enabled, &size, nil, 0) == 0 && !enabled
    }

    /// A counter, or `nil` when jemalloc is not the process's allocator.
    public init?() {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallctl") else { return nil }
        let mallctl = unsafeBitCast(symbol, to: Mallctl.self)
        func read<T: FixedWidthInteger>(_ name: String, as: T.Type) -> T? {
            var value: T = 0
            var size = MemoryLayout<T>.size
            return mallctl(name, &value, &size, nil, 0) == 0 ? value : nil
        }
        guard let nbins = read("arenas.nbins", as: UInt32.self), let nlextents = read("arenas.nlextents", as: UInt32.self)
        else { return nil }
        self.mallctl = mallctl
        binSizes = (0..<nbins).map { UInt64(read("arenas.bin.\($0).size", as: Int.self) ?? 0) }
        largeSizes = (0..<nlextents).map { UInt64(read("arenas.lextent.\($0).size", as: Int.self) ?? 0) }
    }

    /// Totals since the process started.
    public func snapshot() -> Snapshot {
        // Writing "epoch" makes jemalloc refresh the statistics it reports.
        var epoch: UInt64 = 1
        _ = mallctl("epoch", nil, nil, &epoch, MemoryLayout<UInt64>.size)
        let all = "stats.arenas.4096"  // MALLCTL_ARENAS_ALL
        var count: UInt64 = 0
        var bytes: UInt64 = 0
        for (index, size) in binSizes.enumerated() {
            let requests = read("\(all).bins.\(index).nrequests")
            count += requests
            bytes += requests * size
        }
        for (index, size) in largeSizes.enumerated() {
            let requests = read("\(all).lextents.\(index).nrequests")
            count += requests
            bytes += requests * size
        }
        return Snapshot(count: count, bytes: bytes)
    }

    private func read(_ name: String) -> UInt64 {
        var value: UInt64 = 0
        var size = MemoryLayout<UInt64>.size
        return mallctl(name, &value, &size, nil, 0) == 0 ? value : 0
    }
}
