import Synchronization

/// Polls `condition` until it holds, failing after `timeout` rather than hanging the suite.
/// With `progress`, the timeout counts from the last time its value moved: a thousand callers
/// that a sanitizer on a loaded machine slows to a crawl are waited for as long as they keep
/// coming; only a wait that stands still fails.
func eventually(
    _ what: String, timeout: Duration = .seconds(10), progress: (@Sendable () -> Int)? = nil,
    _ condition: @Sendable () async -> Bool
) async throws {
    var deadline = ContinuousClock.now + timeout
    var last = progress?()
    while !(await condition()) {
        if let progress, progress() != last {
            last = progress()
            deadline = ContinuousClock.now + timeout
        }
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
        try await Task.sleep(for: .milliseconds(1))
    }
}

struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// A counter tasks bump as they enter a call.
final class Counter: Sendable {
    private let value = Atomic(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
}
