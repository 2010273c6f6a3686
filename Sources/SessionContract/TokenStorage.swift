/// Where a store keeps its session between launches: the seed ADR's Keychain, an app's
/// UserDefaults, a server's file or database.
///
/// A store given a storage restores the saved session when it is made, and saves every grant
/// it receives **before** any caller gets the grant's access token (persist before publish):
/// with rotating refresh tokens the grant's refresh token is the only one the server still
/// accepts, so a process that crashes after handing out the access token but before saving
/// restarts with a used refresh token, and the server revokes the session on its next refresh.
/// Sign-out and the start of another sign-in clear it, so an ended session never comes back
/// after a restart.
///
/// Calls block until the data is durable (a backend that writes files syncs them). They are
/// never made on a store's read path.
public protocol TokenStorage: AnyObject, Sendable {
    /// The saved session, or `nil` when none is saved. Throws when something is stored but
    /// cannot be read back (a torn or tampered file): that is never the same as no session.
    func load() throws(StorageError) -> TokenGrant?

    /// Replaces the saved session with `grant`; durable when it returns.
    func save(_ grant: TokenGrant) throws(StorageError)

    /// Removes the saved session; durable when it returns.
    func clear() throws(StorageError)
}

/// How a storage call fails. The text names the file or table and the cause, never a secret.
public enum StorageError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Something is stored but cannot be read back as a session (torn, corrupt, wrong key).
    case unreadable(String)
    /// The storage could not be written or cleared (a full disk, a permission).
    case writeFailed(String)
    /// The server that keeps the session could not be reached, or stopped answering (a database
    /// that is down): whether the call took effect is unknown. The store is not at fault.
    case unreachable(String)

    public var description: String {
        switch self {
        case .unreadable(let why): "stored session unreadable: \(why)"
        case .writeFailed(let why): "storage write failed: \(why)"
        case .unreachable(let why): "storage server unreachable: \(why)"
        }
    }
}

/// A storage several stores can share — instances in one process, or processes on one machine,
/// like an app and its extension over one Keychain item — because it can hold them off one
/// another while one of them refreshes.
///
/// With rotating refresh tokens, two holders of one saved session must never both refresh it:
/// the second presents a refresh token the server has just rotated, the server sees a reuse and
/// revokes the session for everyone. A store that shares its storage therefore refreshes only
/// inside ``whileRefreshing(_:)``, and there first reads the storage again: if another holder
/// saved a newer grant while this one waited, it takes that grant instead of calling the server
/// (or, if that grant's access token has expired too, refreshes with *its* refresh token). The
/// grant it does obtain is saved before the body returns, so the next holder finds it. A storage
/// it finds empty there means another holder signed out: the shared session is over here too.
public protocol SharedTokenStorage: TokenStorage {
    /// Runs `body` while no other call of this method on the same storage, in this process or
    /// another (on this machine or, for a database, any), runs its body. Waits for its turn by
    /// suspending, never by blocking a thread; a holder that dies gives up its turn (the operating
    /// system or the database server drops its lock).
    ///
    /// Throws, without running `body`, when the turn cannot be had: a storage whose lock has a
    /// timeout gave up waiting, or the server holding the lock could not be reached. The store
    /// then fails that refresh as a transient error; it must never refresh outside a turn.
    func whileRefreshing<R>(_ body: () async -> R) async throws(StorageError) -> R
}

/// A shared storage that tells every holder when a holder saves a grant — replicas listening to
/// their database (PostgreSQL's `LISTEN`/`NOTIFY`), say — so a holder learns of a new token as soon
/// as it is saved: callers waiting for a refresh another holder made are answered at once, with
/// no turn taken and no polling, and a holder whose token is about to expire has the new one
/// before it would refresh.
///
/// A store takes an announced grant only if it is newer than its own (same user, higher
/// generation) and still fresh; its own turn to refresh still reads the storage again, so a missed
/// announcement costs time, never correctness.
public protocol AnnouncingTokenStorage: SharedTokenStorage {
    /// The grants saved to the storage, by any holder, as they are saved (each read back from the
    /// storage, so a late announcement carries the newest grant). Ends when the storage is released.
    func announcements() -> AsyncStream<TokenGrant>
}
