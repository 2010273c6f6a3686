import SessionContract
import SessionSync
import Synchronization

/// The user behind a step-up prompt, simulated: answers after a latency, approves unless told
/// to deny or dismiss, and keeps a record of every prompt, which the harness judges prompt
/// single-flight from. The ``gate`` holds prompts open, as a user who has not answered yet.
public final class SimulatedUser: StepUpAuthenticator {
    /// One prompt the user was shown. Holds no user id.
    public struct Prompt: Sendable, Hashable {
        public enum Answer: String, Sendable, Hashable {
            case approved, denied, dismissed
        }

        /// Position among prompts, from 0.
        public let index: Int
        /// What the harness was doing when it appeared.
        public let context: String
        /// When it appeared and when it was answered, in real monotonic nanoseconds.
        public let shownAt: Int64
        public internal(set) var answeredAt: Int64?
        public internal(set) var answer: Answer?
    }

    private struct State {
        var prompts: [Prompt] = []
        var script: [Prompt.Answer] = []
        var context = ""
    }

    /// Holds prompts unanswered until released.
    public let gate = RefreshGate()
    private let server: TokenServer
    private let latency: Duration
    private let state = Mutex(State())

    /// A user whose approvals the server accepts, answering after `latency`.
    public init(server: TokenServer, latency: Duration = .zero) {
        self.server = server
        self.latency = latency
    }

    /// The next prompts are answered with `answers`, in order; approval after them.
    public func script(_ answers: [Prompt.Answer]) {
        state.withLock(visibleTo: self) { $0.script = answers }
    }

    /// What the harness is doing now; every prompt shown from now on carries it.
    public func setContext(_ context: String) {
        state.withLock(visibleTo: self) { $0.context = context }
    }

    /// Every prompt shown so far.
    public var prompts: [Prompt] { state.withLock(visibleTo: self) { $0.prompts } }

    public func prompt(for subject: Subject) async -> StepUpConsent {
        let index = state.withLock(visibleTo: self) { state in
            state.prompts.append(
                Prompt(index: state.prompts.count, context: state.context, shownAt: TokenServer.realNanoseconds()))
            return state.prompts.count - 1
        }
        // A prompt is on screen whatever happens to the task that asked: the user answers it.
        _ = await gate.pass()
        if latency > .zero { try? await Task.sleep(for: latency) }
        let answer = state.withLock(visibleTo: self) { state in
            let answer = state.script.isEmpty ? Prompt.Answer.approved : state.script.removeFirst()
            state.prompts[index].answer = answer
            state.prompts[index].answeredAt = TokenServer.realNanoseconds()
            return answer
        }
        switch answer {
        case .approved: return .approved(server.issueProof(for: subject))
        case .denied: return .denied
        case .dismissed: return .dismissed
        }
    }
}
