import SessionContract
import TokenServer

/// What one phase of `session-states` recorded: every state each subscriber received, with when;
/// what the driver saw after each change it made; the refreshes a sign-out discarded; and the
/// server's ledger.
package struct StatesHistory: Sendable {
    /// One state a subscriber received, at real nanoseconds (the ledger's clock).
    package struct Received: Sendable {
        package let state: SessionState
        package let at: Int64

        package init(_ state: SessionState, at: Int64) {
            self.state = state
            self.at = at
        }
    }

    /// A subscriber whose latest state, at the deadline, was not the store's.
    package struct Behind: Sendable {
        package let subscriber: Int
        /// Its latest state then; `nil` when it had received none.
        package let latest: SessionState?

        package init(subscriber: Int, latest: SessionState?) {
            self.subscriber = subscriber
            self.latest = latest
        }
    }

    /// What the driver saw after one of its changes, in the order it saw them.
    package enum Observation: Sendable {
        /// After `event`, the subscribers not already behind were waited for until their latest
        /// state was `expected`; `behind` are those still on another at the deadline.
        case followed(event: String, expected: SessionState, behind: [Behind])
        /// A subscriber that joined during `event`'s session got `first` as its first state
        /// (`nil`: nothing within `within`), while the store's was `expected`.
        case joined(event: String, expected: SessionState, first: SessionState?, within: Duration)
    }

    /// How many subscribers the phase had, the slow one included.
    package var subscribers: Int
    package var observations: [Observation] = []
    /// Every state each subscriber received, by subscriber.
    package var received: [[Received]] = []
    /// Generations issued by refreshes that a sign-out discarded: no subscriber may be told of them.
    package var discarded: Set<UInt64> = []
    /// Every call the server saw in the phase.
    package var ledger: [LedgerEntry] = []
    /// Whether the phase played every round. A phase cut short by a hung store is judged on what
    /// the driver saw before the hang, not on whole sequences it never finished.
    package var complete = false

    package init(subscribers: Int = 0) { self.subscribers = subscribers }
}

/// The promises of ``ObservableSessionStore`` over a `session-states` history: every subscriber
/// reaches each new state (I23); no state of a session after the `signedOut` that ended it, and
/// nothing of a refresh a sign-out discarded (I24); sessions and generations never going back (I25).
package enum StatesJudge {
    /// The findings, in the order the facts behind them happened: the observations first, as
    /// the driver saw them, then each subscriber's whole sequence.
    package static func judge(_ history: StatesHistory) -> [ContractJudge.Finding] {
        var findings: [ContractJudge.Finding] = []
        for observation in history.observations {
            switch observation {
            case .followed(let event, let expected, let behind):
                guard let first = behind.first else { continue }
                findings.append(
                    .init(
                        invariant: .observersSeeFinalState,
                        summary:
                            "\(behind.count) of \(history.subscribers) subscriber(s) never saw '\(expected)' after \(event)",
                        trace: [
                            "subscriber \(first.subscriber)'s latest state: \(first.latest.map { "\($0)" } ?? "nothing received")"
                        ]))
            case .joined(let event, let expected, let first, let within):
                guard first != expected else { continue }
                findings.append(
                    .init(
                        invariant: .observersSeeFinalState,
                        summary:
                            "a subscriber that joined while signed in did not get the current state first (\(event))",
                        trace: [
                            "its first state: \(first.map { "\($0)" } ?? "nothing within \(within)"); the store's: \(expected)"
                        ]))
            }
        }
        if history.complete { findings += judgeSequences(history) }
        return findings
    }

    /// Over each subscriber's whole sequence: no state of a session after the `signedOut` that
    /// followed it, nothing of a discarded refresh, sessions and generations never going back.
    package static func judgeSequences(_ history: StatesHistory) -> [ContractJudge.Finding] {
        var findings: [ContractJudge.Finding] = []
        var familyOf: [UInt64: UInt64] = [:]
        for entry in history.ledger {
            if let generation = entry.issuedGeneration { familyOf[generation] = entry.family }
        }
        for (index, log) in history.received.enumerated() {
            var seen: Set<UInt64> = []
            /// Families a `signed out` or `revoked` ended, with the state that ended them.
            var dead: [UInt64: SessionState] = [:]
            var latest: (family: UInt64, generation: UInt64)?
            var previous: SessionState?
            for received in log {
                let state = received.state
                defer { previous = state }
                // Signed out, or revoked: over until the next sign-in, which is a new family.
                if state == .signedOut || state == .revoked {
                    for family in seen where dead[family] == nil { dead[family] = state }
                    continue
                }
                guard let generation = state.generation else { continue }
                let family = familyOf[generation] ?? 0
                let before = previous.map { "\($0)" } ?? "nothing"
                if history.discarded.contains(generation) {
                    findings.append(
                        .init(
                            invariant: .noSignedInAfterSignOut,
                            summary: "a subscriber was told of a refresh that a sign-out had discarded",
                            trace: ["subscriber \(index): '\(state)' (family \(family)), after '\(before)'"]))
                } else if let end = dead[family] {
                    findings.append(
                        .init(
                            invariant: .noSignedInAfterSignOut,
                            summary: "a subscriber saw a session's state after the '\(end)' that ended it",
                            trace: ["subscriber \(index): '\(state)' of family \(family) after '\(end)'"]))
                }
                if let latest, family < latest.family || (family == latest.family && generation < latest.generation) {
                    findings.append(
                        .init(
                            invariant: .stateOrder,
                            summary:
                                "a subscriber saw states out of order: generation \(generation) (family \(family)) after generation \(latest.generation) (family \(latest.family))",
                            trace: ["subscriber \(index): '\(state)' after '\(before)'"]))
                }
                if latest.map({ family > $0.family || (family == $0.family && generation > $0.generation) }) ?? true {
                    latest = (family, generation)
                }
                seen.insert(family)
            }
        }
        return findings
    }
}
