import SessionContract
import SessionSync
import Synchronization

/// A store's side of its ``TokenStorage``: when to save, and the one ordering that keeps an
/// ended session from coming back after a restart.
///
/// - Persist before publish: ``save(_:ifCurrent:)`` runs before the store hands the grant's
///   token to anyone, so a token a caller holds always has its refresh token on disk.
/// - The fence: a save checks that its refresh or sign-in is still current and writes with no
///   sign-out between the check and the write, because both run under one lock; a sign-out
///   ends the session and clears the storage under the same lock (``end(_:)``). A refresh that
///   lands after a sign-out therefore never reaches the disk.
///
/// The lock is held across the storage's blocking write (an fsync), never across an `await`,
/// and never by a read: the read path does not touch storage at all.
///
/// A ``SharedTokenStorage`` is shared with other holders (stores in this process or another):
/// a refresh then takes its turn through ``takingTurns(_:)`` and reads the storage again first
/// (``reload()``), so one refresh serves every holder.
final class SessionPersistence: Sendable {
    /// When a grant is saved. Only ``beforePublish`` is correct; the others are kept for the
    /// reference-broken stores that show what the crash checks catch.
    enum Order: Sendable {
        case beforePublish
        /// Publish first, save afterwards: a crash in between restarts with a used refresh token.
        case afterPublish
        /// Save every grant that arrives, before publishing, but without asking whether a
        /// sign-out discarded its refresh meanwhile: the ended session is written back to disk.
        case unfenced
    }

    /// How a store over a shared storage keeps other holders from refreshing at the same time.
    /// Only ``storage`` is correct.
    enum Turns: Sendable {
        /// The storage's own lock (``SharedTokenStorage/whileRefreshing(_:)``): across instances
        /// and across processes.
        case storage
        /// One lock for every store of this process and nothing across processes: the barrier
        /// "shared across instances" a client library ships, which two processes over one
        /// Keychain or file both pass at once.
        case processOnly
    }

    /// What the storage holds when read again under a turn.
    enum Stored {
        case session(TokenGrant)
        case empty
        case unreadable
    }

    let storage: any TokenStorage
    /// The storage, if other holders may share it (asked once, not on every refresh).
    private let shared: (any SharedTokenStorage)?
    let order: Order
    let turns: Turns
    /// The one lock of ``Turns/processOnly``, shared by every store of the process.
    private static let processTurns = Turnstile()
    /// Serializes each save's currency check and write with the sign-out's clear. Holds how
    /// many writes failed (the session stays in memory; the next restart loses it).
    private let writes = Mutex<Int>(0)

    init(storage: any TokenStorage, order: Order = .beforePublish, turns: Turns = .storage) {
        self.storage = storage
        self.order = order
        self.turns = turns
        shared = storage as? any SharedTokenStorage
    }

    /// Whether other holders may share the storage, so a refresh must take its turn.
    var isShared: Bool { shared != nil }

    /// Grants other holders save, as the storage announces them; `nil` for a storage that does
    /// not announce (or a store that shares it only within this process).
    func announcements() -> AsyncStream<TokenGrant>? {
        guard turns == .storage, let announcing = shared as? any AnnouncingTokenStorage else { return nil }
        return announcing.announcements()
    }

    /// Runs `body` in this holder's turn to refresh: while no other holder of a shared storage
    /// runs its own. Unshared storage runs it at once.
    /// Throws, without running `body`, when the storage could not give a turn.
    func takingTurns<R>(_ body: () async -> R) async throws(StorageError) -> R {
        guard let shared else { return await body() }
        switch turns {
        case .storage: return try await shared.whileRefreshing(body)
        case .processOnly: return await Self.processTurns.run(body)
        }
    }

    /// The storage read again (in a turn): what the last holder to refresh left there.
    func reload() -> Stored {
        do throws(StorageError) {
            return try storage.load().map(Stored.session) ?? .empty
        } catch {
            return .unreadable
        }
    }

    /// The session saved by an earlier launch; `nil` when none is saved or it cannot be read
    /// (a store cannot do better than start signed out; the harness's storage reports why).
    func restore() -> TokenGrant? {
        try? storage.load()
    }

    /// Saves `grant` if `isCurrent()` still holds, with no sign-out in between.
    func save(_ grant: TokenGrant, ifCurrent isCurrent: () -> Bool) {
        writes.withLock(visibleTo: self) { failures in
            guard isCurrent() else { return }
            do throws(StorageError) { try storage.save(grant) } catch { failures += 1 }
        }
    }

    /// Ends the session with `end` (a sign-out, or the start of a sign-in) and clears the
    /// storage, with no save in between; returns what `end` returned.
    func end<R: Sendable>(_ end: () -> R) -> R {
        writes.withLock(visibleTo: self) { failures in
            let result = end()
            do throws(StorageError) { try storage.clear() } catch { failures += 1 }
            return result
        }
    }

    /// Writes that failed so far.
    var failedWrites: Int { writes.withLock(visibleTo: self) { $0 } }
}
