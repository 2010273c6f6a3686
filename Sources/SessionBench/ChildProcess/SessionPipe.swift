import Foundation
import SessionContract
import SessionSync
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A session process's side of its two pipes: lines out, whole, from any thread, on a
/// descriptor of their own; lines in from standard input on a thread of its own, which hands
/// the plan to ``plan()`` and each token-endpoint answer to the call waiting for it. When the
/// driver closes standard input the process exits normally: that is a clean shutdown.
final class SessionPipe: Sendable {
    private typealias Reply = CheckedContinuation<Result<TokenGrant, TokenEndpointError>, Never>

    private struct State {
        var plan: SessionProcessPlan?
        var planWaiter: CheckedContinuation<SessionProcessPlan, Never>?
        var replies: [Int: Reply] = [:]
        var nextID = 0
        var outstanding = 0
        var refreshesSent = 0
        var rounds: [SharedRound] = []
        var roundWaiter: CheckedContinuation<SharedRound, Never>?
    }

    private let state = Mutex(State())
    /// Standard output, taken for the protocol (a store's own output goes to standard error).
    private let output = LineOutput()

    /// Starts reading standard input.
    func start() {
        let thread = Thread { [self] in
            PipeLines.forEach(in: 0) { self.received($0) }
            // The driver closed the pipe: the round is over and this process ends cleanly. Every
            // line went out with its own write; nothing is left to flush, and `exit` would run
            // atexit handlers while other threads are still inside the store.
            _exit(0)
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }

    func send(_ line: SessionLine) { output.send(line.encoded) }

    /// The plan, the first line the driver sends.
    func plan() async -> SessionProcessPlan {
        await withCheckedContinuation { waiter in
            let ready = state.withLock(visibleTo: self) { state -> SessionProcessPlan? in
                if let plan = state.plan { return plan }
                state.planWaiter = waiter
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// `shared-storage`: the next round the driver orders (it waits for as long as it takes; the
    /// driver ends the process by closing standard input).
    func nextRound() async -> SharedRound {
        await withCheckedContinuation { waiter in
            let ready = state.withLock(visibleTo: self) { state -> SharedRound? in
                if !state.rounds.isEmpty { return state.rounds.removeFirst() }
                state.roundWaiter = waiter
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    /// Sends a token-endpoint request and waits for the driver's answer.
    func request(_ line: (Int) -> SessionLine) async -> Result<TokenGrant, TokenEndpointError> {
        await withCheckedContinuation { (reply: Reply) in
            let id = state.withLock(visibleTo: self) { state in
                state.nextID += 1
                state.replies[state.nextID] = reply
                state.outstanding += 1
                return state.nextID
            }
            let message = line(id)
            if case .refreshRequest = message { state.withLock(visibleTo: self) { $0.refreshesSent += 1 } }
            send(message)
        }
    }

    /// Refresh requests sent so far.
    var refreshesSent: Int { state.withLock(visibleTo: self) { $0.refreshesSent } }

    /// Requests still waiting for an answer.
    var outstanding: Int { state.withLock(visibleTo: self) { $0.outstanding } }

    private func received(_ text: String) {
        guard let line = SessionLine(line: text) else { return }
        switch line {
        case .plan(let plan):
            let waiter = state.withLock(visibleTo: self) { state in
                state.plan = plan
                defer { state.planWaiter = nil }
                return state.planWaiter
            }
            waiter?.resume(returning: plan)
        case .round(let round):
            let waiter = state.withLock(visibleTo: self) { state in
                guard let waiter = state.roundWaiter else {
                    state.rounds.append(round)
                    return CheckedContinuation<SharedRound, Never>?.none
                }
                state.roundWaiter = nil
                return waiter
            }
            waiter?.resume(returning: round)
        case .grant(let id, let grant): answer(id, .success(grant))
        case .failure(let id, let error): answer(id, .failure(error))
        default: break
        }
    }

    private func answer(_ id: Int, _ result: Result<TokenGrant, TokenEndpointError>) {
        let reply = state.withLock(visibleTo: self) { state in
            let reply = state.replies.removeValue(forKey: id)
            if reply != nil { state.outstanding -= 1 }
            return reply
        }
        reply?.resume(returning: result)
    }
}

/// The token endpoint of a session process: every call goes to the driver, which holds the
/// token server, so the server and its ledger outlive the process it kills.
struct PipeEndpoint: TokenEndpoint {
    let pipe: SessionPipe

    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        try await pipe.request { .signInRequest(id: $0, subject: credentials.subject.rawValue) }.get()
    }

    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        try await pipe.request { .refreshRequest(id: $0, refreshToken: refreshToken.value) }.get()
    }
}
