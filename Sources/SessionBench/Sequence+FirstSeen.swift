extension Sequence where Element: Equatable {
    /// The elements, each once, in the order first seen: a name given twice runs once, and
    /// reports list stores and scenarios in the order they ran.
    public func firstSeen() -> [Element] {
        var unique: [Element] = []
        for element in self where !unique.contains(element) { unique.append(element) }
        return unique
    }
}
