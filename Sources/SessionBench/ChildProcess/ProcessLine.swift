import Foundation
import SessionSync
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one protocol between the harness's processes — the measuring child of an isolated run
/// (`run-store`) and the session processes (``SessionLine``), in both directions: every message
/// is one JSON object on a line of its own, named by its `type`. Readers take lines with
/// ``PipeLines``; a line that holds no message is never taken for one.
public enum ProcessLine {
    /// `message` as one line, without its newline (JSON text never holds a raw newline).
    public static func encode<Message: Encodable>(_ message: Message) -> String {
        String(decoding: (try? JSONEncoder().encode(message)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// The message `line` holds, or `nil` when it holds none.
    public static func decode<Message: Decodable>(_ line: String, as type: Message.Type) -> Message? {
        guard line.hasPrefix("{") else { return nil }
        return try? JSONDecoder().decode(type, from: Data(line.utf8))
    }
}

/// A child process's way out for the protocol: it takes standard output for ``ProcessLine``
/// messages alone and points descriptor 1 at standard error, so whatever a store prints can
/// never split, swallow or pose as a message; each line goes out whole, from any thread.
public final class LineOutput: Sendable {
    private let writing = Mutex(())
    private let output: Int32

    public init() {
        output = dup(1)
        _ = fcntl(output, F_SETFD, FD_CLOEXEC)
        dup2(2, 1)
    }

    /// Writes `line` and its newline in one piece.
    public func send(_ line: String) {
        let text = line + "\n"
        writing.withLock(visibleTo: self) { _ in
            text.utf8CString.withUnsafeBufferPointer { buffer in
                var offset = 0
                let count = buffer.count - 1
                while offset < count {
                    let written = buffer.baseAddress!.withMemoryRebound(to: UInt8.self, capacity: count) {
                        write(output, $0 + offset, count - offset)
                    }
                    if written < 0, errno == EINTR { continue }
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }
}
