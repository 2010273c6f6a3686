/// The kinds of call whose latency is reported separately.
public enum OperationKind: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    /// `validToken()` with a fresh token: the fast path.
    case read
    /// `currentToken()` on an OS thread of its own: the synchronous read path.
    case syncRead = "sync-read"
    /// `validToken()` in a storm: the caller waits for (or starts) a refresh.
    case refreshWait = "refresh-wait"
    /// `tokenRejected(_:)`; in `writes-under-reads`, the writer's while the async callers read.
    case rejection
    /// `writes-under-reads`: the writer's `tokenRejected(_:)` while OS threads read `currentToken()`.
    case syncWrite = "sync-write"
    /// `signOut()`.
    case signOut = "sign-out"
    /// `signIn(_:)`.
    case signIn = "sign-in"
    /// A store's save of a grant to its storage (`crash-restart`): what the backend adds to
    /// every refresh, fsync included.
    case save
    /// `elevatedToken()` with a fresh elevated token held (`step-up`): the sensitive call's fast path.
    case elevatedRead = "elevated-read"
    /// `session-states` with one subscriber: from the call that changes the state to the
    /// subscriber's receipt of the new state.
    case observerLagOne = "observer-lag-1"
    /// `session-states` with `tasks` subscribers: the same, for each of them.
    case observerLagMany = "observer-lag-n"

    /// Measured while OS threads read `currentToken()`: a row of it carries their figures.
    package var besideThreads: Bool { self == .syncRead || self == .syncWrite }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
