import Foundation
import SessionOracle

/// The range every number a user can give must fall in, whether it comes from the command
/// line, a thresholds file or a sweep. Checked before anything runs: a value outside it is
/// bad input (exit 2), never a crash of the tool or a verdict on a store.
public enum InputRange {
    /// Concurrent callers: up to the 100,000-caller scale storm.
    public static let tasks: ClosedRange<Int> = 1...100_000
    /// Rounds of a round-based scenario.
    public static let rounds: ClosedRange<Int> = 1...100_000
    /// How long a steady scenario runs, in seconds: 1 ms to 1 hour.
    public static let durationSeconds: ClosedRange<Double> = 0.001...3_600
    /// `--pace`: real time between two rounds that need a refresh.
    public static let paceSeconds: ClosedRange<Double> = 0.001...600
    /// `stress --for`, in seconds: up to a week.
    public static let stressSeconds: ClosedRange<Double> = 0.000_000_001...604_800
    /// Open-loop arrival rate, calls per second across all callers.
    public static let rate: ClosedRange<Double> = 1...1_000_000_000
    /// Replica processes of a `replicas` run.
    public static let replicas: ClosedRange<Int> = 2...64
    /// A steady scenario's write interval, in seconds (`writes-under-reads`).
    public static let writeIntervalSeconds: ClosedRange<Double> = 0.000_1...10
    /// OS threads of a steady scenario's synchronous-read phase; 0 skips the phase.
    public static let syncThreads: ClosedRange<Int> = 0...256
    /// Seconds a call may take before its store counts as hung: below half a second, a
    /// loaded machine's scheduling alone would be reported as a hang.
    public static let hangTimeoutSeconds: ClosedRange<Double> = 0.5...3_600
    /// `stress --iterations`.
    public static let iterations: ClosedRange<Int> = 1...1_000_000
    /// `sweep --repeats`.
    public static let repeats: ClosedRange<Int> = 1...1_000
    /// `sweep`: runs in one sweep (values × stores × repeats).
    public static let sweepRuns: ClosedRange<Int> = 1...100_000
    /// Reads between two 401s of one caller.
    public static let readersPerWriter: ClosedRange<Int> = 1...1_000_000_000
    /// The server's refresh latency, in milliseconds: up to one minute.
    public static let latencyMilliseconds: ClosedRange<Double> = 0...60_000
    /// Access-token lifetime, in milliseconds: 1 ms to 30 days.
    public static let lifetimeMilliseconds: ClosedRange<Double> = 1...2_592_000_000

    /// `value` as people write it: whole numbers plainly, others with up to 6 significant digits.
    public static func text(_ value: Double) -> String { Oracle.text(value) }

    /// `range` for a message: `between 1 and 100000`.
    public static func text(_ range: ClosedRange<Int>) -> String {
        "between \(range.lowerBound) and \(range.upperBound)"
    }

    public static func text(_ range: ClosedRange<Double>) -> String {
        "between \(text(range.lowerBound)) and \(text(range.upperBound))"
    }
}

/// Numbers and durations as the tool reads them, the same everywhere: decimal digits only
/// (no sign, exponent, hex, underscores, `inf` or `nan`), so a value means the same on the
/// command line and in a file.
public enum NumberText {
    /// A whole number of decimal digits, e.g. `64`.
    public static func unsigned(_ text: String) -> UInt64? {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return UInt64(text)
    }

    /// A whole number that fits `Int`.
    public static func whole(_ text: String) -> Int? {
        unsigned(text).flatMap { $0 <= UInt64(Int.max) ? Int($0) : nil }
    }

    /// A decimal number: digits and an optional fraction (`2`, `2.5`, `0.001`); no exponent
    /// (`1e3`), as `--tasks` takes none.
    public static func decimal(_ text: String) -> Double? {
        var rest = Substring(text)
        func digits() -> Int {
            let count = rest.utf8.prefix { (48...57).contains($0) }.count
            rest = rest.dropFirst(count)
            return count
        }
        guard digits() > 0 else { return nil }
        if rest.first == "." {
            rest = rest.dropFirst()
            guard digits() > 0 else { return nil }
        }
        guard rest.isEmpty, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// A value as short as it reads exactly: a whole number without a fraction, else two or
    /// four decimals (`64`, `2.50`, `0.0010`).
    public static func compact(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        if abs(value) >= 100 { return String(format: "%.0f", value) }
        if abs(value) >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.4f", value)
    }
}

/// A duration as written: a decimal number and a unit, `250us`, `500ms`, `2s`, `1.5m`, `1h`.
public enum DurationText {
    static let units: [(suffix: String, seconds: Double)] = [
        ("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1), ("m", 60), ("h", 3_600),
    ]

    public static let help = "a number and a unit: ns, us, ms, s, m or h, e.g. 500ms, 2s"

    /// The seconds `text` stands for, or `nil` if it is not a duration.
    public static func seconds(_ text: String) -> Double? {
        // Longest suffix first: "ms" before "s".
        for unit in units.sorted(by: { $0.suffix.count > $1.suffix.count }) where text.hasSuffix(unit.suffix) {
            guard let value = NumberText.decimal(String(text.dropLast(unit.suffix.count))) else { return nil }
            let seconds = value * unit.seconds
            return seconds.isFinite ? seconds : nil
        }
        return nil
    }

    /// `seconds` as a `Duration`, for seconds already checked against a range.
    public static func duration(seconds: Double) -> Duration {
        let bounded = min(max(seconds, 0), 1e9)
        return .nanoseconds(Int64((bounded * 1e9).rounded()))
    }
}

/// Text a user gave, made safe to echo in a one-line message: control characters (a NUL, a
/// newline, an escape sequence) are shown as `\u{..}`, and long text is cut.
public enum Printable {
    public static func name(_ text: String, limit: Int = 80) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                out += "…"
                break
            }
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .unassigned, .surrogate, .privateUse:
                out += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                out.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return out
    }
}
