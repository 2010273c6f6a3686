import Foundation
import SessionContract
import SessionStores

/// Two stores that fail the hard way, for checking that the command line survives them:
/// one crashes the process at the first expiry, one never answers. They exist only when
/// `SESSION_BENCH_SELF_TEST_STORES=1` is set, and are reference-broken.
enum SelfTestStores {
    static var enabled: Bool { ProcessInfo.processInfo.environment["SESSION_BENCH_SELF_TEST_STORES"] == "1" }

    static let all: [StoreDescriptor] = [
        StoreDescriptor(name: "crashes-on-expiry", summary: "traps when a refresh is needed (self-test)", isReferenceBroken: true) {
            ExpiryTrap(configuration: $0, behaviour: .crash)
        },
        StoreDescriptor(name: "hangs-on-expiry", summary: "never answers when a refresh is needed (self-test)", isReferenceBroken: true) {
            ExpiryTrap(configuration: $0, behaviour: .hang)
        },
    ]
}

private final class ExpiryTrap: SessionStore {
    enum Behaviour { case crash, hang }

    private let inner: MutexStore
    private let behaviour: Behaviour

    init(configuration: SessionStoreConfiguration, behaviour: Behaviour) {
        inner = MutexStore(configuration: configuration)
        self.behaviour = behaviour
    }

    func validToken() async throws(SessionError) -> AccessToken {
        if let token = inner.currentToken() { return token }
        switch behaviour {
        case .crash: fatalError("self-test store crashing on purpose")
        case .hang: await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }
        }
        throw .signedOut
    }

    func tokenRejected(_ token: AccessToken) async throws(SessionError) -> AccessToken { try await validToken() }
    func signIn(_ credentials: Credentials) async throws(SessionError) { try await inner.signIn(credentials) }
    func signOut() async { await inner.signOut() }
}
