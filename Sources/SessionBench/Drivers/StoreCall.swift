import SessionContract
import TokenServer

/// One call a caller makes on a store, timed and recorded in the caller's own task: the clock
/// reads bracket the store's call with nothing else between.
enum StoreCall: Sendable {
    case validToken
    case tokenRejected(AccessToken)
    /// `currentToken()`, on a store that offers it (``SynchronousTokenReading``).
    case currentToken
    /// An API object's `token()`, which promises what the store's `validToken()` does.
    case clientToken(any SessionClient)

    var request: CallRequest {
        switch self {
        case .validToken, .clientToken: .validToken
        case .tokenRejected(let token): .tokenRejected(generation: token.generation)
        case .currentToken: .currentToken
        }
    }

    /// Makes the call and records it, with the token it got. `clock` is the store's clock, read
    /// before and after.
    func perform(
        on store: any SessionStore, caller: Int, account: Int, kind: OperationKind, phase: String, clock: TokenClock,
        subjects: [[Subject]], cancelled: Bool = false
    ) async -> (call: ObservedCall, token: AccessToken?) {
        let reader = store as? any SynchronousTokenReading
        let startedAt = clock.now()
        let t0 = TokenServer.realNanoseconds()
        let result: Result<AccessToken?, SessionError>
        switch self {
        case .validToken:
            do throws(SessionError) { result = .success(try await store.validToken()) } catch { result = .failure(error) }
        case .tokenRejected(let token):
            do throws(SessionError) { result = .success(try await store.tokenRejected(token)) } catch {
                result = .failure(error)
            }
        case .currentToken:
            result = .success(reader?.currentToken())
        case .clientToken(let client):
            do throws(SessionError) { result = .success(try await client.token()) } catch { result = .failure(error) }
        }
        let t1 = TokenServer.realNanoseconds()
        let endedAt = clock.now()
        let answer: ObservedCall.Answer =
            switch result {
            case .success(let token?): .token(ObservedCall.issued(token, subjects: subjects))
            case .success(nil): .none
            case .failure(let error): .error(error)
            }
        let call = ObservedCall(
            caller: caller, account: account, kind: self.isSync ? .syncRead : kind, request: request, phase: phase,
            startedAt: startedAt, endedAt: endedAt, startedNanos: t0, endedNanos: t1, answer: answer,
            wasCancelled: cancelled)
        return (call, try? result.get())
    }

    var isSync: Bool { if case .currentToken = self { true } else { false } }
}
