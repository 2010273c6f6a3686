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
public struct AllocationCounter: @unchecked Sendable {
    // SAFETY: `mibs` is written once in `init` and only read afterwards.
    public struct Snapshot: Sendable, Hashable {
        public let count: UInt64
        public let bytes: UInt64
    }

    private typealias Mallctl = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
    ) -> Int32
    private typealias NameToMIB = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int>?) -> Int32
    private typealias ByMIB = @convention(c) (
        UnsafePointer<Int>?, Int, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
    ) -> Int32

    private let mallctl: Mallctl
    private let byMIB: ByMIB
    /// Every statistic a snapshot reads, resolved once to jemalloc's numeric form so that
    /// taking a snapshot allocates nothing (names built per read would count themselves).
    private let epochMIB: UnsafeMutablePointer<Int>
    private let epochMIBLength: Int
    /// Each counter's MIB, `mibLength` entries apiece, back to back, with its size class.
    private let mibs: UnsafeMutablePointer<Int>
    private let mibLength: Int
    private let sizes: [UInt64]

    /// Why counting is not possible here, and how to make it possible; `nil` when it is.
    public static let unavailableReason: String? = {
        guard let counter = AllocationCounter() else {
            return "jemalloc is not loaded: install it (apt-get install libjemalloc2) and run through the "
                + "session-bench command line, or start with LD_PRELOAD=libjemalloc.so.2 MALLOC_CONF=tcache:false"
        }
        if !counter.servesMalloc {
            return "jemalloc is loaded but does not serve this process's malloc (a sanitizer or another "
                + "allocator intercepts it), so its counts would read zero"
        }
        if !threadCacheDisabled {
            return "jemalloc's thread cache is on, so its counts lag: set MALLOC_CONF=tcache:false"
        }
        return nil
    }()

    /// Whether jemalloc really serves `malloc` here: one allocation must move its count.
    /// Not optimized, so the probe's malloc/free pair cannot be removed as dead code.
    @_optimize(none)
    var servesMalloc: Bool {
        let before = snapshot()
        guard let block = malloc(48) else { return false }
        let after = snapshot()
        free(block)
        return after.count > before.count
    }

    /// Whether jemalloc's thread cache is off (counts exact).
    static var threadCacheDisabled: Bool {
        guard let counter = AllocationCounter() else { return false }
        var enabled = true
        var size = MemoryLayout<Bool>.size
        return counter.mallctl("opt.tcache", &enabled, &size, nil, 0) == 0 && !enabled
    }

    /// A counter, or `nil` when jemalloc is not the process's allocator.
    public init?() {
        let process = UnsafeMutableRawPointer(bitPattern: 0)
        guard let symbol = dlsym(process, "mallctl"), let nameToMIB = dlsym(process, "mallctlnametomib"),
            let byMIB = dlsym(process, "mallctlbymib")
        else { return nil }
        let mallctl = unsafeBitCast(symbol, to: Mallctl.self)
        let resolve = unsafeBitCast(nameToMIB, to: NameToMIB.self)
        func read<T: FixedWidthInteger>(_ name: String, as: T.Type) -> T? {
            var value: T = 0
            var size = MemoryLayout<T>.size
            return mallctl(name, &value, &size, nil, 0) == 0 ? value : nil
        }
        func mib(_ name: String) -> [Int]? {
            var mib = [Int](repeating: 0, count: 8)
            var length = mib.count
            guard resolve(name, &mib, &length) == 0 else { return nil }
            return Array(mib.prefix(length))
        }
        guard let nbins = read("arenas.nbins", as: UInt32.self), let nlextents = read("arenas.nlextents", as: UInt32.self),
            let epochMIB = mib("epoch")
        else { return nil }
        let all = "stats.arenas.4096"  // MALLCTL_ARENAS_ALL
        var counters: [(mib: [Int], size: UInt64)] = []
        for index in 0..<nbins {
            guard let counter = mib("\(all).bins.\(index).nrequests"), let size = read("arenas.bin.\(index).size", as: Int.self)
            else { return nil }
            counters.append((counter, UInt64(size)))
        }
        for index in 0..<nlextents {
            guard let counter = mib("\(all).lextents.\(index).nrequests"),
                let size = read("arenas.lextent.\(index).size", as: Int.self)
            else { return nil }
            counters.append((counter, UInt64(size)))
        }
        self.mallctl = mallctl
        self.byMIB = unsafeBitCast(byMIB, to: ByMIB.self)
        self.epochMIB = .allocate(capacity: epochMIB.count)
        self.epochMIB.initialize(from: epochMIB, count: epochMIB.count)
        epochMIBLength = epochMIB.count
        // Every counter name has the same depth (stats.arenas.<i>.bins.<j>.nrequests).
        mibLength = counters.map(\.mib.count).max() ?? 0
        mibs = .allocate(capacity: max(1, counters.count * mibLength))
        for (index, counter) in counters.enumerated() {
            for (offset, part) in counter.mib.enumerated() { mibs[index * mibLength + offset] = part }
        }
        sizes = counters.map(\.size)
    }

    /// Bytes allocated and not yet freed, now (jemalloc's `stats.allocated`).
    public func liveBytes() -> UInt64 {
        var epoch: UInt64 = 1
        _ = byMIB(epochMIB, epochMIBLength, nil, nil, &epoch, MemoryLayout<UInt64>.size)
        var value = 0
        var size = MemoryLayout<Int>.size
        return mallctl("stats.allocated", &value, &size, nil, 0) == 0 ? UInt64(value) : 0
    }

    /// Totals since the process started. Allocates nothing.
    public func snapshot() -> Snapshot {
        // Writing "epoch" makes jemalloc refresh the statistics it reports.
        var epoch: UInt64 = 1
        _ = byMIB(epochMIB, epochMIBLength, nil, nil, &epoch, MemoryLayout<UInt64>.size)
        var count: UInt64 = 0
        var bytes: UInt64 = 0
        var requests: UInt64 = 0
        var size = MemoryLayout<UInt64>.size
        for index in sizes.indices {
            size = MemoryLayout<UInt64>.size
            guard byMIB(mibs + index * mibLength, mibLength, &requests, &size, nil, 0) == 0 else { continue }
            count += requests
            bytes += requests * sizes[index]
        }
        return Snapshot(count: count, bytes: bytes)
    }
}
