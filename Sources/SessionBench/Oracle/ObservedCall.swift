import SessionContract

/// What one call to a store was seen to do: who made it, when it started and returned (real
/// monotonic nanoseconds, the clock of the server's ledger), and what it got. No token
/// values: a generation, whose token it was, its expiry.
struct ObservedCall: Sendable {
    struct Issued: Sendable, Hashable {
        let generation: UInt64
        /// Index of the account whose subject the token carries; `nil` if none of ours.
        let account: Int?
        /// Which of the account's two users (0 or 1) the token belongs to.
        let subjectSlot: Int?
        let expiresAt: TokenInstant
    }

    let caller: Int
    let account: Int
    let kind: OperationKind
    /// The phase it belongs to, as traces name it (`round 3, wave B`).
    let phase: String
    /// The store's clock when the call started (rounds: manual time).
    let startedAt: TokenInstant
    let startedNanos: Int64
    let endedNanos: Int64
    let outcome: Result<Issued, SessionError>
    let wasCancelled: Bool

    var nanoseconds: Int64 { endedNanos - startedNanos }

    var token: Issued? { if case .success(let issued) = outcome { issued } else { nil } }
    var error: SessionError? { if case .failure(let error) = outcome { error } else { nil } }

    static func issued(_ token: AccessToken, subjects: [[Subject]]) -> Issued {
        for (account, pair) in subjects.enumerated() {
            if let slot = pair.firstIndex(of: token.subject) {
                return .init(
                    generation: token.generation, account: account, subjectSlot: slot, expiresAt: token.expiresAt)
            }
        }
        return .init(generation: token.generation, account: nil, subjectSlot: nil, expiresAt: token.expiresAt)
    }

    /// An outcome with the details that must agree between waiters of one refresh.
    enum Shared: Hashable, CustomStringConvertible {
        case token(UInt64)
        case error(SessionError)

        init(_ outcome: Result<Issued, SessionError>) {
            switch outcome {
            case .success(let issued): self = .token(issued.generation)
            case .failure(let error): self = .error(error)
            }
        }

        var description: String {
            switch self {
            case .token(let generation): "generation \(generation)"
            case .error(let error): "'\(error)'"
            }
        }
    }
}

/// A session the harness started or ended on one account: the edges the sign-out fence and
/// "only the user or the server ends a session" are judged against.
struct SessionEvent: Sendable {
    enum Kind: Sendable, Equatable {
        /// A sign-in of the account's user `slot`; `family` is the server's token family.
        case signIn(slot: Int, family: UInt64?)
        case signOut
    }

    let account: Int
    let kind: Kind
    let startedNanos: Int64
    let returnedNanos: Int64

    var isSignIn: Bool { if case .signIn = kind { true } else { false } }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
