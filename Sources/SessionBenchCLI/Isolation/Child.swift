import Foundation
import SessionBench
import Synchronization

/// A child process started with `posix_spawn`: its standard input, output and error are
/// pipes, and it is reaped with `waitpid` by this type alone. It gets a `Lifeline` on
/// descriptor 3 and is killed if this process is stopped by a signal (`ProcessGuard`).
///
/// It leads a process group of its own: a terminal's Ctrl-C (SIGINT to the foreground group)
/// reaches this process alone, which kills its children itself once it knows it is stopped. A
/// child that the terminal's signal reached too could die first, and its death be read as its
/// store's crash. Its end, seen while this process is being stopped, is not reported at all
/// (``ProcessGuard/waitIfStopping()``).
final class Child: Sendable {
    let pid: pid_t
    private let input: Int32
    private let output: Int32
    private let errors: Int32
    /// The write end of the child's lifeline, held open until the child is reaped.
    private let lifeline: Int32
    /// Whether `input` is still open (it is closed once, by `send` or `closeInput`).
    private let inputOpen = Atomic<Bool>(true)

    private init(pid: pid_t, input: Int32, output: Int32, errors: Int32, lifeline: Int32) {
        self.pid = pid
        self.input = input
        self.output = output
        self.errors = errors
        self.lifeline = lifeline
    }

    struct SpawnError: Error, CustomStringConvertible {
        let description: String
    }

    static func spawn(executable: String, arguments: [String], environment: [String: String]) throws -> Child {
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        var errorsFromChild: [Int32] = [0, 0]
        var lifeline: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0, pipe(&errorsFromChild) == 0, pipe(&lifeline) == 0 else {
            throw SpawnError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        // This process's ends stay out of any later child, so each child's pipes close with
        // this process alone.
        for descriptor in [toChild[1], fromChild[0], errorsFromChild[0], lifeline[1]] {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errorsFromChild[1], 2)
        posix_spawn_file_actions_adddup2(&actions, lifeline[0], Lifeline.descriptor)
        for descriptor in [toChild[0], fromChild[1], errorsFromChild[1], lifeline[0]]
        where descriptor > Lifeline.descriptor {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        // Signals this process ignores (see `ProcessGuard`) get their defaults back in the child.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in ProcessGuard.terminating + [SIGPIPE, SIGXFSZ] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var environment = environment
        environment[Lifeline.environmentKey] = String(Lifeline.descriptor)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // A stopped process starts nothing: its handler may already have killed the children it knew.
        ProcessGuard.waitIfStopping()
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        close(toChild[0])
        close(fromChild[1])
        close(errorsFromChild[1])
        close(lifeline[0])
        guard status == 0 else {
            close(toChild[1])
            close(fromChild[0])
            close(errorsFromChild[0])
            close(lifeline[1])
            throw SpawnError(description: "posix_spawn \(executable): \(String(cString: strerror(status)))")
        }
        ProcessGuard.adopt(child: pid)
        return Child(
            pid: pid, input: toChild[1], output: fromChild[0], errors: errorsFromChild[0], lifeline: lifeline[1])
    }

    /// Writes `data` to the child's standard input and closes it.
    func send(_ data: Data) {
        write(data)
        closeInput()
    }

    /// Writes `data` to the child's standard input, which stays open.
    func write(_ data: Data) {
        guard inputOpen.load(ordering: .acquiring) else { return }
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(input, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { break }
                offset += written
            }
        }
    }

    /// Closes the child's standard input (once).
    func closeInput() {
        if inputOpen.exchange(false, ordering: .acquiringAndReleasing) { close(input) }
    }

    /// Sends SIGKILL without waiting; `poll()` reaps the child.
    func signalKill() {
        Foundation.kill(pid, SIGKILL)
    }

    /// Calls `line` for each line the child writes, until it closes its output.
    func readLines(_ line: (String) -> Void) { Self.readLines(from: output, line) }

    /// Calls `line` for each line the child writes to its standard error, until it closes it.
    func readErrorLines(_ line: (String) -> Void) { Self.readLines(from: errors, line) }

    private static func readLines(from descriptor: Int32, _ line: (String) -> Void) {
        PipeLines.forEach(in: descriptor, line)
        close(descriptor)
    }

    /// The child's exit, if it has exited (reaping it); `nil` while it runs.
    func poll() -> ProcessEnd? {
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        guard result == pid else {
            if result < 0 { reaped() }
            return result < 0 ? .exited(-1) : nil
        }
        reaped()
        return Self.decode(status)
    }

    /// Waits for the child to end, looking every `interval`; past `deadline`, `beforeKill` runs
    /// (to take what only a living child can say) and the child is killed. Then gives `readers`,
    /// the threads reading its pipes, up to 5 s to drain what it wrote before it ended.
    func end(
        by deadline: ContinuousClock.Instant, polling interval: Duration, readers: [Thread],
        beforeKill: () -> Void = {}
    ) async -> (end: ProcessEnd?, timedOut: Bool) {
        var timedOut = false
        var end = poll()
        while end == nil {
            if ContinuousClock.now > deadline {
                timedOut = true
                beforeKill()
                end = kill()
                break
            }
            try? await Task.sleep(for: interval)
            end = poll()
        }
        let drain = ContinuousClock.now + .seconds(5)
        while !readers.allSatisfy(\.isFinished), ContinuousClock.now < drain {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return (end, timedOut)
    }

    /// Kills the child and reaps it.
    func kill() -> ProcessEnd {
        Foundation.kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        reaped()
        return Self.decode(status)
    }

    private func reaped() {
        ProcessGuard.release(child: pid)
        closeInput()
        close(lifeline)
        // Ended by this process's stop, not by its store: nothing of it is reported.
        ProcessGuard.waitIfStopping()
    }

    private static func decode(_ status: Int32) -> ProcessEnd {
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
    }
}
