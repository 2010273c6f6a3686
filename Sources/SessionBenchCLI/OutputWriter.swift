import Foundation
import SessionBench
import SessionContract
import Synchronization

/// Writes every output or none: temporary files first, then appends (which can be cut back),
/// then direct writes (devices, FIFOs, standard output), and only then the renames. A failure
/// anywhere removes every temporary file, cuts every appended file back to its old length and
/// leaves every target as it was (a device already written cannot be taken back: devices and
/// standard output come after everything that can fail and be undone).
enum OutputWriter {
    private static let counter = Mutex(0)
    /// How long a FIFO may go without a reader when its output is due.
    static let readerWait: Duration = .seconds(3)
    /// How long a reader that has opened a FIFO, or a device, may take no byte before the write fails.
    static let stallLimit: Duration = .seconds(30)

    /// A short name beside the target (a long target name must not make it too long).
    static func temporaryPath(in directory: String) -> String {
        let serial = counter.withLock { value -> Int in
            value += 1
            return value
        }
        return URL(fileURLWithPath: directory).appendingPathComponent(".session-bench-\(getpid())-\(serial).tmp").path
    }

    /// Standard output as an output: written whole, or an error (a closed pipe, a full disk).
    static let standardOutput = OutputTarget(path: "-", kind: .standardOutput)

    /// `text` on standard output, whole, or the one-line error that says why not.
    static func show(_ text: String) throws(UsageError) {
        try write([(standardOutput, text)])
    }

    /// Writes `outputs` whole (replacing files, writing devices and standard output) and adds
    /// each of `appends` to its file, all or none.
    static func write(
        _ outputs: [(target: OutputTarget, text: String)],
        appending appends: [(target: OutputTarget, text: String)] = []
    ) throws(UsageError) {
        var staged: [(temporary: String, file: String, path: String)] = []
        var appended: [(descriptor: Int32, length: off_t, created: String?)] = []
        /// Undoes everything so far; the error that says why `path` could not be written.
        func abandon(_ path: String, _ reason: String, verb: String = "write") -> UsageError {
            for item in staged {
                unlink(item.temporary)
                ProcessGuard.untrack(temporary: item.temporary)
            }
            for item in appended {
                _ = ftruncate(item.descriptor, item.length)
                close(item.descriptor)
                if let created = item.created { unlink(created) }
            }
            appended.removeAll()
            let shown = path == "-" ? "to standard output" : "'\(Printable.name(path))'"
            return UsageError("cannot \(verb) \(shown): \(reason); no output was changed")
        }
        for (target, text) in outputs {
            guard case .replace(let file, let mode, let owner, let group) = target.kind else { continue }
            let directory = URL(fileURLWithPath: file).deletingLastPathComponent().path
            let temporary = temporaryPath(in: directory)
            ProcessGuard.track(temporary: temporary)
            staged.append((temporary, file, target.path))
            let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode ?? 0o666)
            guard descriptor >= 0 else { throw abandon(target.path, String(cString: strerror(errno))) }
            var failure = writeAll(descriptor, text)
            if failure == nil, let mode {
                // An existing file keeps its mode (open's mode passed through the umask) and,
                // where this user may set it, its owner.
                if fchmod(descriptor, mode) != 0 { failure = String(cString: strerror(errno)) }
                if let owner, let group, owner != geteuid() || group != getegid() {
                    _ = fchown(descriptor, owner, group)
                }
            }
            if failure == nil, fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
            if close(descriptor) != 0, failure == nil { failure = String(cString: strerror(errno)) }
            if let failure { throw abandon(target.path, failure) }
        }
        // Appends to regular files: each remembers its old length, to be cut back to.
        var directAppends: [(target: OutputTarget, text: String)] = []
        for (target, text) in appends {
            let file: String
            switch target.kind {
            case .replace(let path, _, _, _): file = path
            case .direct: file = target.path
            case .standardOutput: continue
            }
            let isNew = !exists(file)
            guard isNew || isRegularFile(file) else {
                directAppends.append((target, text))
                continue
            }
            let descriptor = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o666)
            guard descriptor >= 0 else {
                throw abandon(target.path, String(cString: strerror(errno)), verb: "append to")
            }
            var info = stat()
            fstat(descriptor, &info)
            appended.append((descriptor, info.st_size, isNew ? file : nil))
            var failure = writeAll(descriptor, text)
            if failure == nil, fsync(descriptor) != 0 { failure = String(cString: strerror(errno)) }
            if let failure { throw abandon(target.path, failure, verb: "append to") }
        }
        // What cannot be taken back: devices and FIFOs, then standard output.
        let direct =
            outputs.filter { $0.target.kind == .direct }.map { ($0.target, $0.text, "write") }
            + directAppends.map { ($0.target, $0.text, "append to") }
        for (target, text, verb) in direct {
            if let failure = writeDirectly(target.path, text) { throw abandon(target.path, failure, verb: verb) }
        }
        for (_, text) in outputs.filter({ $0.target.kind == .standardOutput }) {
            if let failure = writeAll(STDOUT_FILENO, text) { throw abandon("-", failure) }
        }
        for item in appended { close(item.descriptor) }
        appended.removeAll()
        for (index, item) in staged.enumerated() {
            guard rename(item.temporary, item.file) == 0 else {
                let reason = String(cString: strerror(errno))
                for rest in staged[index...] {
                    unlink(rest.temporary)
                    ProcessGuard.untrack(temporary: rest.temporary)
                }
                throw UsageError("cannot write '\(Printable.name(item.path))': \(reason)")
            }
            ProcessGuard.untrack(temporary: item.temporary)
            syncDirectory(of: item.file)
        }
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// Writes a device or a FIFO without ever blocking for good: a FIFO is waited for a reader
    /// up to ``readerWait``, and a write that makes no progress for ``stallLimit`` fails.
    static func writeDirectly(_ path: String, _ text: String) -> String? {
        let waitUntil = ContinuousClock.now + readerWait
        var descriptor: Int32
        while true {
            descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_APPEND)
            if descriptor >= 0 { break }
            guard errno == ENXIO || errno == EINTR else { return String(cString: strerror(errno)) }
            guard ContinuousClock.now < waitUntil else {
                return "no process reads this FIFO (waited \(InputRange.text(readerWait.secondsValue)) s); "
                    + "start its reader first"
            }
            usleep(20_000)
        }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        var offset = 0
        var progressed = ContinuousClock.now
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Foundation.write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
            }
            if written > 0 {
                offset += written
                progressed = ContinuousClock.now
                continue
            }
            guard written < 0, errno == EAGAIN || errno == EINTR else {
                return written < 0 ? String(cString: strerror(errno)) : "the write made no progress"
            }
            guard ContinuousClock.now - progressed < stallLimit else {
                return "its reader took nothing for \(InputRange.text(stallLimit.secondsValue)) s"
            }
            var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            _ = poll(&ready, 1, 100)
        }
        return nil
    }

    /// Writes `text` whole to `descriptor`; the reason it could not, or `nil`.
    static func writeAll(_ descriptor: Int32, _ text: String) -> String? {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Foundation.write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            offset += written
        }
        return nil
    }

    private static func syncDirectory(of file: String) {
        let descriptor = open(
            URL(fileURLWithPath: file).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }
}
