import Foundation
import Testing

@testable import SessionBench
@testable import SessionBenchCLI

extension ExploreCommandTests {
    @Test(
        "a store that keeps its session is explored over a storage in memory: a refresh saved after the sign-out is found (I16), and replays"
    )
    func exploredStorage() async throws {
        let run = try await ToolProcess.run(
            [
                "explore", "--stores", "persist-unfenced,mutex", "--scenario", "sign-out-race", "--schedules", "500",
                "--quiet",
            ], timeout: 300)
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        let row = Self.row("persist-unfenced", in: run.stdout)
        #expect(row.prefix(2) == ["persist-unfenced", "violated"], "\(run.stdout)")
        #expect(row.dropFirst(2).first?.contains("I16") == true, "\(row)")
        #expect(run.stdout.contains("after the sign-out that ended it returned"), "\(run.stdout)")
        #expect(Self.row("mutex", in: run.stdout).prefix(3) == ["mutex", "pass", "500"], "\(run.stdout)")
        let replay = try #require(Self.replayArguments(in: run.stdout), "\(run.stdout)")
        let digest = try #require(Self.digest(in: run.stdout), "\(run.stdout)")
        let again = try await ToolProcess.run(replay + ["--quiet"], timeout: 120)
        #expect(again.status == 1 && Self.digest(in: again.stdout) == digest, "\(again.stdout)")
    }
}
