import SessionContract
import SessionOracle
import SessionSync
import Synchronization
import TokenServer

/// The subscribers to one explored store's states: each a task of its own reading its stream,
/// what it read recorded with when (real nanoseconds: one thread runs a schedule, so they order
/// it), and a mark for the interleaving. Subscriber `k` shows there as caller `firstCaller + k`.
final class StateSubscribers: Sendable {
    private struct State {
        var received: [[StatesHistory.Received]] = []
        var readers: [Task<Void, Never>] = []
        var marks: [ProgramMark] = []
        /// What the driver is doing, for the marks.
        var phase = ""
    }

    let store: any ObservableSessionStore
    let firstCaller: Int
    private let state = Mutex(State())

    init(_ store: any ObservableSessionStore, firstCaller: Int) {
        self.store = store
        self.firstCaller = firstCaller
    }

    var count: Int { state.withLock(visibleTo: self) { $0.received.count } }
    /// Every state each subscriber received, by subscriber.
    var received: [[StatesHistory.Received]] { state.withLock(visibleTo: self) { $0.received } }
    var marks: [ProgramMark] { state.withLock(visibleTo: self) { $0.marks } }
    /// Each subscriber's latest state (`nil`: none received yet).
    var latest: [SessionState?] { state.withLock(visibleTo: self) { $0.received.map { $0.last?.state } } }

    /// What the driver does from now on (`round 1`): the phase of every mark after it.
    func enter(_ phase: String) { state.withLock(visibleTo: self) { $0.phase = phase } }

    /// A new subscriber: subscribes here and now, and reads its stream from a task of its own.
    /// Its number.
    @discardableResult
    func join() -> Int {
        // The store's stream, made and read by the store's code (`dfs`'s reduction).
        ControlledExecution.touch(StepFootprint(store: true))
        let stream = store.sessionStates()
        let index = state.withLock(visibleTo: self) { state in
            state.received.append([])
            return state.received.count - 1
        }
        mark(index, "subscribes")
        let reader = Task {
            for await received in stream {
                ControlledExecution.touch(StepFootprint(store: true))
                let at = TokenServer.realNanoseconds()
                self.state.withLock(visibleTo: self) { $0.received[index].append(.init(received, at: at)) }
                self.mark(index, "← \(Self.short(received))")
            }
        }
        state.withLock(visibleTo: self) { $0.readers.append(reader) }
        return index
    }

    /// Ends every subscriber's reading.
    func cancel() {
        ControlledExecution.touch(StepFootprint(store: true))  // the stream's termination is the store's
        for reader in state.withLock(visibleTo: self, { $0.readers }) { reader.cancel() }
    }

    /// How many times a settled check waits out the deadline for the store to go quiet before it
    /// judges nothing (a store whose own timers keep changing its state).
    static let quietRounds = 5

    /// What a look at the store sees move: the states each subscriber received, and the generation
    /// `reader` hands out.
    private func activity(_ reader: (any SynchronousTokenReading)?) -> [UInt64] {
        state.withLock(visibleTo: self) { $0.received.map { UInt64($0.count) } }
            + [reader?.currentToken()?.generation ?? 0]
    }

    /// Waits until the store is quiet: the deadline `compare` gives a subscriber has passed (a
    /// store may publish from a timer of its own: a debounce), every task has run as far as it can
    /// (``ControlledExecution/settle(waiting:)``), and nothing moved since the last look; `false` when it
    /// did not go quiet in ``quietRounds`` looks.
    private func quiet(_ reader: (any SynchronousTokenReading)?) async -> Bool {
        var last = activity(reader)
        for _ in 0..<Self.quietRounds {
            await ControlledExecution.settle(waiting: SessionStatesDriver.deadline)
            let now = activity(reader)
            if now == last { return true }
            last = now
        }
        return false
    }

    /// Once the store is quiet (``quiet(_:)``): a new subscriber's first state must be each
    /// subscriber's latest (unless a change came while it joined); once the store is quiet again,
    /// every subscriber's latest must be the same, `expected` when given, and of the session
    /// `reader` reads (a token of generation g read means signed in or refreshing with g). What
    /// broke that, as I23 findings; none when the store never went quiet.
    func settled(
        after phase: String, expected: SessionState? = nil, reader: (any SynchronousTokenReading)? = nil
    ) async -> [ContractJudge.Finding] {
        guard await quiet(reader) else { return [] }
        let before = latest
        let counts = received.map(\.count)
        let probe = join()
        guard await quiet(reader) else { return [] }
        let after = latest
        // A change that reached the others while the new subscriber joined leaves its first state
        // free to be either side of it.
        let moved = received.prefix(counts.count).map(\.count) != counts
        let current = reader?.currentToken()
        let first = received[probe].first?.state
        func named(_ state: SessionState?) -> String { state.map { "'\($0)'" } ?? "nothing" }
        var findings: [ContractJudge.Finding] = []
        guard let first, let truth = after[probe] else {
            return [
                .init(
                    invariant: .observersSeeFinalState,
                    summary: "a subscriber that joined after \(phase), with nothing left to run, got no state")
            ]
        }
        if !moved, let behind = before.indices.first(where: { before[$0] != first }) {
            findings.append(
                .init(
                    invariant: .observersSeeFinalState,
                    summary:
                        "after \(phase), with nothing left to run, subscriber \(behind)'s latest state and a new subscriber's first differ",
                    trace: [
                        "subscriber \(behind): \(named(before[behind])); the new subscriber's first: \(named(first))"
                    ]
                ))
        }
        if let behind = after.indices.first(where: { after[$0] != truth }) {
            findings.append(
                .init(
                    invariant: .observersSeeFinalState,
                    summary:
                        "after \(phase), with nothing left to run, subscriber \(behind) is not on the store's latest state",
                    trace: ["subscriber \(behind): \(named(after[behind])); the newest subscriber's: \(named(truth))"]))
        }
        if let expected, truth != expected {
            findings.append(
                .init(
                    invariant: .observersSeeFinalState,
                    summary: "after \(phase) returned, the store's state is \(named(truth)), not '\(expected)'"))
        }
        if let current, truth != .signedIn(generation: current.generation),
            truth != .refreshing(generation: current.generation)
        {
            findings.append(
                .init(
                    invariant: .observersSeeFinalState,
                    summary:
                        "after \(phase), with nothing left to run, currentToken() hands out generation \(current.generation) while subscribers are told \(named(truth))"
                ))
        }
        return findings
    }

    /// A state as the interleaving shows it: `in g3`, `refreshing g3`, `out`, `revoked`.
    static func short(_ state: SessionState) -> String {
        switch state {
        case .signedIn(let generation): "in g\(generation)"
        case .refreshing(let generation): "refreshing g\(generation)"
        case .signedOut: "out"
        case .revoked: "revoked"
        }
    }

    private func mark(_ subscriber: Int, _ text: String) {
        let nanos = TokenServer.realNanoseconds()
        state.withLock(visibleTo: self) { state in
            state.marks.append(
                ProgramMark(
                    nanos: nanos, caller: firstCaller + subscriber, phase: state.phase,
                    text: "sub \(subscriber) \(text)"))
        }
    }
}
