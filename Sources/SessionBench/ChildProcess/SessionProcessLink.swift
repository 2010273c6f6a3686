import Foundation
import SessionContract
import SessionMeasurement
import SessionSync
import Synchronization

/// Starts the session processes of a `crash-restart` run. The command line provides one (it
/// starts its own executable); without one, such scenarios cannot run and say so.
public protocol SessionProcessLauncher: Sendable {
    /// A new session process, waiting for its plan on standard input.
    func launch() throws -> SessionProcessLink
}

/// How a process ended.
public enum ProcessEnd: Sendable, Hashable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    public var description: String {
        switch self {
        case .exited(let status): "exited with status \(status)"
        case .signaled(let signal): "killed by signal \(signal)"
        }
    }

    /// The signal that stopped the process, by name, when one that asks a process to stop (Ctrl-C,
    /// `kill`, a closed terminal: SIGINT, SIGTERM, SIGHUP) ended it; `nil` for any other end. A
    /// process ended so was interrupted by someone, never crashed by its store.
    public var interruption: String? {
        switch self {
        case .signaled(SIGINT): "SIGINT"
        case .signaled(SIGTERM): "SIGTERM"
        case .signaled(SIGHUP): "SIGHUP"
        default: nil
        }
    }

    /// A run's failure when `process` ended by ``interruption``.
    public static func interrupted(_ process: String, by signal: String) -> String {
        "interrupted: \(process) was stopped by \(signal), sent to it from outside the tool (not a crash)"
    }
}

/// The driver's side of one session process: lines to its standard input, lines from its
/// standard output (delivered by the launcher's reader), a kill, and its end.
public final class SessionProcessLink: Sendable {
    /// What waiting for the next line brought.
    enum Event: Equatable {
        case line(String)
        case closed
        /// Silent for the whole wait, with the machine giving it and the driver their CPU.
        case timedOut
        /// Silent, but starved of CPU (or the driver was) every window of a long wait: the
        /// machine is too busy to tell a slow process from a stuck one.
        case crowdedOut
    }

    /// How many windows of the hang timeout one wait may take while the machine keeps the
    /// process or the driver from a CPU (``BusyOrHung/crowdedOut(process:waiter:seconds:cpus:)``).
    static let crowdedWindows = BusyOrHung.processWindows
    /// How many of those windows a peer's slow disk or starvation alone may excuse
    /// (``next(within:peers:)``): enough for an `fsync` that stalls for seconds.
    static let peerWindows = 2

    private struct Inbox {
        var lines: [String] = []
        var closed = false
        var waiter: CheckedContinuation<Event, Never>?
        var waiterID = 0
    }

    private let inbox = Mutex(Inbox())
    /// The process's id, where there is one.
    let pid: Int32?
    private let sendLine: @Sendable (String) -> Void
    private let closeInputs: @Sendable () -> Void
    private let killProcess: @Sendable () -> Void
    private let waitForEnd: @Sendable () async -> ProcessEnd
    private let errorLines: @Sendable () -> [String]

    /// - Parameters:
    ///   - pid: the process's id, for asking the kernel whether a silence was the machine's;
    ///     `nil` where there is none (a silence is then always the process's).
    ///   - send: writes one line (a newline is added) to the process's standard input.
    ///   - closeInput: closes its standard input: the process exits cleanly.
    ///   - kill: sends SIGKILL (does not wait).
    ///   - wait: waits for the process to end and reaps it.
    ///   - errors: the last lines it wrote to standard error (a crashing store's trap message).
    public init(
        pid: Int32?, send: @escaping @Sendable (String) -> Void, closeInput: @escaping @Sendable () -> Void,
        kill: @escaping @Sendable () -> Void, wait: @escaping @Sendable () async -> ProcessEnd,
        errors: @escaping @Sendable () -> [String]
    ) {
        self.pid = pid
        sendLine = send
        closeInputs = closeInput
        killProcess = kill
        waitForEnd = wait
        errorLines = errors
    }

    /// For the launcher's reader: a line the process wrote.
    public func deliver(_ line: String) {
        let waiter = inbox.withLock(visibleTo: self) { inbox in
            if let waiter = inbox.waiter {
                inbox.waiter = nil
                return Optional(waiter)
            }
            inbox.lines.append(line)
            return nil
        }
        waiter?.resume(returning: .line(line))
    }

    /// For the launcher's reader: the process closed its standard output.
    public func finish() {
        let waiter = inbox.withLock(visibleTo: self) { inbox in
            inbox.closed = true
            defer { inbox.waiter = nil }
            return inbox.waiter
        }
        waiter?.resume(returning: .closed)
    }

    func send(_ line: SessionLine) { sendLine(line.encoded) }
    func closeInput() { closeInputs() }
    func kill() { killProcess() }
    func wait() async -> ProcessEnd { await waitForEnd() }
    var errors: [String] { errorLines() }

    /// How long a wait goes before it asks the kernel whether the machine crowds the processes out.
    static let unwatchedWait: Duration = .milliseconds(50)

