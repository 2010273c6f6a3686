import Foundation

/// How every file a user names as input is read (a thresholds file, an expectations file, a
/// baseline): a regular file, whole, up to a size limit, or one line that says why not.
///
/// Anything else is refused before a byte is read: a FIFO (its writer may never write, or
/// never come), a device (`/dev/zero` never ends), a socket or a directory. The file is opened
/// without blocking and judged by what was opened, not by a look at the path beforehand, so a
/// FIFO put in a regular file's place in between is refused too.
public enum InputFile {
    /// Why a file could not be read, said after its name (`is a directory, not a regular file; …`).
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public let problem: String
        /// Whether nothing is at the path (to say which names there are instead).
        public let isMissing: Bool

        public var description: String { problem }
    }

    /// The bytes of the regular file at `path`, at most `limit` of them; `what` names what the
    /// file should be, for the refusal (`the thresholds file`).
    public static func read(_ path: String, what: String, limit: Int) throws(Refusal) -> Data {
        func refuse(_ problem: String, missing: Bool = false) -> Refusal {
            Refusal(problem: problem, isMissing: missing)
        }
        guard !path.isEmpty else { throw refuse("is an empty path; give \(what)") }
        guard !path.utf8.contains(0) else { throw refuse("holds a NUL byte; give \(what)") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard descriptor >= 0 else {
            let missing = errno == ENOENT
            throw refuse("cannot be read (\(String(cString: strerror(errno)))); check the path", missing: missing)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw refuse("cannot be read (\(String(cString: strerror(errno))))")
        }
        let kind: String? =
            switch info.st_mode & S_IFMT {
            case S_IFREG: nil
            case S_IFDIR: "a directory"
            case S_IFIFO: "a FIFO"
            case S_IFCHR, S_IFBLK: "a device"
            case S_IFSOCK: "a socket"
            default: "not a file"
            }
        if let kind { throw refuse("is \(kind), not a regular file; give \(what)") }
        guard info.st_size <= limit else { throw refuse("is larger than \(sizeText(limit)); give \(what)") }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Foundation.read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw refuse("cannot be read (\(String(cString: strerror(errno))))") }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
            // A file still growing while it is read.
            guard data.count <= limit else { throw refuse("is larger than \(sizeText(limit)); give \(what)") }
        }
        return data
    }

    private static func sizeText(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : "\(bytes) bytes"
    }
}
