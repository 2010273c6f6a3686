/// The invariants every run checks, by stable id; `summary` says what each one demands and how it is
/// checked (docs/invariants.md shows them as a table).
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

    /// What the invariant demands and how it is checked, in one Markdown line: the "how it is checked"
    /// column of docs/invariants.md, which is generated from it.
    public var summary: String {
        switch self {
        case .singleFlight:
            """
            in every scenario, from the ledger: no two refresh calls of one session in flight at once, and no \
            refresh token presented again after its grant reached the store; in storms against a healthy server, \
            exactly one refresh call per expiry per account, whenever callers arrive (before, during or right \
            after the refresh); in `shared-storage` and `replicas`, exactly one per 401 storm or expiry across \
            every instance and process holding the session
            """
        case .sameOutcome:
            """
            when a storm made one refresh call, every caller still waiting when it was answered got the same token \
            or error
            """
        case .noHang:
            """
            every call returns before the watchdog's deadline; the report says which refresh the stuck callers \
            waited on
            """
        case .fresh:
            """
            no token is expired when returned, on the server's own expiry for it (not the one the token claims); a \
            token the store already held when the call started is outside the refresh skew (`expiry-storm`'s odd \
            rounds stop halfway into it); `currentToken()` gives no token while a refresh of it spans the call
            """
        case .monotonic:
            """
            no call gets an older generation of a session than one handed out before it started (per session: \
            across a user switch, numbers say nothing)
            """
        case .staleRejectionDoesNotRefresh:
            """
            a 401 for the current token brings a newer one (never the same token back); 401s for an older token \
            cause no server call and return the current token
            """
        case .noReuse:
            """
            the server never sees a used refresh token, except the one retry a lost answer forces; a reuse's trace \
            points back to the refresh whose grant the store dropped
            """
        case .signOutFence:
            """
            no call started after `signOut()` returned gets a token of the ended session — whether a refresh was \
            in flight or the token sat in a cache; waiters of a refresh the sign-out discarded get `signedOut`, \
            never its token; no refresh of the ended session is sent after it returned (one decided before it is \
            excused); the synchronous read too
            """
        case .noCrossUserLeak:
            """
            no call started after user B's sign-in returned gets user A's token; no call ever gets another \
            account's token; the fence holds when the new user's sign-in is refused
            """
        case .failureSharedNotSticky:
            """
            a `refreshFailed` needs a refresh that failed while the call waited, or that the store was still \
            handing to its waiters when it began (an old failure replayed is sticky); waiters of a failed refresh do not each retry (no more than one extra attempt per storm)
            """
        case .cancellationIsolated:
            """
            a caller that was not cancelled never gets `cancelled`, nor fails because the refresh it waited on was \
            cancelled with another caller (the server sees that as a dropped connection); in `step-up`, two \
            clinical requests cancelled while the prompt is open (one before it asks, one parked on the prompt) \
            each return, with `cancelled` or the prompt's outcome, and the prompt goes on for the others
            """
        case .served:
            """
            against a server that answered, a call gets a token: an error with no failed refresh behind it is a \
            store giving up; in steady runs every error is judged the same way, and counted apart from served \
            calls; `signIn` succeeds when the server granted and throws `signInFailed` when it refused; \
            `currentToken()` answers `nil` only with a reason (no session, a token due, a refresh possibly under \
            way)
            """
        case .sessionKept:
            """
            only the server (`invalid_grant`) or the user (sign-out, sign-in) ends a session: \
            `refreshTokenRevoked` only when \(ErrorRule.revokedWhen); `signedOut` only when \
            \(ErrorRule.signedOutWhen); and only the user starts one: no sign-in reaches the server outside \
            `signIn()`
            """
        case .restorable:
            """
            `crash-restart`: whatever the previous process was doing when it died, the storage reads back as a \
            session or as none — never torn or unreadable
            """
        case .durableRotation:
            """
            `crash-restart`: the storage holds the newest generation any caller was handed (persist before \
            publish); the restarted store presents the refresh token saved with the access token it restored; a \
            session saved intact goes on after the restart (its first call and its storm get tokens, the server \
            accepts what it presents). Losing a rotation no caller saw (a crash before the answer arrived, or \
            before or during its save) is counted, by cause, not a violation; and in every round scenario, for a \
            store that keeps its session (given a storage in memory there), every token handed out was saved first — and, for a store with a synchronous read, `currentToken()` read from a harness thread while each save is under way does not already answer with the token being saved; and every grant is saved whole, its refresh token the one the server issued with its access token
            """
        case .signOutDurable:
            """
            `crash-restart`: after `signOut()` returned, the storage holds no session — even when a refresh in \
            flight during the sign-out was answered afterwards — and no file holds the ended session's refresh \
            token in clear (a backup, a leftover of an interrupted write); and in every round scenario, a sign-out \
            or a sign-in clears a saved session before it returns, nothing of a session is saved after its end \
            returned (`sign-out-race` and `user-switch` end it while the store saves its refreshed grant, or a \
            sign-in's, the save held open until the fence returns), and nothing is held with nobody signed in
            """
        case .sealedAtRest:
            """
            `crash-restart`: a backend that promises protection keeps no access token, refresh token or user id in \
            any file, in clear or merely base64-encoded, nor in a file's name, and no file the group or others can \
            read; every backend's plaintext and file mode are reported either way
            """
        case .promptSingleFlight:
            """
            `step-up`: concurrent clinical requests with no fresh elevated token, through any API objects (kept or \
            made on demand), cause exactly one prompt; none while a fresh elevated token is held
            """
        case .stepUpSharedNotSticky:
            """
            `step-up`: every waiter of one prompt gets its outcome (the same elevated token, or the same \
            `stepUpDenied` / `stepUpDismissed`); after a denial or a dismissal the next request prompts again \
            rather than failing on a remembered answer
            """
        case .elevationEndsWithSession:
            """
            `step-up`: an elevated token is handed out only for the signed-in user's current session, never after \
            a sign-out or another user's sign-in, fresh or not; waiters of a prompt open when the session ends (a \
            sign-out, another user's sign-in) get `signedOut`, and the answer that comes later buys nothing
            """
        case .stepUpIndependent:
            """
            `step-up`: while a prompt is open, token reads (from the store, from an API object that waits on the \
            prompt, from a new one) and a 401 (which refreshes) of the same session complete within the hang \
            timeout, with the prompt still open
            """
        case .clientFollowsSession:
            """
            `step-up`: an API object made before sign-in, or in an earlier session, fails with `signedOut` with \
            nobody signed in, and after a sign-in serves that user's current session — never the previous user's \
            token; no server call (refresh or elevation) is made for a session after its sign-out, or another \
            user's sign-in, returned (nothing keeps it alive)
            """
        case .observersSeeFinalState:
            """
            `session-states`: after each change, every subscriber — 1 or 100, and a slow one — has the store's new \
            state as its latest (within 2 s), also after ten changes back to back; a subscriber that joins \
            mid-session gets the current state first
            """
        case .noSignedInAfterSignOut:
            """
            `session-states`: no subscriber is told of a session's state after the `signedOut` that ended it, nor \
            of a refresh that a sign-out discarded
            """
        case .stateOrder:
            """
            `session-states`: in each subscriber's sequence, sessions (sign-in order) and generations never go \
            back
            """
        case .genuine:
            """
            every token a call returns is one the server issued, whole: its value (by fingerprint), user, \
            generation and expiry as issued (a torn read of a cache, a token rebuilt with a later expiry)
            """
        case .revocationFinal:
            """
            once a caller was told `refreshTokenRevoked`, no call that starts later gets a token of that session \
            and no refresh of it is sent, until the next sign-in
            """
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

    package init(
        invariant: Invariant, scenario: String, seed: UInt64, summary: String, trace: [String], occurrences: Int
    ) {
        self.invariant = invariant
        self.scenario = scenario
        self.seed = seed
        self.summary = summary
        self.trace = trace
        self.occurrences = occurrences
    }

    public var description: String {
        "\(invariant) in \(scenario) (seed \(seed)): \(summary)" + (occurrences > 1 ? " [×\(occurrences)]" : "")
    }
}
