import Foundation
import SessionContract
import Synchronization

/// Numbered progress lines on standard error, timed from when it is made:
/// `[3/64] mutex × expiry-storm: pass  (1.2s)`.
final class ProgressLines: Sendable {
    private let total: Int
    private let quiet: Bool
    private let started = ContinuousClock.now
    private let done = Mutex(0)

    init(total: Int, quiet: Bool) {
        self.total = total
        self.quiet = quiet
    }

    /// Counts one more result and, unless quiet, prints `what` with its number and the time.
    func record(_ what: String) {
        let index = done.withLock { count in
            count += 1
            return count
        }
        guard !quiet else { return }
        let elapsed = (ContinuousClock.now - started).secondsValue
        Log.progress("[\(index)/\(total)] \(what)" + String(format: "  (%.1fs)", elapsed))
    }
}

enum Log {
    /// A line on standard error: progress and notes, never results. Standard error that cannot
    /// be written (closed, a full disk) loses the line: there is nowhere else to say so.
    static func progress(_ line: String) {
        _ = OutputWriter.writeAll(STDERR_FILENO, line + "\n")
    }
}
