import SessionContract

/// What a store must declare to run a family's scenarios, beyond the base contract: each is a
/// promise the scenarios judge, and only a store that makes it is run on them. A family names
/// its own (``ScenarioFamily/requirement(_:)``); `list`, `compare` and ``ScenarioRunner`` users
/// read it from the scenario (`Scenario.requirement`).
public enum StoreRequirement: String, Sendable, CaseIterable {
    /// A session saved to storage and read back after a restart (`persistsSession`).
    case savedSession
    /// One storage shared by instances and processes, refreshes coordinated through it (`sharesStorage`).
    case sharedStorage
    /// Step-up authentication (`offersStepUp`).
    case stepUp
    /// A stream of the session's states (`offersStateStream`).
    case stateStream

    /// Whether `store` declares it.
    public func isMet(by store: StoreDescriptor) -> Bool {
        switch self {
        case .savedSession: store.persistsSession
        case .sharedStorage: store.sharesStorage
        case .stepUp: store.offersStepUp
        case .stateStream: store.offersStateStream
        }
    }

    /// The offer a result carries for a store that declares it (``StoreOffers``).
    public var offer: StoreOffers {
        switch self {
        case .savedSession: .persistence
        case .sharedStorage: .sharedStorage
        case .stepUp: .stepUp
        case .stateStream: .stateStream
        }
    }

    /// How `list` marks a store that declares it: `storage`.
    public var mark: String {
        switch self {
        case .savedSession: "storage"
        case .sharedStorage: "shared storage"
        case .stepUp: "step-up"
        case .stateStream: "state stream"
        }
    }

    /// What the store must declare, in words and by name: `a saved session (persistsSession)`.
    public var declaration: String {
        switch self {
        case .savedSession: "a saved session (persistsSession)"
        case .sharedStorage: "a shared storage (sharesStorage)"
        case .stepUp: "step-up (offersStepUp)"
        case .stateStream: "a state stream (offersStateStream)"
        }
    }
}
