import SessionContract
import TokenServer

/// Which transitions of the session lifecycle (``SessionTimeline``) a run drove: for every call,
/// sign-in and sign-out, the state its account was in when it started, and for every refresh the
/// server answered, how. Read from the same facts the judge reads, never from a store.
public struct LifecycleCoverage: Sendable, Codable, Hashable {
    /// An account's state as the model sees it.
    public enum State: String, Sendable, Codable, CaseIterable {
        case signedOut = "signed out"
        /// Signed in, the token fresh.
        case fresh
        /// Signed in, the token inside the refresh skew of expiry.
        case due
        case expired
        /// A refresh of the session under way.
        case refreshing
        /// The server refused the session's refresh token.
        case revoked
    }

    /// What happened to it.
    public enum Event: String, Sendable, Codable, CaseIterable {
        case validToken = "validToken()"
        case rejectedCurrent = "401 for the current token"
        case rejectedStale = "401 for an older token"
        case currentToken = "currentToken()"
        case cancelled = "a waiter cancelled"
        case signInSameUser = "sign-in, same user"
        case signInOtherUser = "sign-in, another user"
        case signInRefused = "sign-in refused"
        case signOut = "sign-out"
        case refreshIssued = "refresh answered"
        case refreshFailed = "refresh failed (transient)"
        case refreshTimedOut = "refresh timed out"
        case refreshLost = "refresh answer lost"
        case refreshRefused = "refresh refused (invalid_grant)"
    }

    /// One transition: an event met in a state.
    public struct Transition: Sendable, Codable, Hashable, Comparable, CustomStringConvertible {
        public let state: State
        public let event: Event

        public init(state: State, event: Event) { (self.state, self.event) = (state, event) }

        public var description: String { "\(event.rawValue) when \(state.rawValue)" }

        /// Every transition, states major, in the order of the cases.
        static let all: [Transition] = State.allCases.flatMap { state in
            Event.allCases.map { Transition(state: state, event: $0) }
        }

        private static let (states, events) = (State.allCases, Event.allCases)

        /// Its bit in ``LifecycleCoverage/seenBits``.
        var bit: UInt128 {
            1 << (Self.states.firstIndex(of: state)! * Self.events.count + Self.events.firstIndex(of: event)!)
        }

        public static func < (lhs: Self, rhs: Self) -> Bool {
            (State.allCases.firstIndex(of: lhs.state)!, Event.allCases.firstIndex(of: lhs.event)!)
                < (State.allCases.firstIndex(of: rhs.state)!, Event.allCases.firstIndex(of: rhs.event)!)
        }
    }

    /// The transitions the default scenarios drive, together, for a store with every capability:
    /// each event from each state it can meet.
    public static let expected: [Transition] = {
        func all(_ event: Event, _ states: [State]) -> [Transition] {
            states.map { Transition(state: $0, event: event) }
        }
        let signedIn: [State] = [.fresh, .due, .expired, .refreshing, .revoked]
        return all(.validToken, [.signedOut] + signedIn)
            + all(.rejectedCurrent, [.fresh, .expired, .refreshing, .revoked])
            + all(.rejectedStale, [.fresh, .refreshing])
            + all(.currentToken, [.signedOut, .fresh, .expired, .refreshing, .revoked])
            + all(.cancelled, [.refreshing])
            + all(.signInSameUser, [.signedOut, .revoked])
            + all(.signInOtherUser, [.fresh, .refreshing, .revoked])
            + all(.signInRefused, [.signedOut, .fresh])
            + all(.signOut, [.signedOut, .fresh, .refreshing])
            + all(.refreshIssued, [.refreshing]) + all(.refreshFailed, [.refreshing])
            + all(.refreshTimedOut, [.refreshing]) + all(.refreshLost, [.refreshing])
            + all(.refreshRefused, [.refreshing])
    }()

    /// The transitions seen, a bit each (``Transition/bit``): `explore` adds and merges them for
    /// every schedule, so a set's hashing would cost each schedule more than its judging of them.
    private var seenBits: UInt128 = 0
    /// The transitions seen.
    public var seen: Set<Transition> { Set(Transition.all.filter { seenBits & $0.bit != 0 }) }
    /// Whether calls were waiting when a sign-in or sign-out began (parked across it), and whether
    /// the coordinator called the store right after one returned, from the same task.
    public private(set) var parkedAcrossFence = false
    public private(set) var readRightAfterFence = false

    public init() {}