    /// The run's failure when a wait on `process` gave up with `.crowdedOut`.
    static func crowdedOut(_ process: String) -> String {
        "\(process) was kept from a CPU or the disk, or the driver from a CPU, for \(crowdedWindows) hang timeouts in a row: "
            + "the machine is too busy to tell a slow store from a stuck one (run on a quieter machine, or raise --hang-timeout)"
    }

    /// The next line, waiting `timeout` — longer while the machine starves the process or this
    /// one of CPU, up to ``crowdedWindows`` windows, when it gives up with `.crowdedOut`.
    ///
    /// `peers` are the processes that share a storage with this one: its callers may wait on a
    /// lock one of them holds, so a silence is also the machine's when a peer was blocked on the
    /// disk or starved, or when the machine's tasks waited for the disk a fifth of the window (an
    /// `fsync` that stalls the holder of the lock stalls every waiter on it) — for
    /// ``peerWindows`` more windows at most.
    func next(within timeout: Duration, peers: [SessionProcessLink] = []) async -> Event {
        let watched = peers.compactMap(\.pid)
        return await next(
            within: timeout, cpus: CPUPlacement.allowed.count,
            peers: {
                watched.isEmpty
                    ? PeerCounts()
                    : PeerCounts(
                        counts: watched.map { CPUTimes.process($0) },
                        ioMicroseconds: MachinePressure.total(of: "/proc/pressure/io"))
            }
        ) { [pid] in
            (pid.flatMap { CPUTimes.process($0) }, CPUTimes.process(getpid()))
        }
    }

    /// What the kernel counts of a wait's peers (``next(within:peers:)``) at a window's start or end.
    struct PeerCounts {
        var counts: [CPUTimes?] = []
        /// The machine's total time with a task waiting for the disk (`/proc/pressure/io`).
        var ioMicroseconds: UInt64?

        /// Whether, from `before` to these counts over `seconds`, a peer was blocked on the disk as
        /// the window ended or starved of CPU (``BusyOrHung/starved(before:after:seconds:cpus:)``), or
        /// the machine's tasks waited for the disk a fifth of the window or more.
        func crowded(since before: PeerCounts, seconds: Double, cpus: Int) -> Bool {
            guard seconds > 0 else { return false }
            if let io = ioMicroseconds, let then = before.ioMicroseconds, 5 * Double(io &- then) / 1e6 >= seconds {
                return true
            }
            return zip(before.counts, counts).contains { then, now in
                guard let then, let now else { return false }
                return now.diskWaiting > 0 || BusyOrHung.starved(before: then, after: now, seconds: seconds, cpus: cpus)
            }
        }
    }

    /// ``next(within:)`` with `sample` saying what the kernel counts of the process and of this
    /// one (the waiter) at each window's start and end.
    ///
    /// Most lines come at once or within milliseconds: the first window's first part (a quarter of
    /// it, at most ``unwatchedWait``) waits without asking the kernel anything, so a protocol line
    /// costs no scan of the processes' threads; only a wait that lasts past it is watched.
    func next(
        within timeout: Duration, cpus: Int, peers: () -> PeerCounts = { PeerCounts() },
        sample: () -> (process: CPUTimes?, waiter: CPUTimes?)
    ) async -> Event {
        let unwatched = min(Self.unwatchedWait, timeout / 4)
        let first = await nextLine(within: unwatched)
        guard first == .timedOut else { return first }
        var peerWindows = 0
        for window in 0..<Self.crowdedWindows {
            let started = ContinuousClock.now
            let before = sample()
            let peersBefore = peers()
            let event = await nextLine(within: window == 0 ? timeout - unwatched : timeout)
            guard event == .timedOut else { return event }
            let after = sample()
            let seconds = (ContinuousClock.now - started).secondsValue
            let crowded = BusyOrHung.crowdedOut(
                process: before.process.flatMap { then in after.process.map { (then, $0) } },
                waiter: before.waiter.flatMap { then in after.waiter.map { (then, $0) } },
                seconds: seconds, cpus: cpus)
            if crowded { continue }
            // A peer's slow disk or starvation excuses a few windows, not as many: a store can keep
            // the disk busy itself.
            guard peerWindows < Self.peerWindows, peers().crowded(since: peersBefore, seconds: seconds, cpus: cpus)
            else { return .timedOut }
            peerWindows += 1
        }
        return .crowdedOut
    }

    /// The next line, waiting at most `timeout`.
    private func nextLine(within timeout: Duration) async -> Event {
        await withCheckedContinuation { (waiter: CheckedContinuation<Event, Never>) in
            let (ready, id) = inbox.withLock(visibleTo: self) { inbox -> (Event?, Int) in
                if !inbox.lines.isEmpty { return (.line(inbox.lines.removeFirst()), 0) }
                if inbox.closed { return (.closed, 0) }
                inbox.waiterID += 1
                inbox.waiter = waiter
                return (nil, inbox.waiterID)
            }
            if let ready {
                waiter.resume(returning: ready)
                return
            }
            Task {
                try? await Task.sleep(for: timeout)
                let expired = inbox.withLock(visibleTo: self) { inbox -> CheckedContinuation<Event, Never>? in
                    guard inbox.waiterID == id, let waiter = inbox.waiter else { return nil }
                    inbox.waiter = nil
                    return waiter
                }
                expired?.resume(returning: .timedOut)
            }
        }
    }
}
