import CAllocationWindows
import Foundation
import MallocInterposerSwift
import Synchronization

/// What counted a result's allocations. Counts from different counters are never compared.
public enum AllocationCounterKind: String, Sendable, Codable, CaseIterable {
    /// ordo-one/malloc-interposer, preloaded ahead of the allocator: every `malloc`, `calloc`,
    /// `realloc` and aligned allocation is counted on its way to whatever allocator is below it,
    /// and handed to its allocation hook, which counts a caller's (``CallerAllocations``).
    /// Bytes are the bytes *requested*. Needs no system package and costs the counted path
    /// a few thread-local additions.
    case interposer
    /// jemalloc's own: its allocation hooks for a caller's count (``CallerAllocations``), its
    /// arena statistics (`mallctl`, thread cache off so they are exact) for process totals.
    /// Bytes are jemalloc's *size-class* bytes (a 40-byte request counts 48). Needs
    /// `--allocator jemalloc`, and the thread cache off slows every allocating path.
    case jemalloc

    /// What a byte figure from this counter means, for notes and docs/allocations.md.
    public var bytesMeaning: String {
        switch self {
        case .interposer: "requested bytes"
        case .jemalloc: "jemalloc size-class bytes"
        }
    }
}

/// The allocator serving `malloc` in a measuring process.
public enum AllocatorKind: String, Sendable, Codable, CaseIterable {
    /// The C library's own malloc (glibc on Linux).
    case system
    /// jemalloc, preloaded (Debian's `libjemalloc2`), with its default settings unless the
    /// jemalloc counter turned its thread cache off.
    case jemalloc
}

/// Counts heap allocations in this process, with the counter this process was started for.
///
/// The command line starts each measuring process with the counter's environment set (see
/// ``counterVariable``); a process started any other way counts nothing unless it sets it.
/// Two kinds of count: a caller's (``CallerAllocations``: only what the caller's own task
/// allocated inside its calls to the store, so the harness's allocations are left out by
/// construction; the steady loops' allocations per call), and the process's totals
/// (``snapshot()``: everything, from every thread; the storms take out what their callers
/// cost by measuring it).
///
/// The interposer counts only inside windows opened with ``begin()`` and closed with
/// ``end()`` (or ``beginCallerCounting()`` and ``endCallerCounting()``), never all the time:
/// its per-thread counter block is freed when the thread exits but the thread's own pointer
/// to it is left behind, so a thread that frees memory in a later exit handler while counting
/// is on writes into freed memory (malloc-interposer 1.6.1). The
/// harness's windows are its measured phases, where no thread of its own exits; the
/// synchronous phase's threads come and go outside them. A process whose other threads come
/// and go at any time (a test runner running suites side by side) must not count at all:
/// with counting on there, the test process crashed in one run of two; with it off, never.
public struct AllocationCounter: Sendable {
    public struct Snapshot: Sendable, Hashable {
        public let count: UInt64
        public let bytes: UInt64
    }

    /// Whether this process can count, and if not, why not and how to make it possible.
    public enum Availability: Sendable {
        case counting(AllocationCounter)
        case unavailable(AllocationCounterKind, reason: String)

        public var counter: AllocationCounter? {
            if case .counting(let counter) = self { return counter }
            return nil
        }

        public var reason: String? {
            if case .unavailable(_, let reason) = self { return reason }
            return nil
        }
    }

    /// The environment variable that names a measuring process's counter: `interposer`
    /// (the default) or `jemalloc`.
    public static let counterVariable = "SESSION_BENCH_ALLOCATION_COUNTER"

    public let kind: AllocationCounterKind
    private let jemalloc: JemallocStatistics?

    /// This process's counter, decided once: the one ``counterVariable`` names. A process that
    /// names none does not count (a test process, a program running scenarios from code):
    /// counting is for processes that do nothing else.
    public static let current: Availability = {
        guard let requested = getenv(counterVariable).map({ String(cString: $0) }) else {
            return .unavailable(
                .interposer,
                reason: "this process is not a measuring process: the command line counts in the processes it starts "
                    + "(set \(counterVariable)=interposer to count in this one)")
        }
        switch AllocationCounterKind(rawValue: requested) {
        case .interposer: return interposer()
        case .jemalloc: return jemallocCounter()
        case nil:
            return .unavailable(
                .interposer, reason: "\(counterVariable)='\(requested)' names no counter; use interposer or jemalloc")
        }
    }()

    /// The allocator that serves `malloc` in this process, found by watching one allocation.
    public static let allocator: AllocatorKind = {
        guard let statistics = JemallocStatistics(), let before = statistics.threadAllocatedBytes() else {
            return .system
        }
        let moved = probeAllocation { statistics.threadAllocatedBytes() ?? before } != before
        return moved ? .jemalloc : .system
    }()

    /// Opens a counting window (windows nest) and reads the totals at its start.
    public func begin() -> Snapshot {
        if jemalloc == nil {
            Self.openWindows.withLock { open in
                if open.windows == 0 { MallocInterposerSwift.hook() }
                open.windows += 1
            }
        }
        return snapshot()
    }

    /// Reads the totals at the end of a window opened with ``begin()``, and closes it.
    public func end() -> Snapshot {
        let totals = snapshot()
        if jemalloc == nil {
            Self.openWindows.withLock { open in
                open.windows -= 1
                if open.windows == 0 { MallocInterposerSwift.unhook() }
            }
        }
        return totals
    }

