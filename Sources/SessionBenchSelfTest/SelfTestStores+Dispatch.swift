import Dispatch
import Foundation
import SessionContract
import SessionStores

extension SelfTestStores {
    /// Stores whose work hops through Dispatch queues and threads: `explore` drives Dispatch's
    /// blocks as tasks of the schedule, and says UNCONTROLLED of a `Thread`.
    static let dispatchHops: [StoreDescriptor] = [
        StoreDescriptor(
            name: "dispatch-queues",
            summary:
                "correct: the mutex store, each answer handed on through a serial queue's async, a concurrent "
                + "queue's barrier, an asyncAfter, a group's notify and DispatchQueue.main (self-test)",
            isReferenceBroken: true
        ) { DispatchQueuesStore(configuration: $0) },
        StoreDescriptor(
            name: "queue-check-then-act",
            summary:
                "the grant on a serial DispatchQueue, read in one async block and written in another: callers that "
                + "find it expired between the two each refresh (self-test)",
            isReferenceBroken: true
        ) { QueueCheckThenActStore(configuration: $0) },
        StoreDescriptor(
            name: "thread-hop",
            summary: "the mutex store, each read first hopping through a Thread of its own (self-test)",
            isReferenceBroken: true
        ) { ThreadHopStore(configuration: $0) },
        StoreDescriptor(
            name: "semaphore-bridge",
            summary:
                "the mutex store, each read first waiting on a DispatchSemaphore for a block on its queue: fine on "
                + "a pool of threads, a deadlock on one (self-test)",
            isReferenceBroken: true
        ) { SemaphoreBridgeStore(configuration: $0) },
        StoreDescriptor(
            name: "semaphore-thread",
            summary:
                "the mutex store, each read first waiting on a DispatchSemaphore that a Thread of its own signals "
                + "(self-test)",
            isReferenceBroken: true
        ) { SemaphoreBridgeStore(configuration: $0, signalFromThread: true) },
    ]
}

/// Suspends until `submit`'s block runs.
private func hop(_ submit: (@escaping @Sendable () -> Void) -> Void) async {
    await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in submit { resume.resume() } }
}

/// The mutex store behind a chain of Dispatch hops on every call.
private final class DispatchQueuesStore: SessionStore {
    private let inner: MutexStore
    private let serial = DispatchQueue(label: "session-bench.self-test.serial")
    private let concurrent = DispatchQueue(label: "session-bench.self-test.concurrent", attributes: .concurrent)

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    /// `body`, its answer then handed on through the queues and, last, from the main queue. (The
    /// hops come after the call's work, not before it: a call whose work waited for a block could
    /// begin it in the next user's session, which is not the caller's.)
    private func hops<T: Sendable>(_ body: () async throws(SessionError) -> T) async throws(SessionError) -> T {
        let result: Result<T, SessionError>
        do throws(SessionError) { result = .success(try await body()) } catch { result = .failure(error) }
        await hop { done in serial.async { done() } }
        await hop { done in concurrent.async(flags: .barrier) { done() } }
        await hop { done in serial.asyncAfter(deadline: .now() + .milliseconds(1)) { done() } }
        await hop { done in
            let group = DispatchGroup()
            concurrent.async(group: group) {}
            group.notify(queue: serial) { done() }
        }
        await hop { done in DispatchQueue.main.async { done() } }
        return try result.get()
    }

    func validToken() async throws(SessionError) -> AccessToken {
        try await hops { () throws(SessionError) in try await inner.validToken() }
    }
    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await hops { () throws(SessionError) in try await inner.tokenRejected(token) }
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

/// A grant kept on a serial queue: read in one block, refreshed outside it, written in another.
private final class QueueCheckThenActStore: SessionStore, @unchecked Sendable {
    private let configuration: SessionStoreConfiguration
    private let queue = DispatchQueue(label: "session-bench.self-test.grant")
    /// Touched only in `queue`'s blocks.
    private var grant: TokenGrant?

    init(configuration: SessionStoreConfiguration) { self.configuration = configuration }

    private func read() async -> TokenGrant? {
        await withCheckedContinuation { (resume: CheckedContinuation<TokenGrant?, Never>) in
            queue.async { resume.resume(returning: self.grant) }
        }
    }

    private func write(_ next: TokenGrant?) async {
        await hop { done in
            queue.async {
                self.grant = next
                done()
            }
        }
    }

    private func refreshed(_ held: TokenGrant) async throws(SessionError) -> AccessToken {
        let next: TokenGrant
        do throws(TokenEndpointError) { next = try await configuration.endpoint.refresh(held.refreshToken) } catch {
            throw error == .invalidGrant ? .refreshTokenRevoked : .refreshFailed
        }
        await write(next)
        return next.accessToken
    }

    func validToken() async throws(SessionError) -> AccessToken {
        guard let held = await read() else { throw .signedOut }
        if held.accessToken.isFresh(at: configuration.clock.now(), margin: configuration.refreshSkew) {
            return held.accessToken
        }
        return try await refreshed(held)
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        guard let held = await read() else { throw .signedOut }
        if held.accessToken.generation > token.generation { return held.accessToken }
        return try await refreshed(held)
    }

    func signIn(_ credentials: Credentials) async throws(SessionError) {
        do throws(TokenEndpointError) {
            await write(try await configuration.endpoint.signIn(credentials))
        } catch { throw .refreshFailed }
    }

    func signOut() async { await write(nil) }
}

/// The mutex store, each `validToken()` first waiting for a `Thread` of its own to resume it:
/// correct, but part of its work runs where no scheduler sees it.
private final class ThreadHopStore: SessionStore {
    private let inner: MutexStore

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    func validToken() async throws(SessionError) -> AccessToken {
        await hop { done in Thread.detachNewThread { done() } }
        return try await inner.validToken()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}

/// The mutex store, each read first blocking its thread on a semaphore until a block on a queue of
/// its own has run: with Dispatch's threads the block runs elsewhere and signals; with one thread
/// running everything, nothing can.
private final class SemaphoreBridgeStore: SessionStore {
    private let inner: MutexStore
    private let queue = DispatchQueue(label: "session-bench.self-test.bridge")
    /// Whether a `Thread` signals instead: work the scheduler does not run, which can end the wait.
    private let signalFromThread: Bool

    init(configuration: SessionStoreConfiguration, signalFromThread: Bool = false) {
        inner = MutexStore(configuration: configuration)
        self.signalFromThread = signalFromThread
    }

    func validToken() async throws(SessionError) -> AccessToken {
        let ready = DispatchSemaphore(value: 0)
        if signalFromThread {
            Thread.detachNewThread { ready.signal() }
        } else {
            queue.async { ready.signal() }
        }
        ready.wait()
        return try await inner.validToken()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        try await inner.tokenRejected(token)
    }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}
