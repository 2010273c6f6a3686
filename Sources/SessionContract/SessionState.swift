/// A session's state as a UI observes it. Carries generations, never tokens or user ids.
public enum SessionState: Hashable, Sendable, CustomStringConvertible {
    /// No session: never signed in, signed out, or a sign-in under way.
    case signedOut
    /// Signed in, with the access token of `generation` current.
    case signedIn(generation: UInt64)
    /// A refresh of the token of `generation` is under way.
    case refreshing(generation: UInt64)
    /// The server refused the session's refresh token; over until the next sign-in.
    case revoked

    /// The access-token generation the state is about, if any.
    public var generation: UInt64? {
        switch self {
        case .signedIn(let generation), .refreshing(let generation): generation
        case .signedOut, .revoked: nil
        }
    }

    public var description: String {
        switch self {
        case .signedOut: "signed out"
        case .signedIn(let generation): "signed in (generation \(generation))"
        case .refreshing(let generation): "refreshing (generation \(generation))"
        case .revoked: "revoked"
        }
    }
}

/// A store whose state changes can be observed, as the seed ADR's `stateStream` promises.
///
/// Each call of ``sessionStates()`` is a new subscriber with a stream of its own: it gets the
/// current state first, then every change after it in the order the changes happened (states
/// may be coalesced, never reordered). Once ``SessionStore/signOut()`` has returned, no
/// subscriber is handed a state of the ended session after `signedOut`, and every subscriber's
/// latest state is `signedOut` once it has read what it was sent.
public protocol ObservableSessionStore: SessionStore {
    /// A new subscription to the store's state.
    func sessionStates() -> AsyncStream<SessionState>
}