    /// Switches on what counts into callers' windows (``CallerAllocations``), as a window
    /// that nests with ``begin()``'s: the interposer's counting, whose allocation hook this
    /// counter installed; jemalloc's allocation hooks. `false`, with nothing switched on, if
    /// jemalloc refused its hooks.
    package func beginCallerCounting() -> Bool {
        guard let jemalloc else {
            _ = begin()
            return true
        }
        return Self.openWindows.withLock { open in
            if open.jemallocHooks == 0 {
                guard let handle = jemalloc.installCountingHooks() else { return false }
                open.jemallocHandle = handle
            }
            open.jemallocHooks += 1
            return true
        }
    }

    /// Switches off what ``beginCallerCounting()`` switched on, once no window needs it.
    package func endCallerCounting() {
        if let jemalloc {
            Self.openWindows.withLock { open in
                open.jemallocHooks -= 1
                if open.jemallocHooks == 0, let handle = open.jemallocHandle {
                    jemalloc.removeHooks(handle)
                    open.jemallocHandle = nil
                }
            }
        } else {
            _ = end()
        }
    }

    /// Counting windows open now, process-wide; counting is switched on and off under the
    /// same lock, so one window closing never switches off another that is opening.
    private static let openWindows = Mutex<OpenWindows>(OpenWindows())

    private struct OpenWindows {
        var windows = 0
        /// Callers' windows counting through jemalloc's hooks, and the hooks' handle.
        var jemallocHooks = 0
        var jemallocHandle: UInt?
    }

    /// Totals counted so far (inside windows, for the interposer). Allocates nothing.
    public func snapshot() -> Snapshot {
        if let jemalloc { return jemalloc.snapshot() }
        let statistics = MallocInterposerSwift.getStatistics()
        return Snapshot(
            count: UInt64(max(0, statistics.mallocCount)), bytes: UInt64(max(0, statistics.mallocBytesCount)))
    }

    /// Heap bytes allocated and not yet freed, as this counter measures bytes: a difference of
    /// two readings is what was kept alive in between.
    public func liveBytes() -> UInt64 {
        if let jemalloc { return jemalloc.liveBytes() }
        let statistics = MallocInterposerSwift.getStatistics()
        return UInt64(max(0, statistics.mallocBytesCount - statistics.freeBytesCount))
    }

    // MARK: Finding a counter

    private static func interposer() -> Availability {
        if let installed = InterposerLibrary.globalHooksInstalled, !installed {
            return .unavailable(
                .interposer,
                reason: "the malloc interposer is compiled out of sanitizer builds (the sanitizer serves malloc), "
                    + "so counts would read zero")
        }
        MallocInterposerSwift.hook()
        let before = MallocInterposerSwift.getStatistics().mallocCount
        let after = probeAllocation { MallocInterposerSwift.getStatistics().mallocCount }
        MallocInterposerSwift.unhook()
        guard after > before else {
            return .unavailable(
                .interposer,
                reason: "the malloc interposer does not serve this process's malloc: start it with "
                    + "LD_PRELOAD=\(InterposerLibrary.path ?? "libMallocInterposerSwift.so") first in the list "
                    + "(the session-bench command line does this for its measuring processes)")
        }
        // Called for each allocation counted, and counting only into callers' open windows.
        MallocInterposerSwift.setAllocationHook(session_bench_count_allocation)
        return .counting(AllocationCounter(kind: .interposer, jemalloc: nil))
    }

    private static func jemallocCounter() -> Availability {
        guard let statistics = JemallocStatistics() else {
            return .unavailable(
                .jemalloc,
                reason: "jemalloc is not loaded: install it (apt-get install libjemalloc2) and run with "
                    + "--allocator jemalloc, or count with the interposer (the default)")
        }
        guard allocator == .jemalloc else {
            return .unavailable(
                .jemalloc,
                reason: "jemalloc is loaded but does not serve this process's malloc (a sanitizer or another allocator "
                    + "intercepts it), so its counts would read zero")
        }
        guard statistics.threadCacheDisabled else {
            return .unavailable(
                .jemalloc,
                reason: "jemalloc's thread cache is on, so its arena counts lag: set MALLOC_CONF=tcache:false")
        }
        guard let hooks = statistics.installCountingHooks() else {
            return .unavailable(
                .jemalloc,
                reason: "this jemalloc has no allocation hooks (experimental.hooks, jemalloc 5.2 and later), "
                    + "so a caller's allocations cannot be told from the harness's: count with the interposer")
        }
        statistics.removeHooks(hooks)
        return .counting(AllocationCounter(kind: .jemalloc, jemalloc: statistics))
    }

    /// Reads `reading` after one allocation of 48 bytes that it does not free first. Not
    /// optimized, so the allocation cannot be removed as dead code.
    @_optimize(none)
    private static func probeAllocation<T>(_ reading: () -> T) -> T {
        let block = malloc(48)
        let value = reading()
        free(block)
        return value
    }
}

/// The interposer's shared library: where it is, and whether its hooks were built in.
public enum InterposerLibrary {
    /// The file name SwiftPM gives the interposer's library.
    public static let fileName = "libMallocInterposerSwift.so"

    /// The path of the `libMallocInterposerSwift.so` mapped into this process (the loader's own
    /// record, `/proc/self/maps`), or `nil` if none is.
    public static let path: String? = {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return nil }
        for line in maps.split(separator: "\n") {
            guard let slash = line.firstIndex(of: "/") else { continue }
            let path = String(line[slash...])
            if path.hasSuffix("/" + fileName) { return path }
        }
        return nil
    }()

    /// `false` in a sanitizer build, where the library leaves `malloc` alone; `nil` if the
    /// library is not loaded.
    package static var globalHooksInstalled: Bool? {
        typealias Query = @convention(c) () -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_interposer_global_hooks_installed")
        else {
            return nil
        }
        return unsafeBitCast(symbol, to: Query.self)() != 0
    }
}
