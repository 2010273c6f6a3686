import CAllocationWindows

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// jemalloc's own statistics, read through `mallctl`: the `jemalloc` allocation counter.
///
/// jemalloc is found at run time (`dlsym`), so the tool builds without it; the command line
/// preloads it into a measuring process under `--allocator jemalloc`. Counts are read from the
/// arena statistics summed over all arenas: allocation requests (`small.nrequests` +
/// `large.nrequests`) and bytes (requests per size class × the class's size, so bytes are
/// what jemalloc handed out, rounded up to its size classes, not what the caller asked for).
///
/// Limits, stated plainly: arena statistics see a thread-cached allocation only when the
/// thread cache flushes, so exact counts need `MALLOC_CONF=tcache:false`, which the command
/// line sets for this counter. Without the thread cache every allocation takes an arena lock,
/// so stores that allocate on a path run that path slower than in production; the
/// `interposer` counter has no such cost.
///
/// A caller's allocations (``CallerAllocations``) come from jemalloc's allocation hooks
/// instead, which see each allocation on the thread that makes it, while the task that made
/// it is still running there. jemalloc's per-thread counters (`thread.allocated` and
/// `thread.deallocated`, and their `…p` pointers) are exact and cheap, but they count bytes,
/// not allocations, and they belong to a thread, where a call that suspends may resume on
/// another: they cannot give allocations per call. The hooks are experimental in jemalloc
/// (5.2 and later; Debian 12 ships 5.3.0), so the counter is offered only where they install.
package struct JemallocStatistics: @unchecked Sendable {
    // SAFETY: every stored property is written once in `init` and only read afterwards.
    private typealias Mallctl =
        @convention(c) (
            UnsafePointer<CChar>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?, Int
        ) -> Int32
    private typealias NameToMIB =
        @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int>?) -> Int32
    private typealias ByMIB =
        @convention(c) (
            UnsafePointer<Int>?, Int, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int>?, UnsafeMutableRawPointer?,
            Int
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

    /// Whether jemalloc's thread cache is off (arena counts exact).
    package var threadCacheDisabled: Bool {
        var enabled = true
        var size = MemoryLayout<Bool>.size
        return mallctl("opt.tcache", &enabled, &size, nil, 0) == 0 && !enabled
    }

    /// Bytes this thread has allocated through jemalloc (`thread.allocated`): moves with every
    /// allocation, thread cache or not, so it tells whether jemalloc serves `malloc` here.
    package func threadAllocatedBytes() -> UInt64? {
        var value: UInt64 = 0
        var size = MemoryLayout<UInt64>.size
        return mallctl("thread.allocated", &value, &size, nil, 0) == 0 ? value : nil
    }

    /// Installs jemalloc's allocation hooks (`experimental.hooks.install`, jemalloc 5.2 and
    /// later) that count callers' allocations; the handle that removes them, or `nil` where
    /// this jemalloc has none. While they are installed every allocation takes jemalloc's slow
    /// path, so that the hooks see it.
    package func installCountingHooks() -> UInt? {
        var handle: UnsafeMutableRawPointer?
        var size = MemoryLayout<UnsafeMutableRawPointer?>.size
        let hooks = session_bench_jemalloc_counting_hooks()
        let status = mallctl(
            "experimental.hooks.install", &handle, &size, hooks, MemoryLayout<session_bench_jemalloc_hooks>.size)
        guard status == 0, let handle else { return nil }
        return UInt(bitPattern: handle)
    }

    /// Removes the hooks ``installCountingHooks()`` installed.
    package func removeHooks(_ handle: UInt) {
        var pointer = UnsafeMutableRawPointer(bitPattern: handle)
        _ = mallctl("experimental.hooks.remove", nil, nil, &pointer, MemoryLayout<UnsafeMutableRawPointer?>.size)
    }

    /// Whether jemalloc is loaded in this process at all.
    package static var isLoaded: Bool { dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallctl") != nil }

    /// The statistics, or `nil` when jemalloc is not loaded in this process.
    package init?() {
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
        guard let nbins = read("arenas.nbins", as: UInt32.self),
            let nlextents = read("arenas.nlextents", as: UInt32.self),
            let epochMIB = mib("epoch")
        else { return nil }
        let all = "stats.arenas.4096"  // MALLCTL_ARENAS_ALL
        var counters: [(mib: [Int], size: UInt64)] = []
        for index in 0..<nbins {
            guard let counter = mib("\(all).bins.\(index).nrequests"),
                let size = read("arenas.bin.\(index).size", as: Int.self)
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
    package func liveBytes() -> UInt64 {
        var epoch: UInt64 = 1
        _ = byMIB(epochMIB, epochMIBLength, nil, nil, &epoch, MemoryLayout<UInt64>.size)
        var value = 0
        var size = MemoryLayout<Int>.size
        return mallctl("stats.allocated", &value, &size, nil, 0) == 0 ? UInt64(value) : 0
    }

    /// Totals since the process started. Allocates nothing.
    package func snapshot() -> AllocationCounter.Snapshot {
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
        return AllocationCounter.Snapshot(count: count, bytes: bytes)
    }
}
