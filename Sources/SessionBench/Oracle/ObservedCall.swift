import SessionContract
import TokenServer

/// What a caller asked of a store.
enum CallRequest: Sendable, Hashable {
    /// `validToken()`.
    case validToken
    /// `tokenRejected(_:)` for the token of this generation.
    case tokenRejected(generation: UInt64)
    /// `currentToken()`, the synchronous read.
    case currentToken
}

/// What one call to a store was seen to do: who made it, what it asked, when it started and
/// returned (real monotonic nanoseconds, the clock of the server's ledger, and the store's own
/// clock), and what it got. Recorded in the caller's own task, right before and right after the
/// store's call, with nothing between. No token values: a generation, whose token it was, its
/// expiry, a fingerprint to compare with what the server issued.
struct ObservedCall: Sendable {
    struct Issued: Sendable, Hashable {
        let generation: UInt64
        /// Index of the account whose subject the token carries; `nil` if none of ours.
        let account: Int?
        /// Which of the account's two users (0 or 1) the token belongs to.
        let subjectSlot: Int?
        /// The expiry the token claims (the server's record says what it really is).
        let expiresAt: TokenInstant
        /// ``AccessToken/fingerprint`` of the value returned.
        let fingerprint: UInt64
    }

    /// What the call got.
    enum Answer: Sendable {
        case token(Issued)
        case error(SessionError)
        /// `currentToken()` answered `nil`.
        case none
    }

    let caller: Int
    let account: Int
    let kind: OperationKind
    let request: CallRequest
    /// The phase it belongs to, as traces name it (`round 3, wave B`).
    let phase: String
    /// The store's clock when the call started and when it returned.
    let startedAt: TokenInstant
    let endedAt: TokenInstant
    let startedNanos: Int64
    let endedNanos: Int64
    let answer: Answer
    let wasCancelled: Bool

    init(
        caller: Int, account: Int, kind: OperationKind, request: CallRequest = .validToken, phase: String,
        startedAt: TokenInstant, endedAt: TokenInstant? = nil, startedNanos: Int64, endedNanos: Int64, answer: Answer,
        wasCancelled: Bool
    ) {
        self.caller = caller
        self.account = account
        self.kind = kind
        self.request = request
        self.phase = phase
        self.startedAt = startedAt
        self.endedAt = endedAt ?? startedAt
        self.startedNanos = startedNanos
        self.endedNanos = endedNanos
        self.answer = answer
        self.wasCancelled = wasCancelled
    }

    var nanoseconds: Int64 { endedNanos - startedNanos }

    /// Who made it, as traces say: `round 3, wave B: caller 12`, or the coordinator's own probe.
    var who: String { "\(phase): " + (caller < 0 ? "the coordinator" : "caller \(caller)") }

    var token: Issued? { if case .token(let issued) = answer { issued } else { nil } }
    var error: SessionError? { if case .error(let error) = answer { error } else { nil } }
    var isSyncRead: Bool { request == .currentToken }

    static func issued(_ token: AccessToken, subjects: [[Subject]]) -> Issued {
        for (account, pair) in subjects.enumerated() {
            if let slot = pair.firstIndex(of: token.subject) {
                return .init(
                    generation: token.generation, account: account, subjectSlot: slot, expiresAt: token.expiresAt,
                    fingerprint: token.fingerprint)
            }
        }
        return .init(
            generation: token.generation, account: nil, subjectSlot: nil, expiresAt: token.expiresAt,
            fingerprint: token.fingerprint)
    }

    static func answer(_ result: Result<AccessToken, SessionError>, subjects: [[Subject]]) -> Answer {
        switch result {
        case .success(let token): .token(issued(token, subjects: subjects))
        case .failure(let error): .error(error)
        }
    }

    static func answer(_ token: AccessToken?, subjects: [[Subject]]) -> Answer {
        token.map { .token(issued($0, subjects: subjects)) } ?? .none
    }

    /// An outcome with the details that must agree between waiters of one refresh.
    enum Shared: Hashable, CustomStringConvertible {
        case token(UInt64)
        case error(SessionError)
        case none

        init(_ answer: Answer) {
            switch answer {
            case .token(let issued): self = .token(issued.generation)
            case .error(let error): self = .error(error)
            case .none: self = .none
            }
        }

        var description: String {
            switch self {
            case .token(let generation): "generation \(generation)"
            case .error(let error): "'\(error)'"
            case .none: "nil"
            }
        }
    }
}

/// A session the harness started or ended on one account: the edges the sign-out fence and
/// "only the user or the server ends a session" are judged against.
struct SessionEvent: Sendable {
    enum Kind: Sendable, Equatable {
        /// A sign-in of the account's user `slot`; `family` is the server's token family, `nil`
        /// when the server granted none (the sign-in was refused or failed).
        case signIn(slot: Int, family: UInt64?)
        case signOut
    }

    let account: Int
    let kind: Kind
    let startedNanos: Int64
    let returnedNanos: Int64
    /// What the store's `signIn` threw, if it did (a sign-out never throws).
    var error: SessionError? = nil
    /// The store's clock when the event started.
    var clockAt: TokenInstant? = nil

    var isSignIn: Bool { if case .signIn = kind { true } else { false } }

    /// The family the event started, when it was a sign-in the server granted.
    var family: UInt64? { if case .signIn(_, let family) = kind { family } else { nil } }

    /// A sign-in of `account`'s user `slot` that ran from `start` to `end` (real nanoseconds),
    /// with the family the server granted it then, if it granted one.
    static func signIn(
        account: Int, slot: Int, from start: Int64, to end: Int64, error: SessionError?, clockAt: TokenInstant,
        ledger: Ledger
    ) -> SessionEvent {
        let family = ledger.entries.last {
            $0.call == .signIn && $0.sentAt >= start && $0.sentAt <= end && $0.issuedGeneration != nil
        }?.family
        return SessionEvent(
            account: account, kind: .signIn(slot: slot, family: family), startedNanos: start, returnedNanos: end,
            error: error, clockAt: clockAt)
    }

    /// Whether the event overlaps the interval `[start, end]`.
    func overlaps(_ start: Int64, _ end: Int64) -> Bool { startedNanos <= end && returnedNanos >= start }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
