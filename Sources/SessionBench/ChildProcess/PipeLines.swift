#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lines from a pipe, as the harness's processes talk to each other: one call per line, read
/// until the writer closes it. The descriptor is left open.
public enum PipeLines {
    /// Calls `line` for each line read from `descriptor` (without its newline), and for what
    /// is left after the last newline when the pipe closes.
    public static func forEach(in descriptor: Int32, _ line: (String) -> Void) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            pending.append(contentsOf: buffer[0..<count])
            var start = 0
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                line(String(decoding: pending[start..<newline], as: UTF8.self))
                start = newline + 1
            }
            pending.removeSubrange(0..<start)
        }
        if !pending.isEmpty { line(String(decoding: pending, as: UTF8.self)) }
    }
}
