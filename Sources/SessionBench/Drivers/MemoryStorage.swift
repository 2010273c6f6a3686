import SessionContract
import SessionSync
import Synchronization
import TokenServer

/// The storage a store that persists its session gets in the round scenarios: in memory, so a
/// save costs what a copy costs and the storms measure the store, not a disk; every save and
/// clear recorded with when it happened, for the contract's storage promises to be judged at
/// every event of every round (persist before publish, nothing of a session after its fence).
final class MemoryStorage: TokenStorage {
    struct Write: Sendable {
        /// Real nanoseconds, the ledger's clock.
        let at: Int64
        /// The access token's generation of the grant saved; `nil` for a clear.
        let generation: UInt64?
    }

    private let state = Mutex<(saved: TokenGrant?, writes: [Write])>((nil, []))

    func load() throws(StorageError) -> TokenGrant? { state.withLock(visibleTo: self) { $0.saved } }

    func save(_ grant: TokenGrant) throws(StorageError) {
        let at = TokenServer.realNanoseconds()
        state.withLock(visibleTo: self) {
            $0.saved = grant
            $0.writes.append(Write(at: at, generation: grant.accessToken.generation))
        }
    }

    func clear() throws(StorageError) {
        let at = TokenServer.realNanoseconds()
        state.withLock(visibleTo: self) {
            $0.saved = nil
            $0.writes.append(Write(at: at, generation: nil))
        }
    }

    /// The generation saved now, and every write so far.
    var contents: (saved: UInt64?, writes: [Write]) {
        state.withLock(visibleTo: self) { ($0.saved?.accessToken.generation, $0.writes) }
    }
}
