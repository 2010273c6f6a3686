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
struct InProcessTurn: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite or a parameterized test function is scoped too; only its cases take turns.
        guard testCase != nil else { return try await function() }
        await Turns.shared.acquire()
        do {
            try await function()
        } catch {
            await Turns.shared.release()
            throw error
        }
        await Turns.shared.release()
    }

    /// A first-come, first-served turn, held across suspension points.
    actor Turns {
        static let shared = Turns()
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
}
