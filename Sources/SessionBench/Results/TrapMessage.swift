import Foundation

/// The runtime's own account of a crash in what a dead process printed to standard error.
public enum TrapMessage {
    /// The trap message with its source location (`Store.swift:42: Fatal error: ...`), cut to
    /// one line of at most 300 characters; `nil` if the process printed none.
    public static func find(in lines: [String]) -> String? {
        let markers = [
            "Fatal error", "Precondition failed", "Assertion failed", "fatal error", "Program crashed",
            "Simultaneous accesses",
        ]
        guard let line = lines.last(where: { line in markers.contains { line.contains($0) } }) else { return nil }
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        return trimmed.count > 300 ? String(trimmed.prefix(300)) + "…" : trimmed
    }
}
