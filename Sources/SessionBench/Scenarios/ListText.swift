import SessionMeasurement

/// A comma-separated list as the tool reads it, the same for every option that takes one
/// (`sweep --values 1,2,4`, `--cpus 0-3,6`): each item read as the option's single value is
/// (``NumberText``), nothing trimmed, no item empty (`1,,2`, `1,`) and no value twice (`1,1`,
/// or `1,1.0`), so that a list means exactly what it says.
public enum ListText {
    /// Why a list was refused, with what to give instead.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The values of `text`'s items, in order. `read` reads one item (`nil` if it cannot),
    /// `what` names one (`a whole number in decimal digits`), `example` is a list to give.
    public static func values<Value: Equatable>(
        _ text: String, what: String, example: String, read: (String) -> Value?
    ) throws(Invalid) -> [Value] {
        var values: [Value] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
            guard !item.isEmpty else {
                throw Invalid(
                    description: "has an empty item (two commas in a row, or one at an end); give e.g. \(example)")
            }
            guard let value = read(item) else {
                throw Invalid(description: "'\(Printable.name(item))' is not \(what); give e.g. \(example)")
            }
            guard !values.contains(value) else {
                throw Invalid(
                    description:
                        "'\(Printable.name(item))' repeats a value given before; give each once, e.g. \(example)")
            }
            values.append(value)
        }
        return values
    }
}

extension CPUPlacement {
    /// `0,1` or `0-3,6`: CPU numbers and ranges, as a list (``ListText``): no item empty and no
    /// CPU named twice, by itself or in a range. The CPUs, ascending.
    public static func parse(_ text: String) throws(ListText.Invalid) -> [Int] {
        let limit = CPUPlacement.limit
        let ranges = try ListText.values(text, what: "a CPU number or range", example: "0 or 0,1 or 0-3") {
            (item: String) -> ClosedRange<Int>? in
            let bounds = item.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(bounds.count),
                let low = NumberText.whole(bounds[0]), let high = bounds.count == 2 ? NumberText.whole(bounds[1]) : low,
                low <= high, high < limit
            else { return nil }
            return low...high
        }
        var cpus: Set<Int> = []
        for range in ranges {
            if let twice = range.first(where: cpus.contains) {
                throw ListText.Invalid(
                    description: "CPU \(twice) is named twice; name each CPU once, e.g. 0 or 0,1 or 0-3")
            }
            cpus.formUnion(range)
        }
        return cpus.sorted()
    }
}
