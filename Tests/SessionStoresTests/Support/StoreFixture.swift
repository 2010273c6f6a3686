import SessionSync
import SessionContract
import SessionStores
import TokenServer

/// One store wired to its own token server on a manual clock.
struct StoreFixture {
    static let lifetime = Duration.seconds(300)
    static let skew = Duration.seconds(5)

    let descriptor: StoreDescriptor
    let time = ManualTime()
    let server: TokenServer
    let store: any SessionStore

    static let alice = Credentials(subject: Subject("user-alice"))
    static let bob = Credentials(subject: Subject("user-bob"))

    init(_ descriptor: StoreDescriptor, server configuration: TokenServer.Configuration = .init()) {
        self.descriptor = descriptor
        var configuration = configuration
        configuration.tokenLifetime = Self.lifetime
        server = TokenServer(configuration: configuration, clock: .manual(time))
        store = descriptor.make(
            SessionStoreConfiguration(endpoint: server, clock: .manual(time), refreshSkew: Self.skew))
    }

    /// Signs Alice in and returns her first token.
    func signedIn(as credentials: Credentials = alice) async throws -> AccessToken {
        try await store.signIn(credentials)
        return try await store.validToken()
    }

    /// A caller of `validToken()` in a task of its own, with its outcome as a `Result`.
    func validTokenTask() -> Task<Result<AccessToken, SessionError>, Never> {
        let store = self.store
        return Task {
            do throws(SessionError) { return .success(try await store.validToken()) } catch {
                return .failure(error)
            }
        }
    }

    /// Moves time past the current token's expiry.
    func expire() { time.advance(by: Self.lifetime) }

    var refreshCalls: Int { server.ledger.refreshCalls }

    var now: TokenInstant { time.now }

    /// Runs `count` callers of `call`, released together from a start line, with the token
    /// server's gate held until one refresh has reached it and every caller has entered.
    /// Returns each caller's outcome.
    func storm(
        _ count: Int, holdRefresh: Bool = true,
        _ call: @escaping @Sendable (any SessionStore) async throws(SessionError) -> AccessToken
    ) async throws -> [Result<AccessToken, SessionError>] {
        let line = StartLine(count: count)
        let entered = Counter()
        let gate = server.gate
        let arrivalsBefore = gate.arrivals
        if holdRefresh { gate.hold() }
        // Never leave callers stuck at the gate, whatever fails below.
        defer { gate.release() }
        let store = self.store
        async let outcomes = withTaskGroup(of: Result<AccessToken, SessionError>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    await line.arriveAndWait()
                    entered.increment()
                    do throws(SessionError) { return .success(try await call(store)) } catch {
                        return .failure(error)
                    }
                }
            }
            var outcomes: [Result<AccessToken, SessionError>] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        if holdRefresh {
            try await eventually("every caller to enter", progress: { entered.count }) { entered.count == count }
            try await eventually("a refresh to reach the server") { gate.arrivals > arrivalsBefore }
            // Give the stragglers a moment to park behind the refresh before it completes.
            try await Task.sleep(for: .milliseconds(20))
            gate.release()
        }
        return await outcomes
    }
}

extension Result where Success == AccessToken {
    var token: AccessToken? { try? get() }
}
