import ArgumentParser
import Foundation
import SessionBench
import Testing

@testable import SessionBenchCLI

/// One rule for every input: what one option or file refuses, every other refuses too, and a
/// refusal names what is wrong, not an error left over from something else.
@Suite("Input consistency", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
struct InputConsistencyTests {
    static let quick = ["--stores", "mutex", "--scenario", "expiry-storm", "--rounds", "2", "--tasks", "4", "--quiet"]

    func expectRefused(_ arguments: [String], mentioning mention: String, notMentioning wrong: String? = nil) async throws {
        let run = try await ToolProcess.run(arguments, timeout: 60)
        let context = arguments.joined(separator: " ")
        #expect(!run.signaled, "\(context): ended by a signal")
        #expect(run.status == 2, "\(context): status \(run.status), \(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(context): one line: \(run.stderr)")
        #expect(run.stderr.contains(mention), "\(context): \(run.stderr)")
        if let wrong { #expect(!run.stderr.contains(wrong), "\(context): \(run.stderr)") }
        #expect(run.stdout.isEmpty, "\(context)")
    }

    @Test("sweep --values takes whole numbers as --tasks does: no exponent, fraction or space", arguments: ["1e3", "2.5e1", "1.0", " 1", "1E2", "4,1e1"])
    func sweepValuesAsStrictAsOptions(value: String) async throws {
        try await expectRefused(
            ["sweep", "--parameter", "tasks", "--values", value, "--dry-run"] + Self.quick, mentioning: "--values")
        try await expectRefused(
            ["sweep", "--parameter", "readers-per-writer", "--values", value, "--scenario", "steady-reads", "--dry-run"],
            mentioning: "--values")
    }

    // Each with a way to end at once should the value be taken: --dry-run, or for explore (which
    // has none) an unknown --strategy, refused after the numbers are read.
    @Test("one number grammar for every option: no exponent in a duration, a decimal or a sweep's values", arguments: [
        (["compare", "--duration", "1e3ms", "--dry-run"], "--duration"), (["compare", "--duration", "2.5e1ms", "--dry-run"], "--duration"),
        (["compare", "--rate", "1E2", "--dry-run"], "--rate"), (["compare", "--hang-timeout", "1e1", "--dry-run"], "--hang-timeout"),
        (["compare", "--pace", "1e2ms", "--dry-run"], "--pace"), (["stress", "--for", "1e1s", "--dry-run"], "--for"),
        (["explore", "--for", "1e1s", "--strategy", "dfs"], "--for"),
        (["sweep", "--parameter", "refresh-latency", "--values", "1e3", "--dry-run"], "--values"),
        (["sweep", "--parameter", "token-lifetime", "--values", "2.5e1", "--dry-run"], "--values"),
        (["sweep", "--parameter", "token-lifetime", "--values", "1E2", "--dry-run"], "--values"),
        (["sweep", "--parameter", "rate", "--values", "1e3", "--dry-run"], "--values"),
    ])
    func noExponents(arguments: [String], option: String) async throws {
        try await expectRefused(arguments, mentioning: option)
    }

    #if HTTP
        @Test("serve reads its numbers by the same grammar: no exponent", arguments: [
            ["--token-lifetime", "1e1s"], ["--transient-rate", "1e-1"], ["--idle-timeout", "1e1"], ["--latency", "20ms~5e-1"],
            ["--timeout-after", "5e1ms"],
        ])
        func serveNoExponents(arguments: [String]) async throws {
            // A --host serve refuses after reading the options: a value taken would end there, saying so.
            try await expectRefused(["serve"] + arguments + ["--host", "0.0.0.0"], mentioning: arguments[0])
        }
    #endif

    @Test("a list is as strict as one value: no empty item, no value twice", arguments: [
        (["sweep", "--parameter", "tasks", "--values", "1,,2"], "empty item"), (["sweep", "--parameter", "tasks", "--values", "1,"], "empty item"),
        (["sweep", "--parameter", "tasks", "--values", ",1"], "empty item"), (["sweep", "--parameter", "tasks", "--values", ""], "empty item"),
        (["sweep", "--parameter", "tasks", "--values", "1,1"], "given before"), (["sweep", "--parameter", "rate", "--values", "2,2.0"], "given before"),
        (["sweep", "--parameter", "allocator", "--values", "system,system"], "given before"),
        (["sweep", "--parameter", "allocator", "--values", "system,"], "empty item"),
        (["compare", "--cpus", "0,0"], "given before"), (["compare", "--cpus", "0-1,1"], "CPU 1"), (["compare", "--cpus", "0,,0"], "empty item"),
    ])
    func listsRefuseEmptyItemsAndRepeats(arguments: [String], mention: String) async throws {
        try await expectRefused(arguments + ["--dry-run"], mentioning: mention)
    }

    @Test("a thresholds file's whole numbers are written as whole numbers", arguments: [
        (#""version": 1.0"#, "version"), (#""version": 1e0"#, "version"), (#""version": 1, "run": { "rounds": 100.0 }"#, "run.rounds"),
        (#""version": 1, "run": { "tasks": 4.0 }"#, "run.tasks"), (#""version": 1, "run": { "rounds": 1e2 }"#, "run.rounds"),
    ])
    func thresholdsWholeNumbers(head: String, key: String) throws {
        let json = "{ \(head), \"limits\": [] }"
        #expect {
            _ = try Thresholds.parse(Data(json.utf8), path: "t.json", knownStores: ["mutex"])
        } throws: { error in
            (error as? ThresholdsError)?.key == key
        }
    }

    @Test("a thresholds file that names no store or scenario, or a count limit no run can meet, is refused", arguments: [
        (#""run": { "stores": [] }, "limits": []"#, "run.stores"),
        (#""run": { "scenarios": [] }, "limits": []"#, "run.scenarios"),
        (#""limits": [ { "metric": "refresh_calls", "max": -1 } ]"#, "limits[0].max"),
        (#""limits": [ { "metric": "allocs_per_op", "max": -0.5 } ]"#, "limits[0].max"),
    ])
    func thresholdsThatCannotMeanWhatTheySay(body: String, key: String) throws {
        let json = "{ \"version\": 1, \(body) }"
        #expect {
            _ = try Thresholds.parse(Data(json.utf8), path: "t.json", knownStores: ["mutex"])
        } throws: { error in
            (error as? ThresholdsError)?.key == key
        }
    }

    @Test("stress runs the --tasks and --rounds it is given, and its reproduce line names them")
    func stressKeepsTasksAndRounds() async throws {
        let run = try await ToolProcess.run(
            ["stress", "--stores", "actor-naive", "--include-broken", "--scenario", "expiry-storm", "--tasks", "8", "--rounds", "3",
             "--iterations", "2", "--seed", "5", "--format", "json"], timeout: 120)
        #expect(run.status == 1, "the re-entrant actor fails: \(run.stderr)")
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(run.stdout.utf8))
        #expect(report.results.count == 2)
        for result in report.results {
            #expect(result.tasks == 8, "ran \(result.tasks) callers, not --tasks 8")
            #expect(result.setup?["rounds"] == "3", "ran \(result.setup?["rounds"] ?? "?") rounds, not --rounds 3")
        }
        let reproduce = run.stderr.split(separator: "\n").filter { $0.contains("reproduce with:") }
        #expect(!reproduce.isEmpty, "\(run.stderr)")
        for line in reproduce {
            #expect(line.contains("--tasks 8") && line.contains("--rounds 3"), "\(line)")
        }
    }

    @Test("every input file is a regular file: a FIFO with or without a writer, a device or a directory is refused in one line, never waited on")
    func inputFilesAreRegularFiles() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let unwritten = folder.appendingPathComponent("unwritten.json").path
        let silent = folder.appendingPathComponent("silent.json").path
        #expect(mkfifo(unwritten, 0o600) == 0 && mkfifo(silent, 0o600) == 0)
        // This process holds `silent` open for writing and never writes: a reader that waits
        // for its end waits for ever.
        let writer = open(silent, O_RDWR | O_NONBLOCK)
        #expect(writer >= 0)
        defer { close(writer) }
        let directory = folder.appendingPathComponent("folder.json").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        for path in [unwritten, silent, "/dev/zero", directory] {
            for arguments in [
                ["compare", "--expect", path] + Self.quick, ["stress", "--expect", path, "--iterations", "1"] + Self.quick,
                ["check", "--thresholds", path, "--dry-run"], ["compare", "--baseline", path] + Self.quick,
            ] {
                try await expectRefused(arguments, mentioning: "not a regular file", notMentioning: "JSON")
            }
        }
    }

    @Test("stress's reproduce line carries every option that changes the run, --expect too, and runs as printed")
    func stressReproduceCarriesEveryOption() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        // A space in the path: the line must quote it to be run as printed.
        let expectations = folder.appendingPathComponent("known issues.json")
        try Data(#"{"version": 1, "expect": [{"store": "actor-naive", "invariant": "I1", "reason": "re-entrant"}]}"#.utf8)
            .write(to: expectations)
        // Each option that changes what runs or how it is judged, with a value that is not its default.
        var carried: [(option: String, words: [String])] = [
            ("--expect", ["--expect", expectations.path]), ("--hang-timeout", ["--hang-timeout", "7.5"]),
            ("--pace", ["--pace", "1ms"]), ("--duration", ["--duration", "250ms"]), ("--rate", ["--rate", "500"]),
            ("--replicas", ["--replicas", "3"]), ("--sync-threads", ["--sync-threads", "3"]), ("--cpus", ["--cpus", "0"]),
            ("--allocator", ["--allocator", "system"]), ("--allocation-counter", ["--allocation-counter", "interposer"]),
            ("--include-broken", ["--include-broken"]), ("--in-process", ["--in-process"]),
        ]
        #if HTTP
            carried.append(("--transport", ["--transport", "http"]))
        #endif
        // What the failing run's line sets itself, stress's own loop, and where results go.
        let notCarried: Set<String> = [
            "--stores", "--scenario", "--seed", "--tasks", "--rounds", "--iterations", "--for", "--format", "--output",
            "--append-output", "--quiet", "--dry-run", "--help", "--version",
        ]
        // Every option stress takes is one or the other: a new option needs a decision here.
        let help = try #require(try JSONSerialization.jsonObject(with: Data(Stress._dumpHelp().utf8)) as? [String: Any])
        let command = try #require(help["command"] as? [String: Any])
        let options = ((command["arguments"] as? [[String: Any]]) ?? []).flatMap { argument in
            ((argument["names"] as? [[String: Any]]) ?? []).filter { $0["kind"] as? String == "long" }
                .compactMap { ($0["name"] as? String).map { "--" + $0 } }
        }
        let undecided = Set(options).subtracting(carried.map(\.option)).subtracting(notCarried)
        #expect(!options.isEmpty && undecided.isEmpty, "stress options neither carried nor left out: \(undecided.sorted())")

        let run = try await ToolProcess.run(
            ["stress", "--stores", "actor-naive", "--scenario", "expiry-storm", "--tasks", "8", "--rounds", "3",
             "--iterations", "1", "--seed", "5", "--quiet"] + carried.flatMap(\.words), timeout: 180)
        #expect(run.status == 1, "actor-naive breaks more than the file names: \(run.stderr)")
        let line = try #require(
            run.stderr.split(separator: "\n").first { $0.contains("reproduce with:") }, "\(run.stderr)")
        let printed = String(line[line.range(of: "reproduce with: ")!.upperBound...])
        for (option, words) in carried {
            #expect(printed.contains(option), "\(option) left out: \(printed)")
            if let value = words.dropFirst().first, value != expectations.path {
                #expect(printed.contains("\(option) \(value)"), "\(option) \(value): \(printed)")
            }
        }
        #expect(printed.contains("--expect '\(expectations.path)'"), "the path is quoted: \(printed)")
        // As a shell reads it: the printed command runs the same store × scenario and fails the same way.
        let words = try #require(Self.shellWords(printed))
        let again = try await ToolProcess.run(Array(words.dropFirst()) + ["--quiet"], timeout: 180)
        #expect(again.status == 1, "\(printed): \(again.stderr)")
        #expect(again.stdout.contains("actor-naive") && again.stdout.contains("known"), "\(again.stdout)")
    }

    /// `line` split as a shell splits words: spaces apart, single quotes kept together.
    static func shellWords(_ line: String) -> [String]? {
        var words: [String] = [], word = "", quoted = false, started = false
        for character in line {
            if quoted {
                if character == "'" { quoted = false } else { word.append(character) }
            } else if character == "'" {
                quoted = true
                started = true
            } else if character == " " {
                if started { words.append(word) }
                word = ""
                started = false
            } else {
                word.append(character)
                started = true
            }
        }
        if started { words.append(word) }
        return quoted ? nil : words
    }

    @Test("a baseline that is not a results file says what it is instead")
    func baselineErrors() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("pipe.json").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let directory = folder.appendingPathComponent("folder.json").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        for (path, mention) in [("/dev/zero", "not a regular file"), (fifo, "not a regular file"), (directory, "is a directory")] {
            try await expectRefused(["compare", "--baseline", path] + Self.quick, mentioning: mention, notMentioning: "No such file")
        }

        let valid = folder.appendingPathComponent("valid.json").path
        let saved = try await ToolProcess.run(["compare", "--output", valid, "--repeats", "5"] + Self.quick)
        #expect(saved.status == 0, "\(saved.stderr)")
        let text = try String(contentsOfFile: valid, encoding: .utf8)
        func variant(_ name: String, _ edit: (String) -> String) throws -> String {
            let path = folder.appendingPathComponent(name).path
            try Data(edit(text).utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
        let huge = try variant("huge.json") { $0.replacingOccurrences(of: "\"tasks\" : 4,", with: "\"tasks\" : 1e400,") }
        try await expectRefused(["compare", "--baseline", huge] + Self.quick, mentioning: "tasks", notMentioning: "not valid JSON")
        let empty = try variant("empty.json") { text in
            let object = try! JSONSerialization.jsonObject(with: Data(text.utf8)) as! [String: Any]
            var emptied = object
            emptied["results"] = []
            return String(decoding: try! JSONSerialization.data(withJSONObject: emptied), as: UTF8.self)
        }
        try await expectRefused(["compare", "--baseline", empty] + Self.quick, mentioning: "no results", notMentioning: "repeat(s)")
        let twice = try variant("twice.json") { "{ \"schemaVersion\" : 1," + $0.drop { $0 != "{" }.dropFirst() }
        try await expectRefused(["compare", "--baseline", twice] + Self.quick, mentioning: "schemaVersion")
    }
}
