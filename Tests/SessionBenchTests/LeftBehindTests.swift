import CDispatch
import Foundation
import Testing
import TokenServer

/// Nothing of a session outlives the run that made it: not when the tool is killed (SIGKILL,
/// which it cannot see, or SIGINT in process), and not when its measuring processes die.
@Suite("Nothing left behind", .tags(.slow), .skippedInQuickRun, .serialized, .timeLimit(.minutes(30)),
    .disabled(if: TestEnvironment.isThreadSanitized, Comment(rawValue: TestEnvironment.processSuiteSkipped)))
struct LeftBehindTests {
    /// Every regular file under `folder`, and whether any holds something a session keeps: a
    /// token (`eyJ…`, `rt.…`), a user id, or a key beside the data it opens.
    static func secrets(under folder: String) -> (files: [String], secrets: [String]) {
        var files: [String] = []
        var secrets: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: folder)
        while let name = enumerator?.nextObject() as? String {
            let path = folder + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            files.append(name)
            let text = String(decoding: (FileManager.default.contents(atPath: path) ?? Data()), as: UTF8.self)
            if text.contains("eyJ") || text.contains("rt.") || text.contains("@example.test") || name.hasSuffix(".key") {
                secrets.append(name)
            }
        }
        return (files, secrets)
    }

    /// A kind of moment to stop a run at, how, and the files of the run that say it has come.
    struct Moment {
        let name: String
        let scenario: String
        /// SIGINT to a run in process (it must clean up itself), or SIGKILL to an isolated one (its
        /// measuring process, or the next run, must).
        let inProcess: Bool
        /// Whether the paths under the run's storage root (the root itself: "") show the moment.
        let reached: @Sendable ([String]) -> Bool
    }

    /// Each kind of moment, each way where the way makes a difference: in process one handler
    /// removes the root whatever the moment, so its root-just-made stop is the same as the others;
    /// isolated, a key beside its data is removed as a plaintext file is.
    static let moments: [Moment] = [
        Moment(name: "its storage root just made", scenario: "crash-restart:json-file", inProcess: false) { !$0.isEmpty },
        Moment(name: "a session process saving, tokens in clear", scenario: "crash-restart:json-file", inProcess: false) {
            $0.contains { $0.hasSuffix("/session.json") }
        },
        Moment(name: "a session process saving, tokens in clear", scenario: "crash-restart:json-file", inProcess: true) {
            $0.contains { $0.hasSuffix("/session.json") }
        },
        Moment(name: "a key beside the data it opens", scenario: sealed, inProcess: true) {
            $0.contains { $0.hasSuffix(sealed.hasSuffix("encrypted-file") ? "/session.key" : "/session.json") }
        },
        Moment(name: "two processes sharing one session file", scenario: "shared-storage:json-file", inProcess: false) {
            $0.contains { $0.hasSuffix("/session.json") }
        },
        Moment(name: "two processes sharing one session file", scenario: "shared-storage:json-file", inProcess: true) {
            $0.contains { $0.hasSuffix("/session.json") }
        },
    ]

    /// The paths under the storage root of the run `pid` started (named for it), relative to
    /// TMPDIR's `folder`: the root itself as "", then what is in it as "/…".
    static func paths(of pid: pid_t, under folder: String) -> [String] {
        let roots = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [])
            .filter { $0.hasPrefix("session-bench-run-p\(pid)-") }
        var found: [String] = []
        for root in roots {
            found.append("")
            let enumerator = FileManager.default.enumerator(atPath: folder + "/" + root)
            while let name = enumerator?.nextObject() as? String { found.append("/" + name) }
        }
        return found
    }

    /// The sealed backend's scenario where the build has it (the Storage trait), else the plain one.
    static var sealed: String {
        #if Storage
            "crash-restart:encrypted-file"
        #else
            "crash-restart:json-file"
        #endif
    }

    /// Stops at moments drawn at random (seeded; the seed is in every failure): a scenario, a way,
    /// and a time after the start, 20 to 900 ms, across starting up, running and cleaning up.
    static func randomMoments(_ count: Int, seed: UInt64) -> [(moment: Moment, after: Duration)] {
        var random = SeededRandom(seed: seed)
        let scenarios = ["crash-restart:json-file", sealed, "shared-storage:json-file"]
        return (0..<count).map { index in
            let scenario = scenarios.randomElement(using: &random)!
            let inProcess = Bool.random(using: &random)
            let after = Duration.milliseconds(Int.random(in: 20...900, using: &random))
            return (Moment(name: "random stop \(index + 1) of seed \(seed), \(scenario) after \(after)", scenario: scenario, inProcess: inProcess) { _ in false }, after)
        }
    }

    @Test("killed at each kind of moment of the storage scenarios and at 20 random ones (SIGKILL isolated, SIGINT in process), then one more run: no token under TMPDIR")
    func killedDuringStorageScenarios() async throws {
        let temporary = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temporary) }
        let environment = ["TMPDIR": temporary.path]
        let seed = UInt64.random(in: 1...999_999)
        let stops = Self.moments.map { (moment: $0, after: Duration?.none) }
            + Self.randomMoments(20, seed: seed).map { (moment: $0.moment, after: Optional($0.after)) }
        for (moment, after) in stops {
            let inProcess = moment.inProcess
            let context = "\(moment.name), " + (inProcess ? "SIGINT in process" : "SIGKILL isolated")
            // A moment named by its files is caught by watching for them; on a busy machine this
            // process can look too late, after the run has ended, so such a run is started again
            // (up to five times) until the moment is caught. A drawn time is one run, stopped then.
            var attempts = 0
            var pid: pid_t = 0
            var status: Int32 = 0
            var ended = false
            repeat {
                attempts += 1
                let (spawned, logs) = try ToolProcess.spawn(
                    ["compare", "--stores", "mutex", "--scenario", moment.scenario, "--quiet"]
                        + (inProcess ? ["--in-process"] : []),
                    environment: environment)
                try? FileManager.default.removeItem(at: logs)
                pid = spawned
                // The moment is when its files appear, or the drawn time has passed (a run that ends
                // first is stopped after its end).
                ended = false
                let deadline = ContinuousClock.now + (after ?? .seconds(60))
                while after != nil || !moment.reached(Self.paths(of: pid, under: temporary.path)),
                    ContinuousClock.now < deadline
                {
                    if waitpid(pid, &status, WNOHANG) != 0 {
                        ended = true
                        break
                    }
                    try await Task.sleep(for: .milliseconds(1))
                }
            } while after == nil && ended && attempts < 5
            if after == nil { #expect(!ended, "\(context): each of \(attempts) runs ended before the moment came") }
            if !ended {
                kill(pid, inProcess ? SIGINT : SIGKILL)
                while waitpid(pid, &status, WNOHANG) == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            if inProcess {
                // Stopped by a signal it handles: it removes what it made before it ends. Only its
                // own root is judged here: the measuring process of an isolated run killed before may
                // still be cleaning up its own on a busy machine (the end of this test waits for those).
                let own = Self.secrets(under: temporary.path).secrets.filter { $0.hasPrefix("session-bench-run-p\(pid)-") }
                #expect(own.isEmpty, "\(context): \(own)")
            }
        }
        let next = try await ToolProcess.run(
            ["compare", "--stores", "mutex", "--scenario", "crash-restart:json-file", "--rounds", "1"], environment: environment)
        #expect(next.status == 0, "\(next.stderr)")
        // Measuring processes whose parent was killed end, and clean up, on their own: give them
        // the moment it takes.
        let deadline = Date().addingTimeInterval(10)
        while !Self.secrets(under: temporary.path).files.isEmpty, Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let left = Self.secrets(under: temporary.path)
        #expect(left.secrets.isEmpty, "session files left with secrets: \(left.secrets)")
        #expect(left.files.isEmpty, "files left under TMPDIR: \(left.files)")
    }

    /// The start time of `pid` in clock ticks since boot (`/proc/PID/stat`, field 22).
    static func startTicks(_ pid: pid_t) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
            return nil
        }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    @Test("a run removes the storage folders of runs that died without cleaning up, saying so, and leaves a live run's alone")
    func staleFoldersRemoved() async throws {
        let temporary = try ToolProcess.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: temporary) }
        // A run that is gone: a process that has exited and been reaped.
        let (dead, logs) = try ToolProcess.spawn(["--version"])
        try? FileManager.default.removeItem(at: logs)
        var status: Int32 = 0
        waitpid(dead, &status, 0)
        let live = getpid()
        let liveTicks = try #require(Self.startTicks(live))
        for (owner, ticks) in [(dead, UInt64(12_345)), (live, liveTicks), (live, liveTicks + 1)] {
            let session = temporary.appendingPathComponent("session-bench-run-p\(owner)-t\(ticks)-Ab12Cd/session-bench-storage-Ef34Gh")
            try FileManager.default.createDirectory(at: session, withIntermediateDirectories: true)
            try Data(#"{"refresh":"rt.left-behind","subject":"someone@example.test"}"#.utf8).write(to: session.appendingPathComponent("session.json"))
        }
        let next = try await ToolProcess.run(
            ["compare", "--stores", "mutex", "--scenario", "crash-restart:json-file", "--rounds", "1", "--quiet"],
            environment: ["TMPDIR": temporary.path])
        #expect(next.status == 0, "\(next.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: temporary.path)
        #expect(left == ["session-bench-run-p\(live)-t\(liveTicks)-Ab12Cd"], "only the live run's folder stays: \(left)")
        #expect(next.stderr.contains("removed 2 storage folder(s) of runs that ended without removing them"), "\(next.stderr)")
    }
}
