import ArgumentParser
import SessionBench
import SessionMeasurement

/// A duration on the command line: `500ms`, `2s`, `1.5s`, `250us`, `3m`, `1h`.
struct DurationArgument: Sendable, CustomStringConvertible {
    let seconds: Double
    let text: String

    /// `nil` unless `text` is a decimal number and a unit; the range is checked by the option.
    init?(_ text: String) {
        guard let seconds = DurationText.seconds(text) else { return nil }
        self.seconds = seconds
        self.text = text
    }

    var duration: Duration { DurationText.duration(seconds: seconds) }

    var description: String { text }
}

/// How every number on the command line is read: decimal digits only (no sign, exponent, hex
/// or `inf`, ``NumberText``), inside the option's stated range, checked before anything runs
/// (exit 2); a list of them as ``ListText`` reads it.
enum ArgumentText {
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static func whole(_ range: ClosedRange<Int>) -> @Sendable (String) throws -> Int {
        let read = checked(
            { NumberText.unsigned($0) }, unreadable: "give a whole number in decimal digits, \(InputRange.text(range))",
            accepts: { $0 >= UInt64(range.lowerBound) && $0 <= UInt64(range.upperBound) },
            outside: "must be \(InputRange.text(range))")
        return { text in Int(try read(text)) }
    }

    static func seed(_ text: String) throws -> UInt64 {
        guard let value = NumberText.unsigned(text) else {
            throw Invalid(description: "give a whole number in decimal digits, from 0 to \(UInt64.max)")
        }
        return value
    }

    static func decimal(_ range: ClosedRange<Double>, unit: String) -> @Sendable (String) throws -> Double {
        checked(
            { NumberText.decimal($0) }, unreadable: "give a decimal number of \(unit), \(InputRange.text(range))",
            accepts: { range.contains($0) }, outside: "must be \(InputRange.text(range)) \(unit)")
    }

    /// A list of CPU numbers: `0`, `0,1`, `0-3,6`.
    static func cpus(_ text: String) throws -> [Int] {
        do throws(ListText.Invalid) { return try CPUPlacement.parse(text) } catch {
            throw Invalid(description: "\(error.description) (see nproc)")
        }
    }

    /// A duration within `range` seconds; `rangeText` says it as people would (`1ms and 1h`).
    static func duration(
        _ range: ClosedRange<Double>, rangeText: String
    ) -> @Sendable (String) throws -> DurationArgument {
        checked(
            { DurationArgument($0) }, unreadable: "give \(DurationText.help)",
            accepts: { range.contains($0.seconds) }, outside: "must be between \(rangeText)")
    }

    /// Reads a value with `read` and holds it to `accepts`; each refusal says what to give.
    private static func checked<Value>(
        _ read: @escaping @Sendable (String) -> Value?, unreadable: String,
        accepts: @escaping @Sendable (Value) -> Bool, outside: String
    ) -> @Sendable (String) throws -> Value {
        { text in
            guard let value = read(text) else { throw Invalid(description: unreadable) }
            guard accepts(value) else { throw Invalid(description: outside) }
            return value
        }
    }
}
