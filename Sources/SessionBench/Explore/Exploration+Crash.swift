import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

extension Exploration {
    /// The rounds of `crash-restart`: generated programs (``generatedRounds(_:_:crashes:)``) on a
    /// store that keeps its session, where a step may also be a crash. The process dies at a point
    /// the schedule picks, between sign-ins and sign-outs: every call under way is lost with its
    /// caller (not judged), every refresh answer on its way is lost (a reuse it forces is the
    /// crash's, not the store's), and the dead store neither calls the server nor writes the
    /// storage again. A new store is made over what the old one saved, and the program goes on
    /// with it: the session must be the one signed in, at the newest grant any caller was handed
    /// (persist before publish), or, after a sign-out, none.
    static func crashRounds(
        _ descriptor: StoreDescriptor, _ scenario: Scenario
    ) async -> (violations: [Violation], digest: ScheduleDigest, trace: StormTrace) {
        await generatedRounds(descriptor, scenario, crashes: true)
    }
}

/// One process of a store under `crash-restart`: what it reaches — the server, the storage — it
/// reaches through this, until it dies. A dead process makes no call: the server never hears
/// from it again, and nothing it saves lands.
final class ProcessLife: Sendable {
    private let dead = Atomic(false)

    var isDead: Bool { dead.load(ordering: .acquiring) }

    func die() { dead.store(true, ordering: .releasing) }

    /// The server, as this process reaches it.
    struct Endpoint: TokenEndpoint {
        let life: ProcessLife
        let server: TokenServer

        func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
            guard !life.isDead else { throw .transient }
            let grant = try await server.signIn(credentials)
            guard !life.isDead else { throw .transient }
            return grant
        }

        func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
            guard !life.isDead else { throw .transient }
            let grant = try await server.refresh(refreshToken)
            guard !life.isDead else { throw .transient }
            return grant
        }
    }

    /// The storage, as this process reaches it: what it saved before it died stays saved.
    final class Storage: TokenStorage {
        let life: ProcessLife
        let base: MemoryStorage

        init(life: ProcessLife, base: MemoryStorage) {
            self.life = life
            self.base = base
        }

        func load() throws(StorageError) -> TokenGrant? { try base.load() }

        func save(_ grant: TokenGrant) throws(StorageError) {
            guard !life.isDead else { throw .writeFailed("the process died") }
            try base.save(grant)
        }

        func clear() throws(StorageError) {
            guard !life.isDead else { throw .writeFailed("the process died") }
            try base.clear()
        }
    }
}

/// The processes of one account's store, the live one last.
final class ProcessLives: Sendable {
    private let lives = Mutex<[ProcessLife]>([])

    /// A new process, the one the next store is made in.
    func next() -> ProcessLife {
        let life = ProcessLife()
        lives.withLock(visibleTo: self) { $0.append(life) }
        return life
    }

    /// The live process dies.
    func crash() { lives.withLock(visibleTo: self) { $0.last }?.die() }
}
