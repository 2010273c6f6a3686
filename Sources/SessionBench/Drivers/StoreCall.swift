import SessionContract
import SessionOracle
import SessionSync
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
        let started = Started(clock: clock)
        let result = await call(on: store)
        return record(
            result, started: started, caller: caller, account: account, kind: kind, phase: phase, clock: clock,
            subjects: subjects, cancelled: cancelled)
    }

    /// When a call started: the store's clock and real time, read just before it.
    struct Started: Sendable {
        let at: TokenInstant
        let nanos: Int64

        init(clock: TokenClock) {
            at = clock.now()
            nanos = TokenServer.realNanoseconds()
        }
    }

    /// The store's call alone, kept apart from the timing and the record so that a caller waiting
    /// in the store holds little of the harness (see `RoundDriver.launch`).
    func call(on store: any SessionStore) async -> Result<AccessToken?, SessionError> {
        switch self {
        case .validToken:
            do throws(SessionError) { return .success(try await store.validToken()) } catch { return .failure(error) }
        case .tokenRejected(let token):
            do throws(SessionError) { return .success(try await store.tokenRejected(token)) } catch {
                return .failure(error)
            }
        case .currentToken:
            return .success((store as? any SynchronousTokenReading)?.currentToken())
        case .clientToken(let client):
            do throws(SessionError) { return .success(try await client.token()) } catch { return .failure(error) }
        }
    }

    /// Records the call that started at `started` and has just returned `result` into `latch`.
    /// Never inlined: the record is built in this function's own stack frame, not in the
    /// caller's task, whose frames a waiting caller holds for as long as it waits (the record
    /// in the caller's frame cost every waiter of the scale storm an allocation and a kilobyte).
    @inline(never)
    func finish(
        into latch: CompletionLatch<ObservedCall>, _ result: Result<AccessToken?, SessionError>, started: Started,
        caller: Int, account: Int, kind: OperationKind, phase: String, clock: TokenClock, subjects: [[Subject]],
        cancelled: Bool
    ) {
        latch.finish(
            record(
                result, started: started, caller: caller, account: account, kind: kind, phase: phase, clock: clock,
                subjects: subjects, cancelled: cancelled
            ).call)
    }

    /// The call that started at `started` and has just returned `result`, as the oracle sees it.
    func record(
        _ result: Result<AccessToken?, SessionError>, started: Started, caller: Int, account: Int, kind: OperationKind,
        phase: String, clock: TokenClock, subjects: [[Subject]], cancelled: Bool
    ) -> (call: ObservedCall, token: AccessToken?) {
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
            startedAt: started.at, endedAt: endedAt, startedNanos: started.nanos, endedNanos: t1, answer: answer,
            wasCancelled: cancelled)
        return (call, try? result.get())
    }

    var isSync: Bool { if case .currentToken = self { true } else { false } }
}
