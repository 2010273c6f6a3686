import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// Plays generated programs on one store: the world they run in (the store's clock, the server,
/// the two users) and the log every call and sign-in is recorded in, judged afterwards against
/// the contract's model. Each round's program starts signed in (the first user signs in again
/// when the last round signed out) with a read, whose token is every caller's last seen. Sign-ins
/// and sign-outs take turns (``Turnstile``); reads, 401s, cancellations and expiries overlap them.
final class ProgramPlayer: Sendable {
    let time: ManualTime
    let server: TokenServer
    /// The store calls go to: after a crash (``ProgramStep/crash``), the one made over what the
    /// last one saved.
    var store: any SessionStore { current.withLock(visibleTo: self) { $0 } }
    private let current: Mutex<any SessionStore>
    /// Kills the process's store and makes a new one over its storage (`crash-restart`): `nil`
    /// where a crash is no step.
    private let restart: (@Sendable () async -> any SessionStore)?
    let log: CallLog
    let users: [Subject]
    let lifetime: Duration
    /// The store's refresh skew: a `due` step stops halfway into it.
    let skew: Duration
    /// The account the store keeps, in the log (`users` are its users), and the number its
    /// program's first caller goes by: callers of several accounts' programs are told apart.
    let account: Int
    let firstCaller: Int
    /// Sign-ins and sign-outs take turns: the contract's model orders an account's fences (each
    /// ends the session before it), so two never overlap; everything else overlaps them.
    private let fences = Turnstile()
    /// What happened beside the calls (expiries, sign-ins, sign-outs), for the interleaving.
    private let recordedMarks = Mutex<[ProgramMark]>([])
    var marks: [ProgramMark] { recordedMarks.withLock(visibleTo: self) { $0 } }

    init(
        time: ManualTime, server: TokenServer, store: any SessionStore, log: CallLog, users: [Subject],
        lifetime: Duration, skew: Duration, account: Int = 0, firstCaller: Int = 0,
        restart: (@Sendable () async -> any SessionStore)? = nil
    ) {
        current = Mutex(store)
        self.restart = restart
        self.skew = skew
        self.account = account
        self.firstCaller = firstCaller
        self.time = time
        self.server = server
        self.log = log
        self.users = users
        self.lifetime = lifetime
    }

    /// The caller number of the reads between programs.
    func between(_ program: GeneratedProgram) -> Int { firstCaller + program.callers.count }

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
        if case .success(let token) = await log.call(
            .validToken, on: store, account: account, caller: caller, phase: phase)
        {
            return token
        }
        do throws(SessionError) { try await log.signIn(users[0], on: store, account: account) } catch { return nil }
        return try? await log.call(.validToken, on: store, account: account, caller: caller, phase: phase).get()
    }

    /// Plays `program`, every caller at once, each starting from `seen` as its last token.
    func play(_ program: GeneratedProgram, round: Int, seen: AccessToken?) async {
        server.setContext("round \(round)")
        await withTaskGroup(of: Void.self) { group in
            for (index, steps) in program.callers.enumerated() {
                let caller = firstCaller + index
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
    func perform(
        _ step: ProgramStep, caller: Int, last: AccessToken?, phase: String, index: Int
    ) async -> AccessToken? {
        switch step {
        case .nothing: return nil
        case .read:
            return try? await log.call(.validToken, on: store, account: account, caller: caller, phase: phase).get()
        case .reject:
            guard let last else {
                return try? await log.call(.validToken, on: store, account: account, caller: caller, phase: phase).get()
            }
            return try? await log.call(
                .tokenRejected(last), on: store, account: account, caller: caller, kind: .rejection, phase: phase
            )
            .get()
        case .current:
            let request: StoreCall = store is any SynchronousTokenReading ? .currentToken : .validToken
            return try? await log.call(
                request, on: store, account: account, caller: caller,
                kind: request.request == .currentToken ? .syncRead : .read,
                phase: phase
            ).get()
        case .expire:
            mark(caller: caller, phase: phase, "expire")
            time.advance(by: lifetime)
            return nil
        case .signInFirst, .signInSecond, .signInRefused:
            let (user, refused) = (step == .signInFirst ? 0 : 1, step == .signInRefused)
            await fences.run {
                mark(
                    caller: caller, phase: phase,
                    "signIn(\(user == 0 ? "A" : "B"))" + (refused ? ", to be refused" : ""))
                if refused { server.scriptSignIns([.refused]) }
                try? await log.signIn(users[user], on: store, account: account)
                if refused { server.scriptSignIns([]) }
                mark(caller: caller, phase: phase, "← sign-in done")
            }
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
        case .crash:
            // Between fences: a sign-in or sign-out is never cut in half (the contract's model
            // orders an account's fences; a crash inside one is the paced family's).
            await fences.run {
                mark(caller: caller, phase: phase, "crash →")
                if let restart {
                    let restarted = await restart()
                    current.withLock(visibleTo: self) { $0 = restarted }
                }
                mark(caller: caller, phase: phase, "← restarted")
            }
            return nil
        case .signOut:
            await fences.run {
                mark(caller: caller, phase: phase, "signOut()")
                await log.signOut(store, account: account)
                mark(caller: caller, phase: phase, "← signed out")
            }
            return nil
        case .cancelledRead, .cancelledReject:
            let request: StoreCall =
                if step == .cancelledReject, let last { .tokenRejected(last) } else { .validToken }
            let (log, account) = (self.log, self.account)
            let call = Task {
                // The store when the call is made: after a crash, the new one.
                try? await log.call(
                    request, on: self.store, account: account, caller: caller,
                    kind: request.request == .validToken ? .read : .rejection,
                    phase: phase, cancelled: true
                ).get()
            }
            let canceller = Task {
                self.mark(caller: caller, phase: phase, ProgramMark.cancel)
                StepTouches.note(StepFootprint(store: true))  // the store's handler runs
                call.cancel()
            }
            await canceller.value
            return await call.value
        }
    }

    func mark(caller: Int, phase: String, _ text: String) {
        let mark = ProgramMark(nanos: TokenServer.realNanoseconds(), caller: caller, phase: phase, text: text)
        recordedMarks.withLock(visibleTo: self) { $0.append(mark) }
    }
}
