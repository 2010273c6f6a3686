import Foundation

/// Number formatting for people.
enum Format {
    static func nanoseconds(_ value: Double) -> String {
        switch value {
        case ..<1_000: String(format: "%.0fns", value)
        case ..<1_000_000: String(format: "%.1fµs", value / 1e3)
        case ..<1_000_000_000: String(format: "%.1fms", value / 1e6)
        default: String(format: "%.2fs", value / 1e9)
        }
    }

    static func rate(_ value: Double) -> String {
        switch value {
        case ..<1_000: String(format: "%.0f", value)
        case ..<1_000_000: String(format: "%.1fk", value / 1e3)
        default: String(format: "%.2fM", value / 1e6)
        }
    }

    /// Left-aligned columns separated by two spaces.
    static func aligned(_ rows: [[String]]) -> String {
        guard let width = rows.first?.count else { return "" }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}