    private enum CodingKeys: String, CodingKey { case seen, parkedAcrossFence, readRightAfterFence }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        for transition in try container.decode([Transition].self, forKey: .seen) { insert(transition) }
        parkedAcrossFence = try container.decode(Bool.self, forKey: .parkedAcrossFence)
        readRightAfterFence = try container.decode(Bool.self, forKey: .readRightAfterFence)
    }

    /// As before the bits: `seen` a list of transitions (in order), then the two flags.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seen.sorted(), forKey: .seen)
        try container.encode(parkedAcrossFence, forKey: .parkedAcrossFence)
        try container.encode(readRightAfterFence, forKey: .readRightAfterFence)
    }

    private mutating func insert(_ transition: Transition) { seenBits |= transition.bit }

    /// Adds what `calls` and the events and refreshes of `timeline` drove.
    package mutating func add(_ calls: [ObservedCall], timeline: SessionTimeline, skew: Duration) {
        for call in calls {
            let family = timeline.issued[requested(call) ?? 0]?.family
            let event: Event =
                switch call.request {
                case .validToken: call.wasCancelled ? .cancelled : .validToken
                case .currentToken: .currentToken
                case .tokenRejected(let generation):
                    family.flatMap { timeline.newestDelivered(family: $0, by: call.startedNanos) }.map {
                        $0 > generation ? .rejectedStale : .rejectedCurrent
                    } ?? .rejectedCurrent
                }
            if let state = state(of: call.account, at: call.startedNanos, clock: call.startedAt, timeline, skew: skew) {
                insert(Transition(state: state, event: event))
            }
        }
        for (account, events) in timeline.events {
            var previousSlot: Int?
            for event in events {
                let state = state(of: account, at: event.startedNanos - 1, clock: event.clockAt, timeline, skew: skew)
                switch event.kind {
                case .signOut:
                    if let state { insert(Transition(state: state, event: .signOut)) }
                case .signIn(let slot, let family):
                    let kind: Event =
                        family == nil
                        ? .signInRefused
                        : previousSlot == nil || previousSlot == slot
                            ? .signInSameUser
                            : .signInOtherUser
                    if let state { insert(Transition(state: state, event: kind)) }
                    if family != nil { previousSlot = slot }
                }
                if calls.contains(where: {
                    $0.account == account && $0.startedNanos < event.startedNanos && $0.endedNanos > event.startedNanos
                }) {
                    parkedAcrossFence = true
                }
                if calls.contains(where: {
                    $0.account == account && $0.caller == -1 && $0.startedNanos > event.returnedNanos
                }) {
                    readRightAfterFence = true
                }
            }
        }
        for refreshes in timeline.refreshes.values {
            for entry in refreshes {
                let event: Event? =
                    switch entry.outcome {
                    case .issued, .reuseAccepted: entry.deliveredExpired ? .refreshFailed : .refreshIssued
                    case .transientFailure, .dropped: .refreshFailed
                    case .timedOut: .refreshTimedOut
                    case .responseLost: .refreshLost
                    case .reuseDetected, .familyRevoked, .unknownToken: .refreshRefused
                    case .refused: nil
                    }
                if let event { insert(Transition(state: .refreshing, event: event)) }
            }
        }
    }

    /// The expected transitions (``expected``; `currentToken()`'s only for a store with the
    /// synchronous read) not seen, in order.
    public func missing(synchronousRead: Bool) -> (expected: Int, missing: [Transition]) {
        let expected = Self.expected.filter { $0.event != .currentToken || synchronousRead }
        return (expected.count, expected.filter { seenBits & $0.bit == 0 })
    }

    /// `22 of 33 transitions; not driven: …` (four named, then a count).
    public func summary(synchronousRead: Bool) -> String {
        let (expected, missing) = missing(synchronousRead: synchronousRead)
        var text = "\(expected - missing.count) of \(expected) transitions"
        if !missing.isEmpty {
            text +=
                "; not driven: " + missing.prefix(4).map(\.description).joined(separator: ", ")
                + (missing.count > 4 ? ", and \(missing.count - 4) more" : "")
        }
        return text
    }

    /// Another run's transitions, added to these.
    public mutating func merge(_ other: LifecycleCoverage) {
        seenBits |= other.seenBits
        parkedAcrossFence = parkedAcrossFence || other.parkedAcrossFence
        readRightAfterFence = readRightAfterFence || other.readRightAfterFence
    }

    private func requested(_ call: ObservedCall) -> UInt64? {
        if case .tokenRejected(let generation) = call.request { return generation }
        return nil
    }

    /// The model's state of `account` at `instant`, with the store's clock then.
    private func state(
        of account: Int, at instant: Int64, clock: TokenInstant?, _ timeline: SessionTimeline, skew: Duration
    ) -> State? {
        let current = timeline.current(account: account, at: instant)
        guard let family = current.families.last, let session = timeline.sessions[family] else {
            return current.noneAllowed ? .signedOut : nil
        }
        if (session.refusedAt ?? .max) <= instant { return .revoked }
        if timeline.refreshOverlaps(family: family, instant, instant) != nil { return .refreshing }
        guard let clock, let newest = timeline.newestDelivered(family: family, by: instant),
            let expiry = timeline.issued[newest]?.expiresAt
        else { return nil }
        if expiry <= clock { return .expired }
        if expiry <= clock + skew { return .due }
        return .fresh
    }
}
