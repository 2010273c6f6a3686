import CAllocationWindows
import Foundation
import Testing

/// The windows a steady run counts allocations in (`CallerAllocations`): an allocation counts
/// into a caller's window only when the caller's own task made it with the window open, on
/// whichever thread that task ran. Driven here by calling the counter's hook directly, as the
/// malloc interposer and jemalloc call it inside each allocation: a test process never
/// switches real counting on (see `AllocationCounter`).
@Suite("Caller allocation windows", .serialized)
struct CallerAllocationWindowsTests {
    @Test("a caller's window counts its own task's allocations inside its call, on every thread it runs on, and nothing else")
    func countsTheCallersOwn() async throws {
        let home = ThreadExecutor()
        let away = ThreadExecutor()
        defer {
            home.stop()
            away.stop()
        }
        let box = try Windows(#require(session_bench_windows_make(2)))
        let windows = box.pointer
        try #require(session_bench_windows_install(windows) == 0, "no other windows are counting")
        defer {
            session_bench_windows_uninstall(windows)
            session_bench_windows_release(windows)
        }
        let other = Task(executorPreference: home) {
            let window = session_bench_windows_register(box.pointer, 1)!
            session_bench_window_open(window)
            session_bench_count_allocation(7)
            session_bench_window_close(window)
        }
        await other.value
        let caller = Task(executorPreference: home) { () -> [pthread_t] in
            let window = session_bench_windows_register(box.pointer, 0)!
            session_bench_count_allocation(1_000)  // before the call: not counted
            session_bench_window_open(window)
            session_bench_count_allocation(32)
            let before = pthread_self()
            // The call moves to another thread, and back: counted on each.
            let elsewhere = await withTaskExecutorPreference(away) {
                session_bench_count_allocation(32)
                return pthread_self()
            }
            // While the caller is inside its call, another task's allocation and a thread's
            // that runs no task are not the caller's.
            await Task(executorPreference: away) { session_bench_count_allocation(1_000) }.value
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread {
                    session_bench_count_allocation(1_000)
                    done.resume()
                }.start()
            }
            session_bench_count_allocation(32)
            let after = pthread_self()
            session_bench_window_close(window)
            session_bench_count_allocation(1_000)  // after the call: not counted
            return [before, elsewhere, after]
        }
        let threads = await caller.value
        #expect(threads[0] != threads[1], "the call ran on two threads")
        #expect(threads[0] == threads[2])
        var count: UInt64 = 0
        var bytes: UInt64 = 0
        session_bench_windows_totals(windows, &count, &bytes)
        #expect(count == 4, "three in the caller's call, one in the other caller's")
        #expect(bytes == 3 * 32 + 7)
    }

    @Test("one set of windows counts at a time, and windows given back are reused empty")
    func oneAtATime() async throws {
        let firstBox = try Windows(#require(session_bench_windows_make(4)))
        let first = firstBox.pointer
        try #require(session_bench_windows_install(first) == 0)
        let second = try #require(session_bench_windows_make(4))
        #expect(session_bench_windows_install(second) == -1, "another set is counting")
        let registered = await Task {
            guard let window = session_bench_windows_register(firstBox.pointer, 0) else { return false }
            session_bench_window_open(window)
            session_bench_count_allocation(32)
            session_bench_window_close(window)
            return true
        }.value
        #expect(registered)
        session_bench_windows_uninstall(first)
        var count: UInt64 = 0
        var bytes: UInt64 = 0
        session_bench_windows_totals(first, &count, &bytes)
        #expect(count == 1 && bytes == 32)
        #expect(session_bench_windows_install(second) == 0)
        session_bench_windows_uninstall(second)
        session_bench_windows_release(second)
        // The one that counted is kept for reuse (the larger, or as large), and comes back empty.
        session_bench_windows_release(first)
        let reused = try #require(session_bench_windows_make(2))
        #expect(reused == first)
        session_bench_windows_totals(reused, &count, &bytes)
        #expect(count == 0 && bytes == 0)
        #expect(session_bench_windows_register(reused, 2) == nil, "only as many callers as asked for")
        session_bench_windows_release(reused)
    }
}

/// Windows shared with the tasks of a test: the C side keeps them consistent.
private struct Windows: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
