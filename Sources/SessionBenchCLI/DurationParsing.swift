import ArgumentParser

/// A duration on the command line: `500ms`, `2s`, `1.5s`, `250us`, `3m`.
struct DurationArgument: ExpressibleByArgument, Sendable, CustomStringConvertible {
    let duration: Duration
    let text: String

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1), ("m", 60)]
        for (suffix, scale) in units where argument.hasSuffix(suffix) {
            guard let value = Double(argument.dropLast(suffix.count)), value > 0, value.isFinite else { return nil }
            duration = .nanoseconds(Int64(value * scale * 1e9))
            text = argument
            return
        }
        return nil
    }

    var description: String { text }

    static var defaultCompletionKind: CompletionKind { .default }
}
