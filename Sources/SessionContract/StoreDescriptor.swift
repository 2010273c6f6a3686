/// What a store is built from: where it gets tokens, how it reads time, and how early it
/// refreshes.
public struct SessionStoreConfiguration: Sendable {
    public var endpoint: any TokenEndpoint
    public var clock: TokenClock
    /// A token this close to expiry counts as expired and is refreshed before use.
    /// Never less than the clock's resolution, so a coarse clock cannot hand out a token
    /// that has expired between two of its ticks.
    public var refreshSkew: Duration
    /// Where the session is kept between launches; `nil` for a store that keeps it in memory
    /// only. A store that offers persistence (``StoreDescriptor/persistsSession``) restores
    /// from it when made and saves each grant before handing out its token.
    public var storage: (any TokenStorage)?
    /// The user, as a store that offers step-up authentication (``StepUpSessionStore``) prompts
    /// them; `nil` where nothing may prompt (a store then fails step-ups with
    /// ``SessionError/stepUpFailed``). The endpoint must then be a ``StepUpEndpoint`` too.
    public var authenticator: (any StepUpAuthenticator)?

    public init(
        endpoint: any TokenEndpoint, clock: TokenClock = .coarse, refreshSkew: Duration = .milliseconds(20),
        storage: (any TokenStorage)? = nil, authenticator: (any StepUpAuthenticator)? = nil
    ) {
        self.endpoint = endpoint
        self.clock = clock
        self.refreshSkew = max(refreshSkew, clock.resolution)
        self.storage = storage
        self.authenticator = authenticator
    }
}

/// A named way to build a store, as the harness and the command line list them.
///
/// Users plug their own store into the harness by describing it with one of these.
public struct StoreDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// A short, stable, command-line-friendly name (`mutex`, `actor-task`).
    public let name: String
    /// One line saying how the store guards its state.
    public let summary: String
    /// Marks a store that is wrong on purpose, kept as a reference the checks must catch.
    /// Such stores are left out of "all stores" unless asked for.
    public let isReferenceBroken: Bool
    /// Whether instances implement ``SynchronousTokenReading``.
    public let offersSynchronousRead: Bool
    /// Whether instances keep their session in ``SessionStoreConfiguration/storage`` when given
    /// one (restore when made, save before publishing, clear on sign-out). Only such stores run
    /// the scenarios that restart the process over the same storage.
    public let persistsSession: Bool
    /// Whether instances given a ``SharedTokenStorage`` share it with every other holder — other
    /// instances, other processes — with one refresh per expiry across all of them (they refresh
    /// only in the storage's turn, and take a grant another holder saved meanwhile). Only such
    /// stores run the scenario that shares one storage between processes.
    public let sharesStorage: Bool
    /// Whether instances implement ``StepUpSessionStore`` (API objects, step-up prompts). Only
    /// such stores run the `step-up` scenario.
    public let offersStepUp: Bool
    /// Whether instances implement ``ObservableSessionStore``. Only such stores run the
    /// `session-states` scenario.
    public let offersStateStream: Bool
    /// Whether the store can only "refresh now" on a 401: it cannot tell a rejected token that
    /// is still its current one from an older one (the design of many libraries). Declared, a
    /// 401 for an older token that brings a refresh call breaks I6 as expected: reported
    /// `known`, with the declaration as its reason. Every other check is unchanged — a refresh
    /// it starts still must be single-flight, fresh, and of the current session.
    public let refreshesUnconditionallyOn401: Bool
    /// Whether everything the store does runs on the main actor: its state, its methods, its
    /// cancellation handlers and the tasks it starts (a `@MainActor` class with no `nonisolated`
    /// state, as the compiler checks it). `explore --strategy dfs` trusts it: a step off the main
    /// actor is taken to touch none of the store's state, so orders that differ only in where
    /// such steps fall among the store's are run once. A store that declares it falsely may have
    /// a bug that search skips (the random and PCT strategies do not rely on it).
    public let isolatedToMainActor: Bool
    private let factory: @Sendable (SessionStoreConfiguration) -> any SessionStore

    public init(
        name: String, summary: String, isReferenceBroken: Bool = false, offersSynchronousRead: Bool = false,
        persistsSession: Bool = false, sharesStorage: Bool = false, offersStepUp: Bool = false,
        offersStateStream: Bool = false, refreshesUnconditionallyOn401: Bool = false,
        isolatedToMainActor: Bool = false,
        make: @escaping @Sendable (SessionStoreConfiguration) -> any SessionStore
    ) {
        self.name = name
        self.summary = summary
        self.isReferenceBroken = isReferenceBroken
        self.offersSynchronousRead = offersSynchronousRead
        self.persistsSession = persistsSession
        self.sharesStorage = sharesStorage
        self.offersStepUp = offersStepUp
        self.offersStateStream = offersStateStream
        self.refreshesUnconditionallyOn401 = refreshesUnconditionallyOn401
        self.isolatedToMainActor = isolatedToMainActor
        self.factory = make
    }

    /// A new store, signed out.
    public func make(_ configuration: SessionStoreConfiguration) -> any SessionStore {
        factory(configuration)
    }

    public var description: String { name }
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.name == rhs.name }
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
