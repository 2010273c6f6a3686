#if PostgreSQL
import Foundation
import SessionContract
import SessionStoragePostgres
import Synchronization
import Testing

/// The database stops, or stops answering: the storage says so, in bounded time. The storage
/// reaches the server through a relay the test cuts or freezes, as such a database looks to its
/// clients.
extension ReplicaTests {
    /// A relay to the test server, and the URL that reaches the server through it.
    func relay() throws -> (relay: DatabaseRelay, url: String, direct: PostgresLocation) {
        let server = try #require(Self.server, "CI runs the replica tests: .ci/run starts PostgreSQL (scripts/postgres)")
        let direct = try PostgresLocation(url: server)
        let relay = try #require(DatabaseRelay(to: direct.host, port: direct.port), "no loopback port for the relay")
        var components = try #require(URLComponents(string: server))
        components.port = Int(relay.port)
        return (relay, try #require(components.string), direct)
    }

    @Test("a storage whose database stops answering, or goes away, fails with .unreachable and never blocks")
    func storageAnswersUnreachable() async throws {
        let (relay, url, direct) = try relay()
        let relayed = try PostgresLocation(url: url)
        let session = "unreachable-\(UUID().uuidString)"
        defer { try? PostgresTokenStorage.remove(session: session, at: direct) }
        let storage = try PostgresTokenStorage(location: relayed, session: session, coordination: .rowLock)
        let grant = TokenGrant(
            accessToken: AccessToken(
                value: "at.outage-secret", subject: Subject("u"), generation: 1, expiresAt: TokenInstant(nanoseconds: 0)),
            refreshToken: RefreshToken("rt.outage-secret"))
        try storage.save(grant)
        /// `call` on a thread of its own (a call that blocked for good holds that thread, not the
        /// test): it must fail as unreachable.
        func expectUnreachable(_ name: String, _ call: @escaping @Sendable () throws(StorageError) -> Void) async {
            let outcome = await Self.offThread { () -> Swift.Result<Void, StorageError> in
                do throws(StorageError) { try call() } catch { return .failure(error) }
                return .success(())
            }
            switch outcome {
            case .failure(.unreachable(let why))?:
                #expect(why.hasPrefix("PostgreSQL at ") && !why.contains("outage-secret"), "\(name): \(why)")
            case .failure(let error)?: Issue.record("\(name): \(error), not unreachable")
            case .success?: Issue.record("\(name) succeeded with the database gone")
            case nil: Issue.record("\(name) blocked: no answer after a minute")
            }
        }
        // A server that stops answering: the call gives up after the storage's answer timeout.
        relay.freeze()
        await expectUnreachable("load from a silent server") { () throws(StorageError) in _ = try storage.load() }
        // One that is gone: at once.
        relay.cut()
        await expectUnreachable("save") { () throws(StorageError) in try storage.save(grant) }
        await expectUnreachable("a new storage") { () throws(StorageError) in
            _ = try PostgresTokenStorage(location: relayed, session: session, coordination: .rowLock)
        }
    }

    /// `work` on a thread of its own; `nil` if it has not returned after a minute (it blocked).
    static func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T? {
        let once = Once()
        return await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let finish: @Sendable (T?) -> Void = { value in
                if once.first() { continuation.resume(returning: value) }
            }
            Thread { finish(work()) }.start()
            Task {
                try? await Task.sleep(for: .seconds(60))
                finish(nil)
            }
        }
    }

    final class Once: Sendable {
        private let done = Atomic(false)
        /// `true` the first time only.
        func first() -> Bool { !done.exchange(true, ordering: .sequentiallyConsistent) }
    }
}
#endif
