import Foundation
import SessionBench
import Synchronization

/// What must not outlive this process: its measuring children and its temporary files.
///
/// On SIGTERM, SIGINT or SIGHUP the children are killed and the temporary files removed
/// before the process ends with that signal. Should the process die some other way (a
/// SIGKILL, a crash), each child notices on its own: it holds the read end of a pipe whose
/// only writer is this process, and ends when that pipe closes (see `Lifeline`).
///
/// A stopped run is interrupted, never judged: each child leads a process group of its own
/// (`Child`), so Ctrl-C at a terminal reaches this process alone and no child can die of it
/// before this process knows it is being stopped; and once it knows, a child's end is not
/// reported (``waitIfStopping()``) and the process ends with the signal, not an exit status.
enum ProcessGuard {
    private static let state = Mutex<(children: Set<pid_t>, temporaries: Set<String>)>(([], []))
    private static let sources = Mutex<[DispatchSourceSignal]>([])
    /// What the first terminating signal does instead of ending the process (`serve` stops and
    /// reports); a second signal ends it as usual.
    private static let stopHandler = Mutex<(@Sendable () -> Void)?>(nil)

    /// Makes the next SIGTERM, SIGINT or SIGHUP call `handler` instead of ending the process.
    static func onStop(_ handler: @escaping @Sendable () -> Void) { stopHandler.withLock { $0 = handler } }

    /// The signals that end a run early, and whose default the children get back.
    static let terminating: [Int32] = [SIGTERM, SIGINT, SIGHUP]

    /// The terminating signal stopping this process, set before any child is killed; 0 until then.
    private static let stopping = Atomic<Int32>(0)

    /// Whether a terminating signal is stopping this process.
    static var isStopping: Bool { stopping.load(ordering: .acquiring) != 0 }

    /// Returns at once, unless a terminating signal is stopping this process: then it waits for the
    /// end the signal brings. A child that ends then was killed by the stop (or ended with it), so
    /// its end says nothing of its store; and a run that finishes then ends as stopped, with the
    /// signal, not with an exit status that would say how its stores did.
    static func waitIfStopping() {
        guard isStopping else { return }
        while true { sleep(60) }
    }

    static func install() {
        // A closed pipe or a file-size limit becomes a write error the tool reports, not a
        // silent death by signal.
        signal(SIGPIPE, SIG_IGN)
        signal(SIGXFSZ, SIG_IGN)
        sources.withLock { sources in
            guard sources.isEmpty else { return }
            atexit { ProcessGuard.waitIfStopping() }
            for number in terminating {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global(qos: .userInteractive))
                source.setEventHandler {
                    if let handler = stopHandler.withLock({ handler in defer { handler = nil }; return handler }) {
                        handler()
                    } else {
                        terminate(number)
                    }
                }
                source.resume()
                sources.append(source)
            }
        }
    }

    /// Says the run is interrupted, kills the children, removes the temporary files and ends the
    /// process with `number`.
    static func terminate(_ number: Int32) -> Never {
        // Before any child is killed: whoever sees one end then knows why.
        if stopping.compareExchange(expected: 0, desired: number, ordering: .acquiringAndReleasing).exchanged,
            ProcessInfo.processInfo.environment[Lifeline.environmentKey] == nil
        {
            let name = ProcessEnd.signaled(number).interruption ?? "signal \(number)"
            let line = "session-bench: interrupted by \(name): stopping the measuring processes and removing temporary files\n"
            // Standard error may be closed or full: the stop goes on regardless.
            _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        }
        let (children, temporaries) = state.withLock { ($0.children, $0.temporaries) }
        for pid in children { kill(pid, SIGKILL) }
        // Temporary files, and the storage folders of measuring children (`--scenario
        // crash-restart` keeps simulated sessions there, tokens in clear on the plain backends).
        // A session process of a killed child may still write into its folder until it sees its
        // parent gone, and a file made during the removal leaves the folder behind: try again,
        // for up to half a second.
        for path in temporaries where unlink(path) != 0 { StorageRoots.retire(path) }
        signal(number, SIG_DFL)
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, number)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        raise(number)
        _exit(128 + number)
    }

    /// The parent is gone (the lifeline closed): kills this process's own children, removes its
    /// storage root (a measuring process's, made by the parent that can no longer remove it) and
    /// ends the process.
    static func parentGone() -> Never {
        let children = state.withLock { $0.children }
        for pid in children { kill(pid, SIGKILL) }
        for pid in children {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        }
        if let root = ProcessInfo.processInfo.environment[StorageFolders.rootVariable] { StorageRoots.retire(root) }
        _exit(1)
    }

    static func adopt(child pid: pid_t) { _ = state.withLock { $0.children.insert(pid) } }
    static func release(child pid: pid_t) { _ = state.withLock { $0.children.remove(pid) } }
    /// `path` (a file, or a folder and all it holds) is removed if the process is stopped.
    static func track(temporary path: String) { _ = state.withLock { $0.temporaries.insert(path) } }
    static func untrack(temporary path: String) { _ = state.withLock { $0.temporaries.remove(path) } }
}

/// The measuring child's tie to its parent: descriptor `Lifeline.descriptor` is the read
/// end of a pipe only the parent writes to. When the parent ends, however it ends, the
/// pipe closes and the child ends too, instead of running its scenarios to the end for no one.
enum Lifeline {
    static let descriptor: Int32 = 3
    static let environmentKey = "SESSION_BENCH_LIFELINE"

    /// In the child: ends the process as soon as the parent is gone.
    static func watch() {
        guard ProcessInfo.processInfo.environment[environmentKey] == String(descriptor) else { return }
        let thread = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(descriptor, &byte, 1)
                if count < 0, errno == EINTR { continue }
                if count <= 0 { ProcessGuard.parentGone() }
            }
        }
        thread.stackSize = 64 * 1024
        thread.start()
    }
}
