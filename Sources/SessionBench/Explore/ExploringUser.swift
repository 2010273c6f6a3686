import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// The values a scenario chose in one schedule (``ControlledExecution/choose(_:)``), in the order
/// it chose them: a generated program's steps and a user's answers, which ``FixedValues`` plays
/// again while a failing program shrinks.
final class ChoiceLog: Sendable {
    private let chosen = Mutex<[Int]>([])

    /// A value below `count` the schedule picks, recorded.
    func choose(_ count: Int) -> Int {
        let value = ControlledExecution.choose(count)
        chosen.withLock(visibleTo: self) { $0.append(value) }
        return value
    }

    var values: [Int] { chosen.withLock(visibleTo: self) { $0 } }
}

/// The user behind step-up prompts under `explore`: each prompt's answer (approve, deny, dismiss)
/// and when it comes are the schedule's choices. An impatient user answers after a moment that
/// may run long (``ControlledExecution/answer(after:)``: anything may happen meanwhile); a patient
/// one answers only once every other task has run as far as it can, and notes how many token
/// reads and 401s begun while the prompt was open are still waiting then with no server call
/// under way — waiting on the prompt, which the session's own token never needs (I21).
final class ExploringUser: StepUpAuthenticator {
    private let server: TokenServer
    private let log: CallLog
    private let clock: TokenClock
    private let users: [Subject]
    private let choices: ChoiceLog
    private let state = Mutex<(prompts: [PromptRecord], marks: [ProgramMark], phase: String)>(([], [], ""))

    /// Waits a patient user makes for the others to finish, each as long as the schedule lets
    /// every timer due within ``patience`` fire first.
    static let waits = 3
    static let patience = Duration.seconds(2)

    init(server: TokenServer, log: CallLog, clock: TokenClock, users: [Subject], choices: ChoiceLog) {
        self.server = server
        self.log = log
        self.clock = clock
        self.users = users
        self.choices = choices
    }

    /// Every prompt shown so far.
    var prompts: [PromptRecord] { state.withLock(visibleTo: self) { $0.prompts } }
    /// When each prompt appeared and was answered, for the interleaving.
    var marks: [ProgramMark] { state.withLock(visibleTo: self) { $0.marks } }

    /// What the harness is doing: every prompt shown from now on carries it.
    func setPhase(_ phase: String) { state.withLock(visibleTo: self) { $0.phase = phase } }

    func prompt(for subject: Subject) async -> StepUpConsent {
        let answers: [SimulatedUser.Prompt.Answer] = [.approved, .denied, .dismissed]
        let answer = answers[choices.choose(answers.count)]
        let patient = choices.choose(2) == 1
        let shown = TokenServer.realNanoseconds()
        let index = state.withLock(visibleTo: self) { state in
            let index = state.prompts.count
            state.prompts.append(
                PromptRecord(
                    index: index, slot: users.firstIndex(of: subject), phase: state.phase, shownNanos: shown,
                    shownAt: clock.now(), patient: patient))
            state.marks.append(
                ProgramMark(
                    nanos: shown, caller: ProgramMark.user, phase: state.phase,
                    text: "prompt #\(index)\(patient ? " (patient)" : "")"))
            return index
        }
        var (stuck, settled) = (0, false)
        if patient {
            for _ in 0..<Self.waits {
                await ControlledExecution.settle(waiting: Self.patience)
                if log.underWay(since: shown) == 0 { break }
            }
            let serverBusy = server.ledger.entries.contains { $0.respondedAt == nil }
            stuck = serverBusy ? 0 : log.underWay(since: shown)
            settled = !serverBusy
        } else {
            await ControlledExecution.answer(after: .milliseconds(1))
        }
        state.withLock(visibleTo: self) { state in
            let answered = TokenServer.realNanoseconds()
            state.prompts[index].answer = answer
            state.prompts[index].answeredNanos = answered
            state.prompts[index].stuck = stuck
            state.prompts[index].settled = settled
            state.marks.append(
                ProgramMark(
                    nanos: answered, caller: ProgramMark.user, phase: state.prompts[index].phase,
                    text: "#\(index) \(answer.rawValue)"))
        }
        switch answer {
        case .approved: return .approved(server.issueProof(for: subject))
        case .denied: return .denied
        case .dismissed: return .dismissed
        }
    }
}
