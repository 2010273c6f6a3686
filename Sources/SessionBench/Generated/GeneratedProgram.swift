import SessionContract
import SessionOracle
import Synchronization
import TokenServer

/// Something a caller did that is not a call of the store's: the token expiring, a sign-in or a
/// sign-out starting or returning, with when (real nanoseconds), for the interleaving.
struct ProgramMark: Sendable {
    let nanos: Int64
    let caller: Int
    let phase: String
    let text: String

    /// The text of a cancellation's mark.
    static let cancel = "cancel →"
}

/// Where a cancellation landed in the call it cancelled: before it, during it with no refresh
/// around, while it waited on a refresh not yet sent, one at the server, one answered whose
/// answer had not reached the caller yet, or after the call returned.
public enum CancelPoint: String, CaseIterable, Sendable, Codable {
    case beforeTheCall = "before the call"
    case noRefresh = "in a call with no refresh"
    case refreshNotSent = "refresh not sent yet"
    case atTheServer = "refresh at the server"
    case answerOnItsWay = "answered, caller not back"
    case afterTheCall = "after the call returned"

    /// Each cancelled call of `calls` with the mark of the cancellation that hit it (a caller's
    /// k-th cancellation mark is its k-th cancelled call: its steps run one after another),
    /// placed against the refreshes of `entries`.
    static func points(_ calls: [ObservedCall], marks: [ProgramMark], entries: [LedgerEntry]) -> [CancelPoint] {
        let refreshes = entries.filter { $0.call == .refresh }
        var cancels = Dictionary(grouping: marks.filter { $0.text == ProgramMark.cancel }, by: \.caller)
        return calls.filter(\.wasCancelled).sorted { $0.startedNanos < $1.startedNanos }.compactMap { call in
            guard let at = cancels[call.caller]?.first?.nanos else { return nil }
            cancels[call.caller]?.removeFirst()
            if at < call.startedNanos { return .beforeTheCall }
            if at > call.endedNanos { return .afterTheCall }
            guard
                let refresh = refreshes.last(where: {
                    $0.sentAt <= call.endedNanos && ($0.respondedAt ?? .max) >= call.startedNanos
                })
            else { return .noRefresh }
            if at < refresh.sentAt { return .refreshNotSent }
            if at < refresh.respondedAt ?? .max { return .atTheServer }
            return .answerOnItsWay
        }
    }
}

