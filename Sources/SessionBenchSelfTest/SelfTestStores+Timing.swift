import Dispatch
import SessionContract
import SessionStores
import Synchronization

extension SelfTestStores {
    /// Correct, but every answer reaches its caller through the main queue.
    static let mainQueueDelivery = StoreDescriptor(
        name: "main-queue-delivery",
        summary: "the mutex store, each answer delivered through DispatchQueue.main (self-test)",
        isReferenceBroken: true
    ) { MainQueueDeliveryStore(configuration: $0) }
}

/// The mutex store, each answer handed back through a block on the main queue, as stores that
/// publish to a UI do: correct wherever the main queue runs.
final class MainQueueDeliveryStore: SessionStore {
    private let inner: MutexStore

    init(configuration: SessionStoreConfiguration) { inner = MutexStore(configuration: configuration) }

    private func onMain() async {
        await withCheckedContinuation { (resume: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async { resume.resume() }
        }
    }

    func validToken() async throws(SessionError) -> AccessToken {
        let result: Result<AccessToken, SessionError>
        do throws(SessionError) { result = .success(try await inner.validToken()) } catch { result = .failure(error) }
        await onMain()
        return try result.get()
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken {
        let result: Result<AccessToken, SessionError>
        do throws(SessionError) { result = .success(try await inner.tokenRejected(token)) } catch {
            result = .failure(error)
        }
        await onMain()
        return try result.get()
    }

    func currentToken() -> AccessToken? { inner.currentToken() }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}
