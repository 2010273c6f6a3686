import SessionBench
import SessionContract
import SessionStores
import Synchronization

/// The stores the command line knows: the built-in ones and any a user's package adds.
public enum StoreRegistry {
    private static let extra = Mutex<[StoreDescriptor]>([])

    /// Adds stores from a user's package (before the command line parses its arguments).
    public static func register(_ stores: [StoreDescriptor]) {
        extra.withLock { $0.append(contentsOf: stores) }
    }

    /// Built-in stores first, then the user's, in the order they were registered.
    public static var all: [StoreDescriptor] { StoreCatalog.all + extra.withLock { $0 } }

    public static func named(_ name: String) -> StoreDescriptor? { all.first { $0.name == name } }

    /// Resolves a comma-separated list, or every correct store (plus broken ones if asked).
    static func resolve(_ names: [String], includeBroken: Bool) throws(UsageError) -> [StoreDescriptor] {
        if names.isEmpty { return all.filter { includeBroken || !$0.isReferenceBroken } }
        var stores: [StoreDescriptor] = []
        for name in names {
            guard let store = named(name) else {
                throw UsageError(
                    "unknown store '\(Printable.name(name))'; known: \(all.map(\.name).joined(separator: ", ")) "
                        + "(see 'session-bench list')")
            }
            stores.append(store)
        }
        return stores.firstSeen()
    }
}

/// Bad input: reported in one line, exit status 2.
public struct UsageError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
