import SessionContract

/// What a store declares it offers beyond the base contract, as results carry it: each offer is a
/// set of promises that can be judged only for a store that makes them.
public struct StoreOffers: OptionSet, Sendable, Codable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    public static let synchronousRead = StoreOffers(rawValue: 1)
    public static let persistence = StoreOffers(rawValue: 2)
    public static let sharedStorage = StoreOffers(rawValue: 4)
    public static let stepUp = StoreOffers(rawValue: 8)
    public static let stateStream = StoreOffers(rawValue: 16)

    public init(_ store: StoreDescriptor) {
        var offers: StoreOffers = []
        if store.offersSynchronousRead { offers.insert(.synchronousRead) }
        if store.persistsSession { offers.insert(.persistence) }
        if store.sharesStorage { offers.insert(.sharedStorage) }
        if store.offersStepUp { offers.insert(.stepUp) }
        if store.offersStateStream { offers.insert(.stateStream) }
        self = offers
    }
}
