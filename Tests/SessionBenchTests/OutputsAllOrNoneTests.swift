import CDispatch
import Foundation
import Testing
import TokenServer

/// Every command's outputs — files, a saved baseline, appended reports and standard output — are
/// written all or none: one that fails leaves every other as it was, and the run ends with exit 2
/// and one line. No output may overwrite another, or the baseline a run reads.
@Suite("Outputs all or none", .tags(.slow), .skippedInQuickRun, .timeLimit(.minutes(30)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
struct OutputsAllOrNoneTests {
    static let quick = ["--stores", "mutex", "--scenario", "expiry-storm", "--rounds", "2", "--tasks", "4", "--quiet"]

    /// An output a command line can name, and the file it writes in the test's folder.
    enum Output: CaseIterable {
        case csv, json, baseline, append, standardOutput

        func arguments(in folder: URL) -> [String] {
            switch self {
            case .csv: ["--output", folder.appendingPathComponent("a.csv").path]
            case .json: ["--output", "json:" + folder.appendingPathComponent("b.out").path]
            case .baseline: ["--save-baseline", folder.appendingPathComponent("saved.json").path]
            case .append: ["--append-output", folder.appendingPathComponent("summary.md").path]
            case .standardOutput: ["--output", "-"]
            }
        }
    }

    /// What makes one output fail.
    enum Failure: CaseIterable {
        /// `--output /dev/full`, a device that takes no byte.
        case device
        /// `--append-output /dev/full`.
        case appendToDevice
        /// Standard output is /dev/full.
        case standardOutput
        /// A file-size limit of 2 KiB: the table, the CSV and the Markdown fit, a JSON report does not.
        case fileSize
    }

    /// The commands with outputs, each as quick as it runs, and the outputs it takes.
    static let commands: [(arguments: [String], outputs: [Output])] = [
        (["compare"] + quick, Output.allCases),
        (["stress", "--iterations", "1", "--seed", "1"] + quick, [.csv, .json, .append, .standardOutput]),
        (["sweep", "--parameter", "tasks", "--values", "2", "--repeats", "1"] + quick, [.csv, .json, .append, .standardOutput]),
    ]

    /// The files a folder starts with: what must still be there, byte for byte, after a failed run.
    static let existing = ["a.csv": "old csv\n", "saved.json": "{\"old\": true}\n", "summary.md": "# old summary\n"]

    @Test("one failing output among every other, over each kind of failure and each command: exit 2, one line, every file as it was")
    func oneFailingAmongSeveral() async throws {
        // Every kind of failure once, the commands in turn (compare, with the most outputs, twice),
        // beside every other output the command takes: each run checks that all of them were left
        // as they were. The outputs all go through one writer; what differs by command is what it
        // hands it.
        var commands: Set<String> = []
        for (index, failure) in Failure.allCases.enumerated() {
            let (command, outputs) = Self.commands[index % Self.commands.count]
            let chosen = failure == .standardOutput ? outputs.filter { $0 != .standardOutput } : outputs
            try await expectNothingWritten(command: command, outputs: chosen, failure: failure)
            commands.insert(command[0])
        }
        #expect(commands == Set(Self.commands.map { $0.arguments[0] }), "every command with outputs had a failing one")
        // check writes standard output only (its table), and the thresholds file with --update.
        try await expectCheckRefusesAFullStandardOutput()
    }

    func expectNothingWritten(command: [String], outputs: [Output], failure: Failure) async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, text) in Self.existing {
            try Data(text.utf8).write(to: folder.appendingPathComponent(name))
        }
        var arguments = command + outputs.flatMap { $0.arguments(in: folder) }
        var launcher: [String] = []
        var standardOutput = ToolProcess.StandardOutput.file
        switch failure {
        case .device: arguments += ["--output", "/dev/full"]
        case .appendToDevice: arguments += ["--append-output", "/dev/full"]
        case .standardOutput: standardOutput = .path("/dev/full")
        case .fileSize:
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit") else { return }
            launcher = ["/usr/bin/prlimit", "--fsize=2048"]
        }
        let context = "\(arguments.joined(separator: " ")) [\(failure)]"
        let run = try await ToolProcess.run(arguments, launcher: launcher, stdout: standardOutput, timeout: 60)
        #expect(!run.signaled, "\(context): ended by a signal")
        #expect(run.status == 2, "\(context): status \(run.status), \(run.stderr)")
        // One line says what failed (stress also ends with its summary of iterations and seeds).
        let errors = run.stderr.split(separator: "\n").filter { !$0.hasPrefix("stress: ") }
        #expect(errors.count == 1 && errors[0].hasPrefix("session-bench: error: "), "\(context): one line: \(run.stderr)")
        #expect(run.stdout.isEmpty, "\(context): standard output is an output too: \(run.stdout.prefix(200))")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
        #expect(left == Set(Self.existing.keys), "\(context): files made or removed: \(left.sorted())")
        for (name, text) in Self.existing {
            let now = try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            #expect(now == text, "\(context): \(name) was changed")
        }
    }

    func expectCheckRefusesAFullStandardOutput() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("limits.json")
        try Data(
            """
            { "version": 1, "run": { "stores": ["mutex"], "scenarios": ["expiry-storm"], "rounds": 2, "tasks": 4 },
              "limits": [ { "metric": "refreshes_per_expiry", "max": 1 } ] }
            """.utf8
        ).write(to: file)
        let run = try await ToolProcess.run(["check", "--thresholds", file.path, "--quiet"], stdout: .path("/dev/full"), timeout: 60)
        #expect(run.status == 2, "check > /dev/full: status \(run.status), \(run.stderr)")
        #expect(run.stderr.contains("standard output"), "\(run.stderr)")
    }

    @Test("list, --help and every dry run write standard output whole or fail: exit 2 in one line on a full device")
    func listHelpAndDryRunsToAFullStandardOutput() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let thresholds = folder.appendingPathComponent("limits.json")
        try Data(
            #"{ "version": 1, "run": { "stores": ["mutex"] }, "limits": [ { "metric": "refreshes_per_expiry", "max": 1 } ] }"#
                .utf8
        ).write(to: thresholds)
        for arguments in [
            ["list"], ["--help"], ["compare", "--dry-run"], ["stress", "--dry-run"],
            ["sweep", "--parameter", "tasks", "--values", "2", "--dry-run"],
            ["check", "--thresholds", thresholds.path, "--dry-run"],
        ] {
            let run = try await ToolProcess.run(arguments, stdout: .path("/dev/full"), timeout: 60)
            let context = arguments.joined(separator: " ")
            #expect(run.status == 2, "\(context) > /dev/full: status \(run.status), \(run.stderr)")
            #expect(
                run.stderr.split(separator: "\n").count == 1 && run.stderr.contains("cannot write to standard output"),
                "\(context): \(run.stderr)")
        }
    }

    @Test("an output that names another output's file, or the baseline read, is refused before anything runs")
    func outputsThatOverwriteEachOther() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let baseline = folder.appendingPathComponent("b.json").path
        let saved = try await ToolProcess.run(["compare", "--output", baseline] + Self.quick + ["--repeats", "5"])
        #expect(saved.status == 0, "\(saved.stderr)")
        let before = try Data(contentsOf: URL(fileURLWithPath: baseline))
        let same = folder.appendingPathComponent("same.json").path
        let cases: [[String]] = [
            ["--output", "csv:" + same, "--save-baseline", same],
            ["--output", same, "--save-baseline", folder.path + "/./same.json"],
            ["--append-output", same, "--save-baseline", same],
            ["--baseline", folder.path + "/./b.json", "--output", baseline],
            ["--baseline", baseline, "--append-output", baseline],
            ["--baseline", baseline, "--save-baseline", baseline],
        ]
        for extra in cases {
            let run = try await ToolProcess.run(["compare"] + Self.quick + extra, timeout: 60)
            let context = extra.joined(separator: " ")
            #expect(run.status == 2, "\(context): status \(run.status), \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(context): \(run.stderr)")
            #expect(run.stderr.contains("same file"), "\(context): \(run.stderr)")
            #expect(run.stdout.isEmpty, "\(context): nothing ran")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: baseline)) == before, "the baseline is as it was")
        #expect(!FileManager.default.fileExists(atPath: same))
    }

    @Test("a FIFO no process reads: a one-line error in bounded time, for --output, --append-output and serve")
    func fifoWithoutReader() async throws {
        let folder = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("results.pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // Both at once: each waits out the reader wait.
        async let output = ToolProcess.run(["compare"] + Self.quick + ["--output", "csv:" + fifo], timeout: 60)
        async let append = ToolProcess.run(["compare"] + Self.quick + ["--append-output", fifo], timeout: 60)
        let runs = [(["--output", "csv:" + fifo], try await output), (["--append-output", fifo], try await append)]
        for (extra, run) in runs {
            let context = extra.joined(separator: " ")
            #expect(run.status == 2, "\(context): status \(run.status), \(run.stderr)")
            #expect(run.stderr.split(separator: "\n").count == 1, "\(context): \(run.stderr)")
            #expect(run.stderr.contains("no process reads"), "\(context): \(run.stderr)")
            // Bounded by the tool's own reader wait, which the error states (the timeout above
            // bounds the run itself).
            #expect(run.stderr.contains("(waited 3 s)"), "\(context): \(run.stderr)")
        }
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "still a FIFO")
    }
}
