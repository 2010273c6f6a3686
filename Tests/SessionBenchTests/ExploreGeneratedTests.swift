import Foundation
import Testing

@testable import SessionBench
@testable import SessionBenchCLI

@Suite("Generated programs")
struct GeneratedProgramTests {
    @Test(
        "a program is one choice per slot, the empty slot first: empty slots leave no step, and lines name each caller's"
    )
    func programFromChoices() {
        var picks = [1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, ProgramStep.signInRefused.rawValue].makeIterator()
        let program = GeneratedProgram.generated(callers: 3) { count in
            let value = picks.next() ?? 0
            #expect(count == ProgramStep.allCases.count - 1, "every step but a crash")
            return value
        }
        #expect(program.callers == [[.read, .expire], [], [.signOut, .signInRefused]])
        #expect(program.lines == ["caller 0: validToken, expire", "caller 2: signOut, signIn(B), refused"])
        #expect(program.longest == 2)
        #expect(GeneratedProgram.generated(callers: 2) { _ in 0 }.lines == ["no steps"])
    }
}

extension ExploreCommandTests {
    /// Wrong stores of the tests that a generated program catches, each with the invariant it breaks first.
    static let caughtByPrograms = [
        "actor-naive", "cancel-fenced", "caches-past-401", "cancels-shared-401", "rollback-on-failure",
        "sticky-401-failure", "impatient-waiter", "gap-before-publish", "mutex-unshared-refresh",
    ]

    /// The steps of each caller of the printed program.
    static func programSteps(in stdout: String, of store: String) -> [Int] {
        let section = stdout.components(separatedBy: "\(store): the schedule").dropFirst().first ?? ""
        let program = section.components(separatedBy: "the program (shrunk with the schedule):").dropFirst().first ?? ""
        return program.split(separator: "\n").prefix { !$0.contains("the interleaving") }.compactMap { line in
            guard let steps = line.components(separatedBy: ": ").dropFirst().first, line.contains("caller") else {
                return nil
            }
            return steps.components(separatedBy: ", ").count { !$0.hasPrefix("refused") }
        }
    }

    @Test(
        "generated: every correct store passes; every wrong store is caught with a program of 4 steps or fewer per caller"
    )
    func generatedPrograms() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "generated", "--schedules", "400", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "actor-task", "actor-fast-read", "main-actor"] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "400"], "\(correct.stdout)")
        }
        // A cancellation lands at every point of actor-task's refresh: before the call, while the
        // refresh is not sent, at the server, answered before the caller is back, after.
        let cancels = try #require(
            correct.stdout.split(separator: "\n").first { $0.hasPrefix("  actor-task: before the call") },
            "\(correct.stdout)")
        for point in [
            "before the call", "refresh not sent yet", "refresh at the server", "answered, caller not back",
            "after the call returned",
        ] {
            let count = cancels.components(separatedBy: point + " ").dropFirst().first?.prefix { $0.isNumber }
            #expect(count.flatMap { Int($0) }.map { $0 > 0 } == true, "\(point): \(cancels)")
        }
        // The programs drive every transition of the lifecycle a named storm drives a few of.
        #expect(correct.stdout.contains("  mutex: 33 of 33 transitions\n"), "\(correct.stdout)")
        let storm = try await ToolProcess.run(
            ["explore", "--stores", "mutex", "--scenario", "expiry-storm", "--schedules", "400", "--quiet"],
            timeout: 120)
        #expect(storm.stdout.contains("  mutex: 6 of 33 transitions; not driven: "), "\(storm.stdout)")
        let wrong = try await ToolProcess.run(
            [
                "explore", "--stores", Self.caughtByPrograms.joined(separator: ","), "--scenario", "generated",
                "--schedules", "3000", "--quiet",
            ],
            environment: Self.selfTest, timeout: 600)
        #expect(wrong.status == 1, "\(wrong.stdout)\(wrong.stderr)")
        for store in Self.caughtByPrograms {
            #expect(Self.row(store, in: wrong.stdout).prefix(2) == [store, "violated"], "\(wrong.stdout)")
            let steps = Self.programSteps(in: wrong.stdout, of: store)
            #expect(!steps.isEmpty && steps.allSatisfy { $0 <= 4 }, "\(store): \(steps)\n\(wrong.stdout)")
        }
    }

    @Test("generated: the printed string carries the program and the schedule, and replays the failure alone")
    func generatedReplays() async throws {
        let run = try await ToolProcess.run(
            ["explore", "--stores", "sticky-401-failure", "--scenario", "generated", "--schedules", "3000", "--quiet"],
            environment: Self.selfTest, timeout: 300)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("the program (shrunk with the schedule):"), "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}
