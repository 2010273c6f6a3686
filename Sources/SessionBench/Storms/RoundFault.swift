import TokenServer

/// The fault a flaky round scripts into the server's next refreshes.
enum RoundFault: String, Sendable, CaseIterable {
    case healthy
    /// The storm's refresh fails with a transient error; the next call must refresh again.
    case transient
    /// The storm's refresh times out.
    case timeout
    /// The storm's refresh rotates the token but the answer is lost: the retry is a reuse,
    /// and the server ends the session (the one way a correct client can be logged out).
    case lostResponse
    /// The storm's refresh and the next two fail: waiters must not retry on their own.
    case outage
    /// The storm's refresh fails, and so does the next call's.
    case backToBack
    /// An administrator revoked the session before the storm: its refresh is refused
    /// (`invalid_grant`), the session is over until the next sign-in.
    case revoked
    /// The storm's refresh rotates the token, but the access token arrives expired: the round
    /// fails, and the next refresh must present the new refresh token, not the used one.
    case expiredOnArrival

    /// Scripted answers: the storm's refresh first, then the follow-up calls'.
    var script: [FaultModel.Fault?] {
        switch self {
        case .healthy, .revoked: []
        case .transient: [.transientFailure]
        case .timeout: [.timeout]
        case .lostResponse: [.lostResponse]
        case .expiredOnArrival: [.expiredOnArrival]
        case .outage: [.transientFailure, .transientFailure, .transientFailure]
        case .backToBack: [.transientFailure, .transientFailure]
        }
    }

    /// A seeded order of faults for `rounds` rounds, in proportion to `faults`' rates, with
    /// every fault class the rates name present at least once when there are enough rounds.
    static func plan(rounds: Int, faults: FaultModel, random: inout SeededRandom) -> [RoundFault] {
        func share(_ rate: Double) -> Int { rate > 0 ? max(1, Int((Double(rounds) * rate).rounded())) : 0 }
        var classes: [(RoundFault, Int)] = [
            (.transient, share(faults.transientFailureRate)), (.timeout, share(faults.timeoutRate)),
            (.outage, faults.transientFailureRate > 0 ? max(1, rounds / 10) : 0),
            (.backToBack, faults.transientFailureRate > 0 ? max(1, rounds / 10) : 0),
            (.lostResponse, share(faults.lostResponseRate)),
            (.revoked, faults.transientFailureRate > 0 ? max(1, rounds / 20) : 0),
            (.expiredOnArrival, faults.transientFailureRate > 0 ? 1 : 0),
        ]
        // One of each class first, then the rest of each share, then healthy rounds.
        var deck: [RoundFault] = []
        for index in classes.indices where classes[index].1 > 0 {
            deck.append(classes[index].0)
            classes[index].1 -= 1
        }
        for (fault, count) in classes { deck += repeatElement(fault, count: count) }
        deck = Array(deck.prefix(rounds))
        deck += repeatElement(.healthy, count: rounds - deck.count)
        deck.shuffle(using: &random)
        // A failure first, before the store has refreshed much: a store that keeps its first
        // failure shows it at once, before anything could pass for a refresh rate limit.
        if let first = deck.firstIndex(of: .transient) { deck.swapAt(0, first) }
        return deck
    }
}
