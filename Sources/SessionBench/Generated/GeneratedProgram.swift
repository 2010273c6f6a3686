import SessionContract
import SessionOracle
import Synchronization
import TokenServer

/// One step of a generated program: a call of the contract, or the world moving on (the token
/// expiring), made by one caller.
enum ProgramStep: Int, CaseIterable, Sendable {
    /// An empty slot: what a shrunk program falls back to.
    case nothing
    case read
    /// `tokenRejected` of the token this caller last saw (a read when it has seen none).
    case reject
    /// `currentToken()` (a read on a store without the synchronous path).
    case current
    /// The token expires: the clock moves on by the token's lifetime.
    case expire
    /// `signIn` as the first user, or the second.
    case signInFirst
    case signInSecond
    case signOut
    /// A read, or a 401 of the last token seen, from a task of its own that another task cancels
    /// at a point of its own: before the call, at any of the store's awaits, after it returned.
    case cancelledRead
    case cancelledReject
    /// The server fails the next refresh (a transient error): a failure is shared, never kept.
    case serverFails
    /// The second user signs in and the server refuses the credentials: the session before it
    /// ends all the same.
    case signInRefused
    /// The clock moves on to within the refresh skew of the token's expiry: due, not expired.
    case due
    /// The server revokes every session of both users (an administrator's revocation): the next
    /// refresh is refused, and the session is over.
    case revoke
    /// The next refresh times out: the server did nothing, the client waited and heard nothing.
    case serverTimesOut
    /// The server rotates on the next refresh and its answer is lost: the client still holds the
    /// refresh token the server has just used, and presenting it again is a reuse.
    case serverLosesAnswer
    /// The process dies and starts again (`crash-restart` only): every call under way and every
    /// answer on its way is lost, and a new store is made over what the old one saved.
    case crash

    /// The steps of `generated` and its kin: all but ``crash``.
    static let steps = allCases.filter { $0 != .crash }

    var name: String {
        switch self {
        case .nothing: "—"
        case .read: "validToken"
        case .reject: "tokenRejected(last)"
        case .current: "currentToken"
        case .expire: "expire"
        case .signInFirst: "signIn(A)"
        case .signInSecond: "signIn(B)"
        case .signOut: "signOut"
        case .cancelledRead: "validToken+cancel"
        case .cancelledReject: "tokenRejected(last)+cancel"
        case .serverFails: "server fails next refresh"
        case .signInRefused: "signIn(B), refused"
        case .due: "due"
        case .revoke: "server revokes sessions"
        case .serverTimesOut: "server times out next refresh"
        case .serverLosesAnswer: "server loses next answer"
        case .crash: "crash and restart"
        }
    }
}

/// A small concurrent program of the contract's operations: each caller a short sequence of
/// steps, all callers at once (Lincheck's generated scenarios). Each step is one choice among
/// ``ProgramStep``'s cases, the empty slot first, so a program shrinks as a schedule does: a
/// choice dropped is an operation gone.
struct GeneratedProgram: Sendable, Equatable {
    /// Each caller's steps, empty slots left out.
    var callers: [[ProgramStep]]

    /// Slots per caller: a program has at most this many steps in each.
    static let slots = 5

    /// A program of `callers` callers, each slot's step picked by `pick` (a value below its
    /// argument; 0, the empty slot, is the default).
    /// `steps`: the steps a slot may hold, the empty slot first.
    static func generated(
        callers: Int, steps: [ProgramStep] = ProgramStep.steps, pick: (Int) -> Int
    ) -> GeneratedProgram {
        GeneratedProgram(
            callers: (0..<callers).map { _ in
                (0..<slots).compactMap { _ in
                    let step = steps[min(pick(steps.count), steps.count - 1)]
                    return step == .nothing ? nil : step
                }
            })
    }

    /// The program in one line per caller with steps: `caller 0: validToken, expire` (`no steps`
    /// when no caller has one).
    var lines: [String] { lines(firstCaller: 0) }

    /// The lines, callers numbered from `firstCaller` (as a ``ProgramPlayer`` numbers them).
    func lines(firstCaller: Int) -> [String] {
        let lines = callers.enumerated().filter { !$0.element.isEmpty }.map { caller, steps in
            "caller \(firstCaller + caller): " + steps.map(\.name).joined(separator: ", ")
        }
        return lines.isEmpty ? ["no steps"] : lines
    }

    /// The most steps any caller has.
    var longest: Int { callers.map(\.count).max() ?? 0 }
}
