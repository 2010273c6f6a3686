import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// One step of a generated step-up program: a clinical request (an API object's
/// `elevatedToken()`), an ordinary call, or the world moving on.
enum StepUpStep: Int, CaseIterable, Sendable {
    /// An empty slot: what a shrunk program falls back to.
    case nothing
    /// `elevatedToken()` through the caller's kept API object (made before the first sign-in).
    case elevated
    /// `elevatedToken()` through an API object made for the request.
    case elevatedNewClient
    /// `elevatedToken()` through the kept API object, from a task another task cancels at a
    /// point of its own.
    case elevatedCancelled
    case read
    /// `token()` of the caller's kept API object.
    case clientRead
    /// `tokenRejected` of the last token the caller saw.
    case reject
    /// The access token expires (and every elevated token with it).
    case expire
    /// The elevated token expires; the access token does not.
    case elevationExpires
    case signInFirst
    case signInSecond
    case signOut

    var name: String {
        switch self {
        case .nothing: "—"
        case .elevated: "elevatedToken"
        case .elevatedNewClient: "elevatedToken(new client)"
        case .elevatedCancelled: "elevatedToken+cancel"
        case .read: "validToken"
        case .clientRead: "client.token"
        case .reject: "tokenRejected(last)"
        case .expire: "expire"
        case .elevationExpires: "elevation expires"
        case .signInFirst: "signIn(A)"
        case .signInSecond: "signIn(B)"
        case .signOut: "signOut"
        }
    }

    /// The step of a generated program that plays it, for those the two share.
    var programStep: ProgramStep? {
        switch self {
        case .read: .read
        case .reject: .reject
        case .expire: .expire
        case .signInFirst: .signInFirst
        case .signInSecond: .signInSecond
        case .signOut: .signOut
        default: nil
        }
    }

    /// Slots per caller.
    static let slots = 4

    /// Each caller's steps, every slot a choice recorded in `choices` (0, the empty slot, first).
    static func program(callers: Int, choices: ChoiceLog) -> [[StepUpStep]] {
        (0..<callers).map { _ in
            (0..<slots).compactMap { _ in
                let step = StepUpStep(rawValue: choices.choose(allCases.count)) ?? .nothing
                return step == .nothing ? nil : step
            }
        }
    }

    /// The program in one line per caller with steps (`no steps` when none has one).
    static func lines(_ program: [[StepUpStep]]) -> [String] {
        let lines = program.enumerated().filter { !$0.element.isEmpty }.map { caller, steps in
            "caller \(caller): " + steps.map(\.name).joined(separator: ", ")
        }
        return lines.isEmpty ? ["no steps"] : lines
    }
}

/// Plays generated step-up programs on one store, through API objects made before the first
/// sign-in and kept (one per caller), and records every clinical request for
/// ``StepUpModelJudge``; ordinary steps are a ``ProgramPlayer``'s.
final class StepUpPlayer: Sendable {
    let player: ProgramPlayer
    let store: any StepUpSessionStore
    let clients: [any SessionClient]
    let stepUpLifetime: Duration
    private let recorded = Mutex<(calls: [ElevationRecord], marks: [ProgramMark])>(([], []))

    init(player: ProgramPlayer, store: any StepUpSessionStore, callers: Int, stepUpLifetime: Duration) {
        self.player = player
        self.store = store
        self.stepUpLifetime = stepUpLifetime
        clients = (0..<max(1, callers)).map { _ in store.makeClient() }
    }

    var elevations: [ElevationRecord] { recorded.withLock(visibleTo: self) { $0.calls } }
    var marks: [ProgramMark] { recorded.withLock(visibleTo: self) { $0.marks } + player.marks }

    /// Before any sign-in: a clinical request and a token read through kept API objects, which
    /// must fail with `signedOut`, with nobody prompted.
    func beforeSignIn(caller: Int) async {
        let phase = "before sign-in"
        _ = await elevate(through: clients[0], caller: caller, phase: phase)
        _ = await player.log.call(.clientToken(clients[clients.count - 1]), on: store, caller: caller, phase: phase)
    }

    /// Plays `program`, every caller at once, each starting from `seen` as its last token.
    func play(_ program: [[StepUpStep]], round: Int, seen: AccessToken?) async {
        let phase = "round \(round)"
        await withTaskGroup(of: Void.self) { group in
            for (caller, steps) in program.enumerated() {
                group.addTask {
                    var last = seen
                    for (index, step) in steps.enumerated() {
                        if let token = await self.perform(step, caller: caller, last: last, phase: phase, index: index)
                        {
                            last = token
                        }
                    }
                }
            }
        }
    }

    private func perform(
        _ step: StepUpStep, caller: Int, last: AccessToken?, phase: String, index: Int
    ) async -> AccessToken? {
        let client = clients[caller % clients.count]
        switch step {
        case .elevated:
            await elevate(through: client, caller: caller, phase: phase)
        case .elevatedNewClient:
            await elevate(through: store.makeClient(), caller: caller, phase: phase)
        case .elevatedCancelled:
            let call = Task { await self.elevate(through: client, caller: caller, phase: phase, cancelled: true) }
            let canceller = Task {
                self.mark(caller: caller, phase: phase, ProgramMark.cancel)
                ControlledExecution.touch(StepFootprint(store: true))  // the store's handler runs
                call.cancel()
            }
            await canceller.value
            await call.value
        case .clientRead:
            return try? await player.log.call(.clientToken(client), on: store, caller: caller, phase: phase).get()
        case .elevationExpires:
            mark(caller: caller, phase: phase, "elevation expires")
            player.time.advance(by: stepUpLifetime)
        case .nothing:
            break
        default:
            guard let program = step.programStep else { break }
            return await player.perform(program, caller: caller, last: last, phase: phase, index: index)
        }
        return nil
    }

    /// One clinical request through `client`, recorded.
    private func elevate(
        through client: any SessionClient, caller: Int, phase: String, cancelled: Bool = false
    ) async {
        let clock = player.log.clock
        let (started, at) = (TokenServer.realNanoseconds(), clock.now())
        let answer: ElevationRecord.Answer
        do throws(SessionError) {
            let token = try await client.elevatedToken()
            answer = .elevated(
                generation: token.generation, baseGeneration: token.baseGeneration, expiresAt: token.expiresAt)
        } catch {
            answer = .error(error)
        }
        let ended = TokenServer.realNanoseconds()
        let got =
            switch answer {
            case .elevated(let generation, _, _): "← e\(generation)"
            case .error(let error): "← \(error)"
            }
        let record = ElevationRecord(
            caller: caller, phase: phase, startedNanos: started, endedNanos: ended, startedAt: at,
            endedAt: clock.now(), answer: answer, wasCancelled: cancelled)
        if let read = record.asRead {
            player.log.record(read, judged: read.error == .signedOut || read.error == .cancelled)
        }
        recorded.withLock(visibleTo: self) {
            $0.calls.append(record)
            $0.marks.append(ProgramMark(nanos: started, caller: caller, phase: phase, text: ProgramMark.elevatedToken))
            $0.marks.append(ProgramMark(nanos: ended, caller: caller, phase: phase, text: got))
        }
    }

    private func mark(caller: Int, phase: String, _ text: String) {
        let mark = ProgramMark(nanos: TokenServer.realNanoseconds(), caller: caller, phase: phase, text: text)
        recorded.withLock(visibleTo: self) { $0.marks.append(mark) }
    }
}
