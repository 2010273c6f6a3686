/// The invariants every run checks, by stable id (the README's "Invariants" table says what each
/// one demands and how it is checked).
public enum Invariant: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case singleFlight = 1
    case sameOutcome = 2
    case noHang = 3
    case fresh = 4
    case monotonic = 5
    case staleRejectionDoesNotRefresh = 6
    case noReuse = 7
    case signOutFence = 8
    case noCrossUserLeak = 9
    case failureSharedNotSticky = 10
    case cancellationIsolated = 11
    case served = 12
    case sessionKept = 13
    case restorable = 14
    case durableRotation = 15
    case signOutDurable = 16
    case sealedAtRest = 17
    case promptSingleFlight = 18
    case stepUpSharedNotSticky = 19
    case elevationEndsWithSession = 20
    case stepUpIndependent = 21
    case clientFollowsSession = 22
    case observersSeeFinalState = 23
    case noSignedInAfterSignOut = 24
    case stateOrder = 25
    case genuine = 26
    case revocationFinal = 27

    public var name: String {
        switch self {
        case .singleFlight: "single-flight"
        case .sameOutcome: "same-outcome"
        case .noHang: "no-hang"
        case .fresh: "fresh"
        case .monotonic: "monotonic"
        case .staleRejectionDoesNotRefresh: "401-refreshes-current-only"
        case .noReuse: "no-reuse"
        case .signOutFence: "sign-out-fence"
        case .noCrossUserLeak: "no-cross-user-leak"
        case .failureSharedNotSticky: "failure-shared-not-sticky"
        case .cancellationIsolated: "cancellation-isolated"
        case .served: "served"
        case .sessionKept: "session-kept"
        case .restorable: "restorable"
        case .durableRotation: "durable-rotation"
        case .signOutDurable: "sign-out-durable"
        case .sealedAtRest: "sealed-at-rest"
        case .promptSingleFlight: "prompt-single-flight"
        case .stepUpSharedNotSticky: "step-up-shared-not-sticky"
        case .elevationEndsWithSession: "elevation-ends-with-session"
        case .stepUpIndependent: "step-up-does-not-block-session"
        case .clientFollowsSession: "client-follows-session"
        case .observersSeeFinalState: "observers-see-final-state"
        case .noSignedInAfterSignOut: "no-signed-in-after-sign-out"
        case .stateOrder: "state-order"
        case .genuine: "genuine"
        case .revocationFinal: "revocation-final"
        }
    }

    /// `I1 single-flight`.
    /// The stable id reports and CSV name it by: `I1`.
    public var id: String { "I\(rawValue)" }

    public var description: String { "\(id) \(name)" }
}

/// One broken invariant, with what is needed to see and reproduce it. Never holds a
/// token value or a user id.
public struct Violation: Sendable, Hashable, Codable, CustomStringConvertible {
    public let invariant: Invariant
    public let scenario: String
    public let seed: UInt64
    /// What went wrong, in one line.
    public let summary: String
    /// The few events that broke it, oldest first.
    public let trace: [String]
    /// How many times this invariant broke in the run (only the first is traced).
    public var occurrences: Int

    public var description: String {
        "\(invariant) in \(scenario) (seed \(seed)): \(summary)" + (occurrences > 1 ? " [×\(occurrences)]" : "")
    }
}

extension Scenario.Kind {
    /// The invariants a scenario of this kind judges, for reports that list each one (JUnit):
    /// the session invariants I1–I13, I26 and I27 in the scenarios over one store; the storage invariants
    /// where a store restarts or shares its storage; the step-up and state-stream ones in
    /// theirs. The ledger's single-flight (I1) and no-reuse (I7), and the watchdog's no-hang
    /// (I3), are judged everywhere. A report adds any invariant a run violated beyond these.
    public var judgedInvariants: [Invariant] {
        let ids: [Int] =
            switch self {
            case .steadyReads, .expiryStorm, .rejectionStorm, .signOutRace, .userSwitch, .flakyServer,
                .cancellationStorm, .family, .scaleStorm:
                Array(1...13) + [15, 16, 26, 27]
            case .crashRestart: [1, 2, 3, 7, 14, 15, 16, 17]
            case .sharedStorage, .replicas: [1, 3, 4, 6, 7, 8, 12, 13, 14, 15, 16]
            // The session's own calls there are judged by the contract's model too.
            case .stepUp: [1, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 18, 19, 20, 21, 22, 26, 27]
            case .sessionStates: [1, 3, 4, 5, 6, 7, 8, 9, 12, 13, 23, 24, 25, 26, 27]
            }
        return ids.compactMap(Invariant.init(rawValue:))
    }
}
