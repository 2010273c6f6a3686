import CAllocationWindows
import Synchronization

/// Allocations made inside the callers' calls to the store, and nowhere else.
///
/// Each caller has a window, open from just before it calls the store to just after the call
/// returns (two plain stores: no allocation, no lock). The counter's hook, which runs inside
/// every allocation while counting is on, counts an allocation into a window only when the
/// task that made it is the window's caller and the window is open. So a count is exact for
/// what it claims: every allocation the caller's task made during its calls, and none of
/// the harness's own, which it makes outside those windows or on other threads.
///
/// What a caller's task does during a call is followed wherever it runs: a call that
/// suspends (an actor that is busy, a continuation) and resumes on another thread is still
/// counted there, and so is what the concurrency runtime does for the task while running it
/// (an async frame that spills out of the task's allocator, the job that schedules an actor
/// the task leaves with work queued). The runtime takes a task off its thread before it
/// enqueues it on the global executor; those enqueues are counted by the task being enqueued
/// (the runtime's enqueue hook), on whichever thread makes them. Not counted: work the store
/// hands to another thread or task, past the handing over (a block run by a dispatch queue's
/// thread, a `Task` it starts), the runtime enqueueing a caller on the main actor or an actor
/// (past any hook in Swift 6.3), and its bookkeeping between jobs. docs/allocations.md says
/// the same for users.
package final class CallerAllocations: @unchecked Sendable {
    // SAFETY: `windows` is C memory with its own lock for registering; each window is opened
    // and closed by its caller's task alone, counted into atomically by the hook (inside that
    // task's allocations and its enqueues), and read by `finish()` only after every caller has
    // finished.
    private let windows: OpaquePointer
    private let callers: Int
    private let counter: AllocationCounter
    private let registered = Atomic<Int>(0)

    /// Windows for `callers` callers, counted by `counter`; `nil` if there is no memory for them.
    package init?(callers: Int, counter: AllocationCounter) {
        guard let windows = session_bench_windows_make(callers) else { return nil }
        self.windows = windows
        self.callers = callers
        self.counter = counter
    }

    /// Starts counting into these windows: `false` if other windows are counting now (or the
    /// counter cannot count a caller's), and then nothing is counted.
    package func start() -> Bool {
        guard session_bench_windows_install(windows) == 0 else { return false }
        guard counter.beginCallerCounting() else {
            session_bench_windows_uninstall(windows)
            return false
        }
        return true
    }

    /// Caller `index`'s window, for the calling task: called by the caller itself before its
    /// first call to the store.
    package func window(_ index: Int) -> CallerWindow? {
        guard let window = session_bench_windows_register(windows, index) else { return nil }
        registered.add(1, ordering: .relaxed)
        return CallerWindow(window: window)
    }

    /// Stops counting and returns the callers' totals; `nil` when some caller has not finished
    /// (its window is never reused) or never had a window.
    package func finish(everyCallerFinished: Bool) -> AllocationCounter.Snapshot? {
        session_bench_windows_uninstall(windows)
        counter.endCallerCounting()
        guard everyCallerFinished else { return nil }
        defer { session_bench_windows_release(windows) }
        guard registered.load(ordering: .relaxed) == callers else { return nil }
        var count: UInt64 = 0
        var bytes: UInt64 = 0
        session_bench_windows_totals(windows, &count, &bytes)
        return .init(count: count, bytes: bytes)
    }
}

/// One caller's window (see ``CallerAllocations``), used by that caller's task alone.
package struct CallerWindow: @unchecked Sendable {
    // SAFETY: only the task that registered the window opens and closes it.
    package let window: UnsafeMutablePointer<session_bench_window>

    /// Just before the call to the store.
    @inline(__always) package func open() { session_bench_window_open(window) }

    /// Just after the call returns or throws.
    @inline(__always) package func close() { session_bench_window_close(window) }
}
