import Foundation
import SessionBench
import Synchronization

/// Starts session processes (`session-bench session-process`) for the scenarios that kill and
/// restart them: this same executable, its pipes read on threads of their own, reaped here.
struct ChildSessionLauncher: SessionProcessLauncher {
    func launch() throws -> SessionProcessLink {
        let child = try Child.spawn(
            executable: IsolatedRun.executablePath, arguments: ["session-process"],
            environment: ProcessInfo.processInfo.environment)
        let errors = Mutex<[String]>([])
        let link = SessionProcessLink(
            pid: child.pid, send: { child.write(Data(($0 + "\n").utf8)) },
            closeInput: { child.closeInput() },
            kill: { child.signalKill() },
            wait: {
                while true {
                    if let end = child.poll() { return end }
                    try? await Task.sleep(for: .milliseconds(2))
                }
            },
            errors: { errors.withLock { $0 } })
        let reader = Thread {
            child.readLines { link.deliver($0) }
            link.finish()
        }
        reader.stackSize = 256 * 1024
        reader.start()
        let errorReader = Thread {
            child.readErrorLines { line in
                errors.withLock { lines in
                    lines.append(line)
                    if lines.count > 50 { lines.removeFirst(lines.count - 50) }
                }
            }
        }
        errorReader.stackSize = 256 * 1024
        errorReader.start()
        return link
    }
}
