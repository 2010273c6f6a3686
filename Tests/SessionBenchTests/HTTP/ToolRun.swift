#if HTTP
import Foundation


/// The `session-bench` executable in a child process, with its output in files, for a test
/// that talks to it while it runs (`serve`).
final class ToolRun {
    let pid: pid_t
    let directory: URL
    private var reaped: Int32?

    init(_ arguments: [String], launcher: [String] = [], stdout: ToolProcess.StandardOutput = .file) throws {
        (pid, directory) = try ToolProcess.spawn(arguments, launcher: launcher, stdout: stdout)
    }

    deinit {
        if reaped == nil {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    var stdout: String { (try? String(contentsOf: directory.appendingPathComponent("stdout"), encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: directory.appendingPathComponent("stderr"), encoding: .utf8)) ?? "" }

    /// The port `serve` printed on its first line, waiting up to `timeout` seconds for it.
    func servedPort(timeout: Double = 60) async -> Int? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = stdout.split(separator: "\n").first, line.hasPrefix("listening on http://127.0.0.1:"),
                let port = Int(line.split(separator: ":").last ?? "")
            {
                return port
            }
            if reap() != nil { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// The exit status (128 + signal if a signal ended it), or `nil` if still running after
    /// `seconds`; suspends between looks, holding no thread.
    func exitStatus(waitingUpTo seconds: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let status = reap() { return status }
            guard Date() < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// The exit status if it has ended.
    private func reap() -> Int32? {
        if let reaped { return reaped }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let signaled = status & 0x7f != 0
        reaped = signaled ? 128 + (status & 0x7f) : (status >> 8) & 0xff
        return reaped
    }

    /// Runs to the end, suspending while it runs; kills it after `timeout` seconds.
    static func finish(_ arguments: [String], timeout: Double = 300) async throws -> (status: Int32, stdout: String, stderr: String) {
        let run = try ToolRun(arguments)
        let deadline = Date().addingTimeInterval(timeout)
        guard let status = await run.exitStatus(waitingUpTo: deadline.timeIntervalSinceNow) else {
            kill(run.pid, SIGKILL)
            return (-1, run.stdout, run.stderr + "\n(killed after \(timeout) s)")
        }
        return (status, run.stdout, run.stderr)
    }
}
#endif
