import ArgumentParser
import Foundation
import PropertyBased
import SessionBench
import SessionContract
import Testing

@testable import SessionBenchCLI

/// Generated command lines and thresholds files: whatever a user types, the tool answers with
/// 0, 1 or 2, never a signal; bad input leaves no file; and nothing it accepts runs unbounded.
// The 2,000 command lines take 216 s alone on the 2-core CI VM (debug build, 2026-11; ArgumentParser
// validates every parse in debug builds): ten minutes leaves room for a busy machine.
@Suite("Input fuzzing", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
struct InputFuzzTests {
    /// Words a command line is built from: every subcommand and option, and values at and
    /// beyond every range's edges, in every spelling the parsers must refuse.
    static let words: [String] = [
        "compare", "stress", "sweep", "check", "list", "run-store",
        "--tasks", "--duration", "--rounds", "--seed", "--rate", "--hang-timeout", "--stores", "--scenario", "--format",
        "--output", "--iterations", "--for", "--parameter", "--values", "--repeats", "--baseline", "--include-broken",
        "--in-process", "--quiet", "--thresholds", "--update", "--help", "--version", "-h", "--",
    ]
    static let values: [String] = [
        "0", "1", "2", "-1", "64", "100000", "100001", "1000000000", "9223372036854775807", "9223372036854775808",
        "18446744073709551615", "18446744073709551616", "1e300", "1e-300", "1e14", "0.0001", "0.5", "3600", "3601", "1.5",
        "0x10", "0b1", "+5", "1_000", "nan", "inf", "-inf", "", ",", ",,", " ", "500ms", "1e10s", "1e300ms", "9e9s", "0s", "-1s",
        "1ns", "1us", "1ms", "2h", "169h", "1.5m", "abc", "ms", "s", "mutex", "actor-naive", "lock-free-read", "nosuchstore",
        "mutex,mutex", "steady-reads", "expiry-storm", "scale-storm", "steady-reads,steady-reads", "tasks", "rate",
        "refresh-latency", "token-lifetime", "readers-per-writer", "table", "csv", "json", "markdown", "xml", "/dev/null",
        "/dev/full", "-", "/proc/f.csv", "/nonexistent/f.csv", "\u{1b}[31m", "a\u{7}b", "é", String(repeating: "x", count: 300),
    ]

    /// A generated command line: indexes into `words` and `values`, and now and then a
    /// random printable string.
    static let commandLine = Gen.int(in: 0...(words.count + values.count + 7)).array(of: 0...9)
        .map { picks in
            picks.map { pick in
                if pick < words.count { return words[pick] }
                if pick < words.count + values.count { return values[pick - words.count] }
                return String(repeating: String(UnicodeScalar(UInt8(33 + pick % 90))), count: 1 + pick % 4)
            }
        }

    /// The status the tool would end with for `arguments`, and whether it got past parsing
    /// and validation (the point where a real run would start).
    func parse(_ arguments: [String]) -> (status: Int32, accepted: Bool, command: Any?) {
        do {
            let command = try SessionBenchCommand.parseAsRoot(arguments)
            return (0, true, command)
        } catch {
            return (SessionBenchCommand.outcome(of: error).status, false, nil)
        }
    }

    @Test("a thousand generated command lines: exit 0 or 2 before a run, never a trap; whatever is accepted is in range")
    func commandLines() async throws {
        var accepted = 0
        // Parsing a command line takes ArgumentParser 25-110 ms in a debug build (`list` the
        // least, `compare` the most): 1,000 of them take two minutes, and beside 8 busy loops on
        // 2 cores five times that. The suite's limit bounds a hang, not a speed.
        await propertyCheck(count: 1000, input: Self.commandLine) { arguments in
            let (status, passed, command) = parse(arguments)
            #expect(status == 0 || status == 2, "\(arguments): status \(status)")
            guard passed, let command else { return }
            accepted += 1
            // What would run is inside every stated range, and its time budget is finite.
            var options: RunOptions?
            if let compare = command as? Compare { options = compare.run }
            if let stress = command as? Stress { options = stress.run }
            if let sweep = command as? Sweep {
                options = sweep.run
                let (_, points) = try sweep.plan()
                for point in points { #expect(throws: Never.self) { try point.scenario.validate() } }
            }
            guard let options else { return }
            let scenarios = try options.resolvedScenarios()
            for scenario in scenarios {
                #expect(InputRange.tasks.contains(scenario.tasks) && InputRange.rounds.contains(scenario.rounds), "\(arguments)")
                #expect(InputRange.durationSeconds.contains(scenario.duration.secondsValue), "\(arguments)")
            }
            #expect(InputRange.hangTimeoutSeconds.contains(options.execution.hangTimeout.secondsValue))
            let budget = IsolatedRun.budget(for: scenarios, hangTimeout: options.execution.hangTimeout)
            #expect(budget > .zero && budget < .seconds(1e9), "\(arguments)")
        }
        #expect(accepted > 50, "the generator reaches valid command lines too (\(accepted))")
    }

    @Test("stress's varied crowds stay inside the range a measuring process accepts")
    func stressVariationsStayInRange() async {
        await propertyCheck(count: 500, input: Gen.uint64(in: 0...UInt64.max), Gen.int(in: 1...100_000)) { seed, tasks in
            for preset in ScenarioCatalog.all.flatMap({ (try? ScenarioCatalog.resolved($0.name)) ?? [] }) {
                var scenario = preset
                scenario.tasks = tasks
                scenario.accounts = min(scenario.accounts, tasks)
                let varied = Stress.vary(scenario, seed: seed)
                #expect(throws: Never.self, "\(preset.name), \(tasks) callers, seed \(seed)") { try varied.validate() }
            }
        }
    }

    /// A valid thresholds file, mutated byte by byte.
    static let thresholdsTemplate = Array("""
        {"version":1,"run":{"stores":["mutex"],"scenarios":["expiry-storm"],"duration":"100ms","rounds":2,"tasks":4,"seed":3},
         "limits":[{"metric":"refreshes_per_expiry","store":"*","scenario":"*","max":1},
                   {"metric":"p50_ns","store":"mutex","operation":"read","max_ratio":40,"of":{"baseline":"harness_overhead_ns"}}]}
        """.utf8)
    static let replacements: [String] = [
        "", ",", "}", "]", "{", "[", "\"", ":", "0", "-1", "1e14", "1e400", "9223372036854775808", "\"1e10s\"", "\"abc\"", "null",
        "true", "\"limits\":[]", "\"version\":1", ",\"limits\":[]", "\\u0000", "\u{0}", "//", "NaN", "0x10", "[[[[[[[[[[",
    ]
    static let mutations = Gen.int(in: 0...(thresholdsTemplate.count - 1)).array(of: 1...4)
        .map { positions in
            var bytes = thresholdsTemplate
            for position in positions.sorted(by: >) {
                let replacement = Array(replacements[position % replacements.count].utf8)
                let cut = min(position % 3, bytes.count - position)
                bytes.replaceSubrange(position..<(position + cut), with: replacement)
            }
            return bytes
        }

    /// The template with one value replaced, so the file stays well-formed JSON and what is
    /// tested is the range and type checks: many of these are read, many refused.
    static let editedFields = ["\"rounds\":2", "\"tasks\":4", "\"seed\":3", "\"duration\":\"100ms\"", "\"max\":1", "\"max_ratio\":40"]
    static let editedValues = [
        "0", "1", "2", "-1", "1.5", "100000", "100001", "1e14", "9223372036854775808", "18446744073709551615",
        "\"1ms\"", "\"2s\"", "\"0ms\"", "\"1e10s\"", "\"3601s\"", "null", "true", "\"4\"",
    ]
    static let valueEdits = Gen.int(in: 0...(editedFields.count * editedValues.count - 1)).map { pick in
        let field = editedFields[pick % editedFields.count], value = editedValues[pick / editedFields.count]
        let key = field.prefix { $0 != ":" }
        return Array(String(decoding: thresholdsTemplate, as: UTF8.self).replacingOccurrences(of: field, with: "\(key):\(value)").utf8)
    }

    @Test("thousands of mutated thresholds files: read or refused with FILE: key, never a trap; what is read is in range")
    func thresholdsFiles() async throws {
        let known = StoreRegistry.all.map(\.name)
        var accepted = 0
        await propertyCheck(count: 2000, input: Self.mutations) { bytes in Self.readOrRefuse(bytes, known: known, accepted: &accepted) }
        accepted = 0
        await propertyCheck(count: 1000, input: Self.valueEdits) { bytes in Self.readOrRefuse(bytes, known: known, accepted: &accepted) }
        // Every value in the list is read for some field (about a third of the edits): a reader
        // that refused everything would pass the rest of this test.
        #expect(accepted > 100, "edited values that are in range are read (\(accepted) of 1000)")
    }

    static func readOrRefuse(_ bytes: [UInt8], known: [String], accepted: inout Int) {
        do {
            let file = try Thresholds.parse(Data(bytes), path: "t.json", knownStores: known)
            accepted += 1
            if let tasks = file.run.tasks { #expect(InputRange.tasks.contains(tasks)) }
            if let rounds = file.run.rounds { #expect(InputRange.rounds.contains(rounds)) }
            if let duration = file.run.duration {
                #expect(DurationText.seconds(duration).map(InputRange.durationSeconds.contains) == true)
            }
        } catch {
            // Typed throws: anything refused is a ThresholdsError.
            #expect(error.path == "t.json" && !error.key.isEmpty && !error.problem.isEmpty)
            #expect(!error.description.contains("\u{0}") && !error.description.contains("\n"), "\(error)")
        }
    }

    @Test("generated command lines through the executable: 0, 1 or 2, never a signal; exit 2 leaves no file; each ends in bounded time")
    func executable() async throws {
        let directory = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("out.csv").path
        var random = Xoshiro(seed: (1, 2, 3, 4))
        var statuses: [Int32: Int] = [:]
        for _ in 0..<150 {
            var arguments = Self.commandLine.run(using: &random).map { $0 == "/nonexistent/f.csv" ? output : $0 }
            if random.next() % 3 == 0 { arguments += ["--output", output] }
            // Nothing that is accepted may start a real run here.
            arguments.append("--dry-run")
            // Bounded: past the timeout the run is killed and recorded as an issue.
            let run = try await ToolProcess.run(arguments, timeout: 60)
            statuses[run.status, default: 0] += 1
            #expect(!run.signaled, "\(arguments): ended by signal \(run.status - 128)")
            #expect([0, 1, 2].contains(run.status), "\(arguments): status \(run.status)")
            if run.status == 2 {
                #expect(run.stderr.split(separator: "\n").count == 1, "\(arguments): \(run.stderr)")
                #expect(!FileManager.default.fileExists(atPath: output), "\(arguments): exit 2 left a file")
            }
            try? FileManager.default.removeItem(atPath: output)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "\(arguments): a file was left")
        }
        #expect(statuses[2, default: 0] > 0 && statuses[0, default: 0] > 0, "\(statuses)")
    }
}
