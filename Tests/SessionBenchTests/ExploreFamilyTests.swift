import Foundation
import Testing

@testable import SessionBench
@testable import SessionBenchCLI

extension ExploreCommandTests {
    @Test(
        "family: every correct store passes two accounts' programs; a refresh shared across accounts is caught, and replays"
    )
    func family() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "family", "--schedules", "300", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "actor-task", "actor-fast-read", "main-actor"] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "300"], "\(correct.stdout)")
        }
        // shared-flight shares a refresh between accounts' stores: one account alone never sees it.
        let alone = try await ToolProcess.run(
            ["explore", "--stores", "shared-flight", "--scenario", "generated", "--schedules", "1000", "--quiet"],
            environment: Self.selfTest, timeout: 300)
        #expect(alone.status == 0, "\(alone.stdout)\(alone.stderr)")
        let wrong = try await ToolProcess.run(
            ["explore", "--stores", "shared-flight", "--scenario", "family", "--schedules", "1000", "--quiet"],
            environment: Self.selfTest, timeout: 300)
        #expect(wrong.status == 1, "\(wrong.stdout)\(wrong.stderr)")
        #expect(Self.row("shared-flight", in: wrong.stdout).prefix(2) == ["shared-flight", "violated"])
        // Each account's program is printed with its account.
        #expect(wrong.stdout.contains(", account 1, caller "), "\(wrong.stdout)")
        let replay = try #require(Self.replayArguments(in: wrong.stdout), "\(wrong.stdout)")
        let digest = try #require(Self.digest(in: wrong.stdout), "\(wrong.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}
