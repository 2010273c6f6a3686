import Foundation
import Testing

@testable import SessionBench
@testable import SessionBenchCLI

extension ExploreCommandTests {
    @Test(
        "writes-under-reads: every store passes; a cache that outlives a 401 and a refresh gap are caught among the readers, and replay"
    )
    func writesUnderReads() async throws {
        let correct = try await ToolProcess.run(
            ["explore", "--scenario", "writes-under-reads", "--schedules", "300", "--quiet"], timeout: 300)
        #expect(correct.status == 0, "\(correct.stdout)\(correct.stderr)")
        for store in ["lock-free-read", "mutex", "nslock", "actor-task", "actor-fast-read", "main-actor"] {
            #expect(Self.row(store, in: correct.stdout).prefix(3) == [store, "pass", "300"], "\(correct.stdout)")
        }
        let wrong = try await ToolProcess.run(
            [
                "explore", "--stores", "caches-past-401,gap-before-publish", "--scenario", "writes-under-reads",
                "--schedules", "2000",
            ],
            environment: Self.selfTest, timeout: 300)
        #expect(wrong.status == 1, "\(wrong.stdout)\(wrong.stderr)")
        #expect(Self.row("caches-past-401", in: wrong.stdout).prefix(3) == ["caches-past-401", "violated", "I5"])
        #expect(Self.row("gap-before-publish", in: wrong.stdout).prefix(2) == ["gap-before-publish", "violated"])
        let replay = try #require(Self.replayArguments(in: wrong.stdout), "\(wrong.stdout)")
        let digest = try #require(Self.digest(in: wrong.stdout), "\(wrong.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], environment: Self.selfTest, timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}
