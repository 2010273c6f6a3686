#if HTTP
import Foundation
import Testing

/// `compare --transport http`: the same stores, the same checks, the token server behind real
/// sockets. A correct store passes as it does in process, a broken one fails with the same
/// invariants, and each refresh's transport overhead is reported.
// Each test runs two `compare`s of its own; it takes an in-process turn so that no crowd of the
// in-process suites competes with them for the two cores. The limit bounds a hang.
@Suite(.tags(.slow), .skippedInQuickRun, .serialized, .inProcessTurn, .timeLimit(.minutes(30))) struct TransportTests {
    struct Row {
        let fields: [String: String]
        subscript(_ name: String) -> String { fields[name] ?? "" }
    }

    /// The CSV's rows, by column name (no field here holds a comma).
    static func rows(_ csv: String) -> [Row] {
        let lines = csv.split(whereSeparator: \.isNewline).map(String.init)
        guard let header = lines.first?.split(separator: ",", omittingEmptySubsequences: false).map(String.init) else {
            return []
        }
        return lines.dropFirst().map { line in
            let values = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return Row(fields: Dictionary(uniqueKeysWithValues: zip(header, values)))
        }
    }

    /// Each store × scenario's verdict and violated invariants.
    static func verdicts(_ rows: [Row]) -> [String: String] {
        var verdicts: [String: String] = [:]
        for row in rows { verdicts["\(row["store"]) × \(row["scenario"])"] = "\(row["verdict"]) \(row["violated_invariants"])" }
        return verdicts
    }

    @Test("correct stores pass and actor-naive fails with the same invariants over http as in process")
    func sameVerdicts() async throws {
        let common = [
            "compare", "--stores", "mutex,actor-task,actor-naive", "--include-broken", "--scenario",
            "expiry-storm,401-storm,sign-out-race,cancellation-storm", "--rounds", "6", "--format", "csv", "--quiet",
        ]
        let local = try await ToolRun.finish(common)
        let http = try await ToolRun.finish(common + ["--transport", "http"])
        #expect(local.status == 1, "actor-naive fails: \(local.stderr)")
        #expect(http.status == 1, "actor-naive fails: \(http.stderr)")
        let localRows = Self.rows(local.stdout), httpRows = Self.rows(http.stdout)
        func verdict(_ rows: [Row]) -> [String: String] { Self.verdicts(rows).mapValues { String($0.prefix { $0 != " " }) } }
        #expect(verdict(localRows) == verdict(httpRows))
        #expect(verdict(httpRows).count == 12)
        // The bug is the same: more than one refresh per expiry (I1), and a reused refresh token
        // (I7). Timing may add more: a refresh over a socket is open longer, so a stale 401 lands
        // inside it more often (I6).
        for row in localRows + httpRows where row["store"] == "actor-naive" {
            let violated = Set(row["violated_invariants"].split(separator: " "))
            #expect(violated.isSuperset(of: ["I1", "I7"]), "\(row["scenario"]) over \(row["transport"]): \(violated)")
        }
        for row in httpRows {
            #expect(row["transport"] == "http")
            if row["store"] == "actor-naive" {
                #expect(row["verdict"] == "violated")
            } else {
                #expect(row["verdict"] == "pass", "\(row["store"]) × \(row["scenario"]): \(row["violated_invariants"])")
            }
        }
        for row in localRows { #expect(row["transport"] == "in-process") }
        // Every refresh crossed the socket, and its overhead was measured.
        let storm = try #require(httpRows.first { $0["store"] == "mutex" && $0["scenario"] == "expiry-storm" })
        #expect(Int(storm["transport_refreshes"]) == Int(storm["refresh_calls"]))
        #expect((Double(storm["transport_overhead_p50_us"]) ?? 0) > 0)
        #expect(http.stdout.contains("transport_overhead_p99_us"))
    }

    @Test("the table names the transport and its overhead per store")
    func tableBlock() async throws {
        let run = try await ToolRun.finish([
            "compare", "--stores", "mutex", "--scenario", "expiry-storm", "--rounds", "4", "--transport", "http", "--quiet",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("transport http — what it added to each refresh"), "\(run.stdout)")
        let row = run.stdout.split(separator: "\n").first { $0.hasPrefix("mutex") && $0.contains("1 of 1") }
        #expect(row != nil, "\(run.stdout)")
    }
}
#endif
