import CDispatch
import Foundation
import Testing

/// The `session-bench` executable, run as a user runs it.
enum ToolProcess {
    struct Run {
        let status: Int32
        let stdout: String
        let stderr: String
        /// Whether a signal ended it (then `status` is 128 + the signal).
        let signaled: Bool
        let seconds: Double
    }

    static var executable: URL {
        // The test bundle sits in the same build folder as the executable.
        var directory = Bundle.main.bundleURL
        if directory.pathExtension == "xctest" { directory.deleteLastPathComponent() }
        return directory.appendingPathComponent("session-bench")
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("session-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Where the executable's standard output goes.
    enum StandardOutput: Sendable, CustomStringConvertible {
        /// A file `stdout` in the run's temporary directory, read back as ``Run/stdout``.
        case file
        /// This path, opened for writing (`/dev/full`).
        case path(String)
        /// No standard output at all: the descriptor is closed (`>&-`).
        case closed
        /// A pipe whose reader has gone (`| true`, once `true` has exited).
        case pipeWithoutReader

        var description: String {
            switch self {
            case .file: "a file"
            case .path(let path): "> \(path)"
            case .closed: ">&-"
            case .pipeWithoutReader: "| a pipe no one reads"
            }
        }
    }

    /// Starts the executable (or `launcher` followed by it, e.g. `prlimit --fsize=…`) with
    /// output to files in a new temporary directory (standard output as `stdout` says); returns
    /// its pid and that directory. With `ownGroup`, it leads a process group of
    /// its own, as a shell starts a job: `kill(-pid, …)` then signals that group, as Ctrl-C at a
    /// terminal does.
    static func spawn(
        _ arguments: [String], environment: [String: String] = [:], launcher: [String] = [],
        stdout: StandardOutput = .file, ownGroup: Bool = false
    ) throws -> (pid: pid_t, directory: URL) {
        let directory = try temporaryDirectory()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pipeWriter: Int32 = -1
        defer { if pipeWriter >= 0 { close(pipeWriter) } }
        switch stdout {
        case .file, .path:
            let path =
                if case .path(let path) = stdout { path } else { directory.appendingPathComponent("stdout").path }
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        case .closed:
            posix_spawn_file_actions_addclose(&actions, 1)
        case .pipeWithoutReader:
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["reason": "pipe: \(errno)"]) }
            close(ends[0])
            pipeWriter = ends[1]
            _ = fcntl(pipeWriter, F_SETFD, FD_CLOEXEC)
            posix_spawn_file_actions_adddup2(&actions, pipeWriter, 1)
        }
        posix_spawn_file_actions_addopen(
            &actions, 2, directory.appendingPathComponent("stderr").path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let words = launcher + [executable.path] + arguments
        let argv = words.map { strdup($0) } + [nil]
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, words[0], &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw CocoaError(.fileReadUnknown, userInfo: ["reason": "posix_spawn: \(spawned)"]) }
        return (pid, directory)
    }

    /// Runs the executable, reaping it with `waitpid` (polled, suspending in between) and killing
    /// it past `timeout`. Not
    /// Foundation's `Process`: under ThreadSanitizer it can miss a child's exit and wait forever.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], launcher: [String] = [],
        stdout: StandardOutput = .file,
        timeout: Double = 120
    ) async throws -> Run {
        let started = Date()
        let (pid, directory) = try spawn(arguments, environment: environment, launcher: launcher, stdout: stdout)
        let status = await reap(pid, timeout: timeout, name: "session-bench \(arguments.joined(separator: " "))")
        let signaled = status & 0x7f != 0
        let exitStatus = signaled ? 128 + (status & 0x7f) : (status >> 8) & 0xff
        let out = directory.appendingPathComponent("stdout").path
        let err = directory.appendingPathComponent("stderr").path
        defer { try? FileManager.default.removeItem(at: directory) }
        return Run(
            status: exitStatus, stdout: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "", signaled: signaled,
            seconds: Date().timeIntervalSince(started))
    }

    /// Waits for `pid` to exit, polling `waitpid` and suspending in between; kills it past `timeout`
    /// and records that `name` ran too long. Its `waitpid` status.
    static func reap(_ pid: pid_t, timeout: Double, name: String) async -> Int32 {
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(timeout)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                Issue.record("\(name) ran past \(timeout)s and was killed")
                break
            }
            // Waiting suspends: a test waiting on a process must not hold a thread of the
            // cooperative pool, which the in-process suites beside it need.
            try? await Task.sleep(for: .milliseconds(2))
        }
        return status
    }

    /// Whether descriptors `a` and `b` are the same open file. (With SwiftNIO in the build,
    /// `struct stat`'s members are Dispatch's C module's, which this file imports.)
    static func sameFile(_ a: Int32, _ b: Int32) -> Bool {
        var one = stat()
        var two = stat()
        guard fstat(a, &one) == 0, fstat(b, &two) == 0 else { return false }
        return one.st_ino == two.st_ino && one.st_dev == two.st_dev
    }

    /// The pids whose parent is `parent` (from /proc).
    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 2 && Int32(fields[1]) == parent
        }
    }

    /// The command line `pid` was started with, its words joined by spaces; empty once it is gone.
    static func commandLine(of pid: pid_t) -> String {
        let words = (FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()).split(separator: 0)
        return words.map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
    }

    /// Whether `pid` is still a live process (a zombie counts as gone).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else {
            return false
        }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }
}
