import Testing

/// In-process scenario runs take turns: each runs callers on this process's cooperative pool
/// and reports a hang when they cannot start within the hang timeout, so two suites running
/// crowds side by side on two cores starve each other into false HUNG verdicts. Test cases of
/// the suites marked `.inProcessTurn` run one at a time; everything else runs beside them.
///
/// A test's time limit counts its wait for the turn, and on a loaded machine the turns before
/// it take minutes (beside 8 busy loops on 2 cores, cases waited past 5 minutes). So every
/// suite's limit is 30 minutes: it turns a hang into a failure within a CI run, and is never a
/// speed the machine must reach. The harness's own watchdogs report a store that hangs long
/// before it, and each run of the tool is killed past its own timeout (``ToolProcess``).
///
/// Runs that start processes over one storage (`replicas`, `shared-storage`, `crash-restart`, the
/// storage faults and what a killed run leaves behind) take turns of their own
/// (``storageProcessTurn``), and the replicas' runs take the in-process turn as well: side by side
/// with them, replica processes and the database server on two cores slowed a lock holder past the
/// lock's timeout, and its waiters failed as the backend says they do.
struct InProcessTurn: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }
    var turns = Turns.shared

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite or a parameterized test function is scoped too; only its cases take turns.
        guard testCase != nil else { return try await function() }
        await turns.acquire()
        do {
            try await function()
        } catch {
            await turns.release()
            throw error
        }
        await turns.release()
    }

    /// A first-come, first-served turn, held across suspension points.
    actor Turns {
        static let shared = Turns()
        static let storageProcesses = Turns()
        private var held = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard held else {
                held = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty {
                held = false
            } else {
                waiting.removeFirst().resume()  // the turn passes straight to the next
            }
        }
    }
}

extension Trait where Self == InProcessTurn {
    /// Test cases take turns with the other in-process scenario runs (see ``InProcessTurn``).
    static var inProcessTurn: Self { InProcessTurn() }
    /// Test cases take turns with the other runs that start replica processes (see ``InProcessTurn``).
    static var storageProcessTurn: Self { InProcessTurn(turns: .storageProcesses) }
}
