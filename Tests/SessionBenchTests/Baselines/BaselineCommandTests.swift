import Foundation
import SessionBench
import Testing

/// `compare --save-baseline` / `--baseline` as a user runs them: the saved file, the comparison,
/// exit status 3 on a regression, and a one-line refusal (exit 2) when the runs differ.
@Suite("Baselines on the command line", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)))
struct BaselineCommandTests {
    let cli = CommandLineTests()
    static let quick = [
        "compare", "--stores", "mutex", "--scenario", "steady-reads", "--duration", "30ms", "--tasks", "2", "--quiet",
    ]

    /// A baseline file of 5 repeats, saved once for the suite's tests.
    func savedBaseline(in directory: URL) async throws -> URL {
        let file = directory.appendingPathComponent("base.json")
        let run = try await cli.run(Self.quick + ["--repeats", "5", "--save-baseline", file.path])
        #expect(run.status == 0, "\(run.stderr)")
        return file
    }

    /// `file` rewritten by `change` (its JSON as a dictionary), to `name` beside it.
    func doctored(_ file: URL, _ name: String, _ change: (inout [String: Any]) -> Void) throws -> URL {
        var json = try #require(JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
        change(&json)
        let target = file.deletingLastPathComponent().appendingPathComponent(name)
        try JSONSerialization.data(withJSONObject: json).write(to: target)
        return target
    }

    @Test("a saved baseline holds every repeat; comparing with it tests every figure and says how")
    func saveAndCompare() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try await savedBaseline(in: directory)
        let saved = try JSONDecoder().decode(ResultsReport.self, from: Data(contentsOf: file))
        #expect(saved.results.count == 5)
        #expect(Set(saved.results.compactMap(\.repeatIndex)) == [0, 1, 2, 3, 4])
        #expect(saved.metadata.repeats == 5)
        #expect(saved.results.allSatisfy { $0.setup?["tasks"] == "2" && $0.setup?["duration"] == "0.03s" })

