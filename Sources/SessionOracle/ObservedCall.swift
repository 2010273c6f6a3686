import SessionContract
import TokenServer

/// What a caller asked of a store.
package enum CallRequest: Sendable, Hashable {
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
package struct ObservedCall: Sendable {
    package struct Issued: Sendable, Hashable {
        package let generation: UInt64
        /// Index of the account whose subject the token carries; `nil` if none of ours.
        package let account: Int?
        /// Which of the account's two users (0 or 1) the token belongs to.
        package let subjectSlot: Int?
        /// The expiry the token claims (the server's record says what it really is).
        package let expiresAt: TokenInstant
        /// ``AccessToken/fingerprint`` of the value returned.
        package let fingerprint: UInt64
    }

    /// What the call got.
    package enum Answer: Sendable {
        case token(Issued)
        case error(SessionError)
        /// `currentToken()` answered `nil`.
        case none
    }

    package let caller: Int
    package let account: Int
    package let kind: OperationKind
    package let request: CallRequest
    /// The phase it belongs to, as traces name it (`round 3, wave B`).
    package let phase: String
    /// The store's clock when the call started and when it returned.
    package let startedAt: TokenInstant
    package let endedAt: TokenInstant
    package let startedNanos: Int64
    package let endedNanos: Int64
    package let answer: Answer
    package let wasCancelled: Bool

    package init(
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

    package var nanoseconds: Int64 { endedNanos - startedNanos }

    /// Who made it, as traces say: `round 3, wave B: caller 12`, or the coordinator's own probe.
    package var who: String { "\(phase): " + (caller < 0 ? "the coordinator" : "caller \(caller)") }

    package var token: Issued? { if case .token(let issued) = answer { issued } else { nil } }
    package var error: SessionError? { if case .error(let error) = answer { error } else { nil } }
    package var isSyncRead: Bool { request == .currentToken }

    package static func issued(_ token: AccessToken, subjects: [[Subject]]) -> Issued {
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

    package static func answer(_ result: Result<AccessToken, SessionError>, subjects: [[Subject]]) -> Answer {
        switch result {
        case .success(let token): .token(issued(token, subjects: subjects))
        case .failure(let error): .error(error)
        }
    }

    package static func answer(_ token: AccessToken?, subjects: [[Subject]]) -> Answer {
        token.map { .token(issued($0, subjects: subjects)) } ?? .none
    }

    /// An outcome with the details that must agree between waiters of one refresh.
    package enum Shared: Hashable, CustomStringConvertible {
        case token(UInt64)
        case error(SessionError)
        case none

        package init(_ answer: Answer) {
            switch answer {
            case .token(let issued): self = .token(issued.generation)
            case .error(let error): self = .error(error)
            case .none: self = .none
            }
        }

        package var description: String {
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
package struct SessionEvent: Sendable {
    package enum Kind: Sendable, Equatable {
        /// A sign-in of the account's user `slot`; `family` is the server's token family, `nil`
        /// when the server granted none (the sign-in was refused or failed).
        case signIn(slot: Int, family: UInt64?)
        case signOut
    }

    package let account: Int
    package let kind: Kind
    package let startedNanos: Int64
    package let returnedNanos: Int64
    /// What the store's `signIn` threw, if it did (a sign-out never throws).
    package var error: SessionError? = nil
    /// The store's clock when the event started.
    package var clockAt: TokenInstant? = nil

    package init(
        account: Int, kind: Kind, startedNanos: Int64, returnedNanos: Int64, error: SessionError? = nil,
        clockAt: TokenInstant? = nil
    ) {
        self.account = account
        self.kind = kind
        self.startedNanos = startedNanos
        self.returnedNanos = returnedNanos
        self.error = error
        self.clockAt = clockAt
    }

    package var isSignIn: Bool { if case .signIn = kind { true } else { false } }

    /// The family the event started, when it was a sign-in the server granted.
    package var family: UInt64? { if case .signIn(_, let family) = kind { family } else { nil } }

    /// A sign-in of `account`'s user `slot` that ran from `start` to `end` (real nanoseconds),
    /// with the family the server granted it then, if it granted one. With `subject` and the
    /// server's `issued` tokens, only a grant to that user counts: another account's sign-in may
    /// run at the same time.
    package static func signIn(
        account: Int, slot: Int, from start: Int64, to end: Int64, error: SessionError?, clockAt: TokenInstant,
        ledger: Ledger, subject: Subject? = nil, issued: [UInt64: TokenServer.IssuedToken] = [:]
    ) -> SessionEvent {
        let family = ledger.entries.last {
            guard $0.call == .signIn, $0.sentAt >= start, $0.sentAt <= end, let generation = $0.issuedGeneration
            else { return false }
            guard let subject else { return true }
            return issued[generation]?.subject == subject
        }?.family
        return SessionEvent(
            account: account, kind: .signIn(slot: slot, family: family), startedNanos: start, returnedNanos: end,
            error: error, clockAt: clockAt)
    }

    /// Whether the event overlaps the interval `[start, end]`.
    package func overlaps(_ start: Int64, _ end: Int64) -> Bool { startedNanos <= end && returnedNanos >= start }
}

extension Result {
    package var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
