import Foundation
import Testing

extension ExploreCommandTests {
    @Test(
        "Dispatch under the scheduler: a store that hops through async, a barrier, asyncAfter, a group and the main queue is explored and passes; a check-then-act across async hops is found and replays"
    )
    func dispatchQueuesExplored() async throws {
        for scenario in ["expiry-storm", "generated"] {
            let correct = try await ToolProcess.run(
                [
                    "explore", "--stores", "dispatch-queues,serial-queue,barrier-queue", "--scenario", scenario,
                    "--schedules", "300", "--quiet",
                ], environment: Self.selfTest, timeout: 300)
            #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
            for store in ["dispatch-queues", "serial-queue", "barrier-queue"] {
                #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "300"], "\(correct.stdout)")
            }
            #expect(!correct.stdout.contains("UNCONTROLLED"), "\(correct.stdout)")
        }
        let store = "queue-check-then-act"
        let found = try await ToolProcess.run(
            ["explore", "--stores", store, "--schedules", "300"], environment: Self.selfTest, timeout: 300)
        #expect(found.status == 1, "\(found.stdout)\(found.stderr)")
        let row = Self.row(store, in: found.stdout)
        #expect(row.prefix(2).last?.hasPrefix("violated") == true, "\(found.stdout)")
        #expect(row.dropFirst(2).first?.contains("I1") == true, "\(found.stdout)")
        let replay = try #require(Self.replayArguments(in: found.stdout), "\(found.stdout)")
        let digest = try #require(Self.digest(in: found.stdout), "\(found.stdout)")
        for _ in 0..<3 {
            let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
            #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
        }
        // The mutex store behind a hop onto a global queue before its work: a read begun in one
        // user's session may do that work in the next one's, which the contract forbids.
        let hop = try await ToolProcess.run(
            ["explore", "--stores", "dispatch-hop", "--scenario", "generated", "--schedules", "300", "--quiet"],
            environment: Self.selfTest, timeout: 300)
        #expect(
            Self.row("dispatch-hop", in: hop.stdout).dropFirst().first?.hasPrefix("violated") == true, "\(hop.stdout)")
    }
}

extension ExploreCommandTests {
    @Test("a semaphore wait on the scheduler's only thread is a deadlock that names the call, in seconds, and replays")
    func semaphoreWaitNamed() async throws {
        let store = "semaphore-bridge"
        let found = try await ToolProcess.run(
            ["explore", "--stores", store, "--schedules", "50"], environment: Self.selfTest, timeout: 120)
        #expect(found.status == 1, "\(found.stdout)\(found.stderr)")
        #expect(Self.row(store, in: found.stdout).dropFirst().prefix(2) == ["violated", "I3"], "\(found.stdout)")
        #expect(found.stdout.contains("DispatchSemaphore.wait() on the scheduler's only thread"), "\(found.stdout)")
        let replay = try #require(Self.replayArguments(in: found.stdout), "\(found.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && again.stdout.contains("DispatchSemaphore.wait()"), "\(again.stdout)")
        // A wait that a thread the scheduler does not run ends is no deadlock: that work escaped it
        // (UNCONTROLLED; a thread quick enough to signal before the wait leaves nothing to see).
        let thread = try await ToolProcess.run(
            ["explore", "--stores", "semaphore-thread", "--schedules", "5", "--quiet"], environment: Self.selfTest,
            timeout: 120)
        #expect(thread.status == 0, "\(thread.stdout)\(thread.stderr)")
        let verdict = Self.row("semaphore-thread", in: thread.stdout).dropFirst().first
        #expect(verdict == "UNCONTROLLED" || verdict == "pass", "\(thread.stdout)")
    }
}