/// One holder at a time, the others waiting in the order they came: an async lock that parks a
/// task rather than a thread, so it runs under the controlled scheduler too.
actor Turns {
    private var taken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Waits for the turn.
    func take() async {
        guard taken else {
            taken = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the turn to the next waiter, if any.
    func pass() {
        if waiting.isEmpty { taken = false } else { waiting.removeFirst().resume() }
    }
}

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
    static func generated(callers: Int, pick: (Int) -> Int) -> GeneratedProgram {
        GeneratedProgram(
            callers: (0..<callers).map { _ in
                (0..<slots).compactMap { _ in
                    let step = ProgramStep(rawValue: pick(ProgramStep.allCases.count)) ?? .nothing
                    return step == .nothing ? nil : step
                }
            })
    }

    /// The program in one line per caller with steps: `caller 0: validToken, expire` (`no steps`
    /// when no caller has one).
    var lines: [String] {
        let lines = callers.enumerated().filter { !$0.element.isEmpty }.map { caller, steps in
            "caller \(caller): " + steps.map(\.name).joined(separator: ", ")
        }
        return lines.isEmpty ? ["no steps"] : lines
    }

    /// The most steps any caller has.
    var longest: Int { callers.map(\.count).max() ?? 0 }
}

/// Plays generated programs on one store: the world they run in (the store's clock, the server,
/// the two users) and the log every call and sign-in is recorded in, judged afterwards against
/// the contract's model. Each round's program starts signed in (the first user signs in again
/// when the last round signed out) with a read, whose token is every caller's last seen. Sign-ins
/// and sign-outs take turns (``Turns``); reads, 401s, cancellations and expiries overlap them.
final class ProgramPlayer: Sendable {
    let time: ManualTime
    let server: TokenServer
    let store: any SessionStore
    let log: CallLog
    let users: [Subject]
    let lifetime: Duration
    /// The store's refresh skew: a `due` step stops halfway into it.
    let skew: Duration
    /// Sign-ins and sign-outs take turns: the contract's model orders an account's fences (each
    /// ends the session before it), so two never overlap; everything else overlaps them.
    private let fences = Turns()
    /// What happened beside the calls (expiries, sign-ins, sign-outs), for the interleaving.
    private let recordedMarks = Mutex<[ProgramMark]>([])
    var marks: [ProgramMark] { recordedMarks.withLock { $0 } }

    init(
        time: ManualTime, server: TokenServer, store: any SessionStore, log: CallLog, users: [Subject],
        lifetime: Duration, skew: Duration
    ) {
        self.skew = skew
        self.time = time
        self.server = server
        self.store = store
        self.log = log
        self.users = users
        self.lifetime = lifetime
    }

    /// The caller number of the reads between programs.
    func between(_ program: GeneratedProgram) -> Int { program.callers.count }

    /// Brings the store to a signed-in session for the next program, against a healthy server (a
    /// fault the last program scripted and no refresh took is dropped): a read, and when it fails
    /// (signed out, revoked, or a failure the store kept) a sign-in of the first user and another
    /// read. The token read, or `nil` when the store could not be brought there (the judge has the
    /// calls that say why).
    func prepare(round: Int, caller: Int) async -> AccessToken? {
        server.setContext("round \(round) start")
        server.scriptRefreshes([])
        server.scriptSignIns([])
        let phase = "round \(round) start"
        if case .success(let token) = await log.call(.validToken, on: store, caller: caller, phase: phase) {
            return token
        }
        do throws(SessionError) { try await log.signIn(users[0], on: store) } catch { return nil }
        return try? await log.call(.validToken, on: store, caller: caller, phase: phase).get()
    }

    /// Plays `program`, every caller at once, each starting from `seen` as its last token.
    func play(_ program: GeneratedProgram, round: Int, seen: AccessToken?) async {
        server.setContext("round \(round)")
        await withTaskGroup(of: Void.self) { group in
            for (caller, steps) in program.callers.enumerated() {
                group.addTask {
                    var last = seen
                    for (index, step) in steps.enumerated() {
                        let phase = "round \(round)"
                        if let token = await self.perform(step, caller: caller, last: last, phase: phase, index: index)
                        {
                            last = token
                        }
                    }
                }
            }
        }
    }

    /// One step; the token it got, if any.
    private func perform(
        _ step: ProgramStep, caller: Int, last: AccessToken?, phase: String, index: Int
    ) async -> AccessToken? {
        switch step {
        case .nothing: return nil
        case .read:
            return try? await log.call(.validToken, on: store, caller: caller, phase: phase).get()
        case .reject:
            guard let last else {
                return try? await log.call(.validToken, on: store, caller: caller, phase: phase).get()
            }
            return try? await log.call(.tokenRejected(last), on: store, caller: caller, kind: .rejection, phase: phase)
                .get()
        case .current:
            let request: StoreCall = store is any SynchronousTokenReading ? .currentToken : .validToken
            return try? await log.call(
                request, on: store, caller: caller, kind: request.request == .currentToken ? .syncRead : .read,
                phase: phase
            ).get()
        case .expire:
            mark(caller: caller, phase: phase, "expire")
            time.advance(by: lifetime)
            return nil
        case .signInFirst, .signInSecond, .signInRefused:
            let (user, refused) = (step == .signInFirst ? 0 : 1, step == .signInRefused)
            await fences.take()
            mark(caller: caller, phase: phase, "signIn(\(user == 0 ? "A" : "B"))" + (refused ? ", to be refused" : ""))
            if refused { server.scriptSignIns([.refused]) }
            try? await log.signIn(users[user], on: store)
            server.scriptSignIns([])
            mark(caller: caller, phase: phase, "← sign-in done")
            await fences.pass()
            return nil
        case .due:
            mark(caller: caller, phase: phase, "due")
            time.advance(by: lifetime - skew / 2)
            return nil
        case .revoke:
            mark(caller: caller, phase: phase, "server revokes sessions")
            for user in users { server.revokeSessions(of: user) }
            return nil
        case .serverFails, .serverTimesOut, .serverLosesAnswer:
            let fault: FaultModel.Fault =
                step == .serverFails ? .transientFailure : step == .serverTimesOut ? .timeout : .lostResponse
            mark(caller: caller, phase: phase, step.name)
            server.scriptRefreshes([fault])
            return nil
        case .signOut:
            await fences.take()
            mark(caller: caller, phase: phase, "signOut()")
            await log.signOut(store)
            mark(caller: caller, phase: phase, "← signed out")
            await fences.pass()
            return nil
        case .cancelledRead, .cancelledReject:
            let request: StoreCall =
                if step == .cancelledReject, let last { .tokenRejected(last) } else { .validToken }
            let (log, store) = (self.log, self.store)
            let call = Task {
                try? await log.call(
                    request, on: store, caller: caller, kind: request.request == .validToken ? .read : .rejection,
                    phase: phase, cancelled: true
                ).get()
            }
            let canceller = Task {
                self.mark(caller: caller, phase: phase, ProgramMark.cancel)
                call.cancel()
            }
            await canceller.value
            return await call.value
        }
    }

    private func mark(caller: Int, phase: String, _ text: String) {
        let mark = ProgramMark(nanos: TokenServer.realNanoseconds(), caller: caller, phase: phase, text: text)
        recordedMarks.withLock { $0.append(mark) }
    }
}
