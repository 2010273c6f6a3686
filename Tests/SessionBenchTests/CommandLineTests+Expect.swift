import Foundation
import SessionBench
import SessionOracle
import Testing

/// `--expect` through the command line: the re-entrant actor's violations named in a file make
/// its run `known` and the exit 0; one line fewer fails the run; a line for what did not happen
/// is stale and fails it too.
extension CommandLineTests {
    static let expectRun = [
        "compare", "--stores", "actor-naive,mutex", "--include-broken", "--scenario", "expiry-storm",
    ] + quick

    func expectationsFile(_ lines: [String]) throws -> String {
        let url = try temporaryDirectory().appendingPathComponent("session-bench.expect.json")
        try #"{"version": 1, "expect": ["# .appending(lines.joined(separator: ",\n")).appending("]}")
            .write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    static let naiveLines = [
        #"{"store": "actor-naive", "invariant": "I1", "reason": "re-entrant across the refresh's await"}"#,
        #"{"store": "actor-naive", "invariant": "I7", "reason": "follows from I1"}"#,
        #"{"store": "actor-naive", "invariant": "I27", "reason": "callers served after the refusal"}"#,
    ]

    @Test("--expect: named violations are 'known' and exit 0; one line fewer exits 1; a line for what did not happen is stale")
    func expectations() async throws {
        let all = try expectationsFile(Self.naiveLines)
        let known = try await run(Self.expectRun + ["--expect", all, "--format", "json"])
        #expect(known.status == 0, "\(known.stdout)\(known.stderr)")
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(known.stdout.utf8))
        let naive = try #require(report.results.first { $0.store == "actor-naive" })
        #expect(naive.verdict == .known)
        #expect(Set(naive.known?.map(\.invariant.id) ?? []) == ["I1", "I7", "I27"])
        #expect(report.expectations?.stale.isEmpty == true)

        let fewer = try expectationsFile(Array(Self.naiveLines.dropLast()))
        let failing = try await run(Self.expectRun + ["--expect", fewer])
        #expect(failing.status == 1, "\(failing.stdout)\(failing.stderr)")
        #expect(failing.stdout.contains("FAIL I27 (+2 known)"), "\(failing.stdout)")

        let extra = try expectationsFile(
            Self.naiveLines + [#"{"store": "mutex", "invariant": "I1", "reason": "it never did"}"#])
        let stale = try await run(Self.expectRun + ["--expect", extra])
        #expect(stale.status == 1, "\(stale.stdout)\(stale.stderr)")
        #expect(stale.stdout.contains("known I1,I7,I27"), "\(stale.stdout)")
        #expect(
            stale.stdout.contains("stale expectation: mutex I1 in any scenario did not happen (expiry-storm)"),
            "\(stale.stdout)")
    }

    @Test("--expect with a bad file is one line naming the key, exit 2, before anything runs")
    func expectationsRefused() async throws {
        let wrong = try expectationsFile([#"{"store": "actor-naive", "invariant": "I1"}"#])
        let run = try await run(Self.expectRun + ["--expect", wrong])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty, "nothing ran")
        #expect(run.stderr.contains("--expect:") && run.stderr.contains("expect[0].reason: is missing"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        let missing = try await self.run(Self.expectRun + ["--expect", "/nonexistent/e.json"])
        #expect(missing.status == 2 && missing.stderr.contains("cannot be read"), "\(missing.stderr)")
    }
}