        // A threshold no change can pass makes the outcome certain on a busy machine.
        let output = directory.appendingPathComponent("now.json")
        let run = try await cli.run(
            Self.quick + ["--repeats", "5", "--baseline", file.path, "--noise-threshold", "1000", "--output", output.path])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("against baseline"), "\(run.stdout)")
        #expect(run.stdout.contains("Mann–Whitney U, two-sided"))
        let report = try JSONDecoder().decode(ResultsReport.self, from: Data(contentsOf: output))
        let comparison = try #require(report.comparison)
        #expect(Set(comparison.changes.map(\.metric)).isSuperset(of: ["read p50", "read p99", "calls/s"]))
        #expect(comparison.changes.allSatisfy { $0.baselineRepeats == 5 && $0.currentRepeats == 5 })
        #expect(comparison.regressions.isEmpty)
    }

    @Test("a figure far worse than the baseline's in every repeat exits 3 and is named")
    func regressionExitsThree() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try await savedBaseline(in: directory)
        // The baseline as if every read had taken 1 ns and every run had made a thousand times
        // the calls. However busy the machine is now, every repeat is far above every one of the
        // baseline's, and by more than the spread of this run's repeats: the verdict is certain,
        // and what this test checks is what the command does with it.
        let faster = try doctored(file, "faster.json") { json in
            guard var results = json["results"] as? [[String: Any]] else { return }
            for index in results.indices {
                var latencies = results[index]["latencies"] as? [[String: Any]] ?? []
                for position in latencies.indices {
                    for key in ["p50", "p90", "p99", "p999", "max"] where latencies[position][key] is Int {
                        latencies[position][key] = 1
                    }
                }
                results[index]["latencies"] = latencies
                if let operations = results[index]["operations"] as? Int { results[index]["operations"] = operations * 1_000 }
            }
            json["results"] = results
        }
        let run = try await cli.run(Self.quick + ["--repeats", "5", "--baseline", faster.path])
        #expect(run.status == 3, "\(run.stdout)\(run.stderr)")
        let line = run.stdout.split(separator: "\n").first { $0.contains("read p50") && $0.contains("REGRESSION") }
        #expect(line != nil, "\(run.stdout)")
        #expect(run.stdout.contains("1 regression") || run.stdout.contains("regressions"))
    }

    @Test("a baseline that cannot be compared is refused in one line before anything runs")
    func refusals() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try await savedBaseline(in: directory)
        let otherMachine = try doctored(file, "other-machine.json") { json in
            var metadata = json["metadata"] as? [String: Any] ?? [:]
            metadata["cores"] = (metadata["cores"] as? Int ?? 1) + 6
            json["metadata"] = metadata
        }
        let otherAllocator = try doctored(file, "other-allocator.json") { json in
            json["results"] = (json["results"] as? [[String: Any]] ?? []).map { result in
                var result = result
                result["allocator"] = "jemalloc"
                return result
            }
        }
        let garbage = directory.appendingPathComponent("garbage.json")
        try Data("{\"results\": 3}".utf8).write(to: garbage)
        let output = directory.appendingPathComponent("never.csv").path
        let cases: [([String], String)] = [
            (["--baseline", file.path, "--tasks", "3"], "steady-reads ran with tasks 2 in the baseline and 3 now"),
            (["--baseline", file.path, "--duration", "40ms"], "duration 0.03s in the baseline and 0.04s now"),
            (["--baseline", otherAllocator.path], "the allocator differs: jemalloc in the baseline, system now"),
            (["--baseline", otherMachine.path], "the machine differs"),
            (["--baseline", file.path, "--stores", "nslock"], "no store × scenario of this run is in the baseline"),
            (["--baseline", file.path, "--repeats", "2"], "cannot reach p ≤ 0.01"),
            (["--baseline", "no-such-baseline"], "no such baseline in .session-bench/baselines"),
            (["--baseline", garbage.path], "not a session-bench results file"),
            (["--baseline", "bad/../name"], "cannot be read"),
            (["--alpha", "0.05"], "apply to --baseline"),
            (["--baseline", file.path, "--noise-threshold", "ten"], "give a percentage"),
        ]
        for (arguments, mention) in cases {
            let run = try await cli.run(Self.quick + ["--repeats", "5", "--output", output] + arguments)
            #expect(run.status == 2, "\(arguments): \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "one line: \(run.stderr)")
            #expect(run.stderr.contains(mention), "\(arguments): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(arguments) wrote an output")
        }
    }

    @Test("a named baseline whose save fails leaves no folder made for it; one that was there stays")
    func failedSaveLeavesNoFolder() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let inFolder = ["/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", directory.path]
        let saving = Self.quick + ["--repeats", "1", "--save-baseline", "main"]
        // The save fails with another output: nothing is left, not even the folders.
        let failed = try await ToolProcess.run(saving + ["--output", "/dev/full"], launcher: inFolder)
        #expect(failed.status == 2, "\(failed.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "a folder was left behind")
        // With .session-bench there already, only what the save made goes.
        let parent = directory.appendingPathComponent(".session-bench")
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: false)
        let full = try await ToolProcess.run(saving, launcher: inFolder, stdout: .path("/dev/full"))
        #expect(full.status == 2, "\(full.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty, "baselines/ was left behind")
    }

    @Test("a named baseline lives in .session-bench/baselines of the folder compare runs in")
    func namedBaseline() async throws {
        let directory = try cli.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let inFolder = ["/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", directory.path]
        let save = try await ToolProcess.run(
            Self.quick + ["--repeats", "5", "--save-baseline", "main"], launcher: inFolder)
        #expect(save.status == 0, "\(save.stderr)")
        let file = directory.appendingPathComponent(".session-bench/baselines/main.json")
        #expect(FileManager.default.fileExists(atPath: file.path))
        let compare = try await ToolProcess.run(
            Self.quick + ["--repeats", "5", "--baseline", "main", "--noise-threshold", "1000"], launcher: inFolder)
        #expect(compare.status == 0, "\(compare.stderr)")
        #expect(compare.stdout.contains("against baseline 'main'"))
        let missing = try await ToolProcess.run(Self.quick + ["--baseline", "nope"], launcher: inFolder)
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("(saved: main)"), "\(missing.stderr)")
    }
}
