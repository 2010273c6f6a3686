import SessionContract
import TokenServer

/// What a `crash-restart` run recorded: each session process as it reported itself, what the
/// storage held after it, the server's ledger, and what the harness found on disk.
package struct CrashRestartHistory: Sendable {
    /// One session process: what its callers were handed, line by line as it happened, and what
    /// the driver found in the storage once it had ended.
    package struct Life: Sendable {
        package let index: Int
        package let crash: CrashPoint
        /// It signed in: no live session was carried over to it.
        package let signedIn: Bool
        package var first: Result<UInt64, SessionError>?
        package var got: [Result<UInt64, SessionError>] = []
        package var signedOut = false
        package var done = false
        package var killed = false
        /// Generations the server issued to this process, delivered or not, and those issued to
        /// its storm (after its first token).
        package var issued: [UInt64] = []
        package var issuedInStorm: [UInt64] = []
        /// What the storage held once the process had ended, read by the driver itself.
        package var disk: StoredState = .empty
        /// The server refused a refresh token of this process (`invalid_grant`): the session is
        /// over at the server whether or not a caller lived to hear it.
        package var refused = false
        /// A storage call of this process failed to write: the run ends here, this process unjudged.
        package var storageFailed = false
        /// After `signOut()` returned: the files that still held the ended session's refresh
        /// token in clear (empty: none); `nil` when the process did not sign out.
        package var afterSignOut: [String]?

        package init(index: Int, crash: CrashPoint, signedIn: Bool) {
            self.index = index
            self.crash = crash
            self.signedIn = signedIn
        }

        /// The round did what its crash point needs: its storm got a grant from the server.
        /// Otherwise (the session had just been revoked) the point is tried again.
        package var landed: Bool { crash == .clean || !issuedInStorm.isEmpty }

        /// The highest generation any caller of this process was handed.
        package var handed: UInt64 {
            ([first].compactMap { try? $0?.get() } + got.compactMap { try? $0.get() }).max() ?? 0
        }

        package var sawRevocation: Bool {
            refused || first == .failure(.refreshTokenRevoked) || got.contains(.failure(.refreshTokenRevoked))
        }
    }

    /// The session as the previous process left it.
    package struct Carried: Sendable {
        package var live = false
        package var ended = false
        package var handed: UInt64 = 0
        package var latestIssued: UInt64 = 0
        package var crash = CrashPoint.clean

        package init() {}

        /// How `life` leaves the session for the next process. A rotation lost before `life` was
        /// judged at its start and is gone: the session goes on from what `life` restored.
        package func next(after life: Life, restored: StoredState?) -> Carried {
            var next = Carried()
            let hasSession = (try? life.first?.get()) != nil
            next.ended = life.signedOut
            next.live = hasSession && !life.signedOut && !life.sawRevocation
            next.handed = life.signedIn ? life.handed : max(handed, life.handed)
            var base: UInt64 = 0
            if !life.signedIn, case .session(let generation)? = restored { base = generation }
            next.latestIssued = max(base, life.issued.max() ?? 0)
            next.crash = life.crash
            return next
        }
    }

    /// The processes, in order, each judged (the last one cut short by a storage failure is not
    /// here).
    package var lives: [Life] = []
    /// Every call the server saw, each named by its process (``context(_:_:_:)``).
    package var ledger: [LedgerEntry] = []
    /// Callers in each process's storm.
    package var stormSize: Int
    /// The backend's name, and whether it promises protection at rest.
    package var backend: String
    package var protectsAtRest: Bool
    /// Files that held a secret in clear at any point, and files the group or others could read.
    package var exposures: [String] = []
    package var looseFiles: [String] = []

    package init(stormSize: Int, backend: String, protectsAtRest: Bool) {
        self.stormSize = stormSize
        self.backend = backend
        self.protectsAtRest = protectsAtRest
    }

    /// The server's context for a process's calls: `process 3, mid-save, storm`.
    package static func context(_ index: Int, _ crash: CrashPoint, _ phase: String) -> String {
        "process \(index), \(crash.rawValue), \(phase)"
    }

    /// `process 3` from a ledger entry's context (`process 3, mid-save, storm`).
    package static func process(of entry: LedgerEntry) -> String {
        String(entry.context.prefix { $0 != "," })
    }

    /// The calls the server saw from process `index`.
    package func entries(of index: Int) -> [LedgerEntry] {
        ledger.filter { Self.process(of: $0) == "process \(index)" }
    }
}

/// The promises a store makes across crashes, over a `crash-restart` history: a stored session
/// reads back (I14), a rotation handed out survives the crash and a session nothing lost goes on
/// (I15), a sign-out is durable, on disk too (I16), a backend that promises protection at rest
/// keeps it (I17); and within each process one refresh per storm, one outcome for its callers,
/// no token redeemed twice (I1, I2, I7).
package enum CrashRestartJudge {
    package typealias Finding = ContractJudge.Finding

    /// What the history counts, beside the findings.
    package struct Tally: Sendable, Equatable {
        /// Restarts over a live session.
        package var restarts = 0
        /// Rotations the server issued that the storage did not hold at a restart, by crash point.
        package var rotationsLost: [String: Int] = [:]
        /// Restarted sessions the server ended for a reused refresh token, and those that went on.
        package var endedByReuse = 0
        package var survived = 0
        /// Refresh calls of the processes' storms; storms; their callers, served and failed.
        package var stormRefreshCalls = 0
        package var storms = 0
        package var stormCallers = 0
        package var served: UInt64 = 0
        package var failed: UInt64 = 0

        package init() {}
    }

    /// Everything found over `history`, in the order the processes ran, then the ledger's audit,
    /// then what was on disk; and the tally.
    package static func judge(_ history: CrashRestartHistory) -> (findings: [Finding], tally: Tally) {
        var findings: [Finding] = []
        var tally = Tally()
        var carried = CrashRestartHistory.Carried()
        var previous: CrashRestartHistory.Life?
        for life in history.lives {
            if let leftovers = life.afterSignOut, !leftovers.isEmpty {
                findings.append(
                    Finding(
                        invariant: .signOutDurable,
                        summary: "after signOut() returned in process \(life.index), the ended session's refresh "
                            + "token was still on disk",
                        trace: leftovers))
            }
            if let previous {
                findings += restart(
                    after: carried, previous, life, entries: history.entries(of: life.index), tally: &tally)
            }
            carried = carried.next(after: life, restored: previous?.disk)
            previous = life
        }
        findings += audit(history, tally: &tally)
        findings += AtRestJudge.judge(
            backend: history.backend, protectsAtRest: history.protectsAtRest, exposures: history.exposures,
            looseFiles: history.looseFiles)
        return (findings, tally)
    }

    /// I14, I15, I16 over a restart: what the storage held when `life` started (read by the
    /// driver once `previous` had ended), against how `previous` left the session; what the
    /// restarted store presented to the server; whether a session saved intact went on.
    static func restart(
        after carried: CrashRestartHistory.Carried, _ previous: CrashRestartHistory.Life,
        _ life: CrashRestartHistory.Life, entries: [LedgerEntry], tally: inout Tally
    ) -> [Finding] {
        var findings: [Finding] = []
        func report(_ invariant: Invariant, _ summary: String, trace: [String] = []) {
            findings.append(Finding(invariant: invariant, summary: summary, trace: trace))
        }
        let context = "process \(life.index) restarted after a \(carried.crash.rawValue) crash"
        if previous.disk == .unreadable {
            report(
                .restorable, "the stored session could not be read back: \(context)",
                trace: ["the previous process died at \(carried.crash.rawValue) while the storage was in use"])
        }
        if carried.ended, case .session(let generation) = previous.disk {
            report(
                .signOutDurable,
                "a session signed out before the crash was still in storage (generation \(generation)): \(context)",
                trace: ["signOut() had returned in process \(previous.index) before it was killed"])
        }
        guard carried.live else { return findings }
        tally.restarts += 1
        switch previous.disk {
        case .session(let restored):
            if restored < carried.handed {
                report(
                    .durableRotation,
                    "callers had generation \(carried.handed), but the storage held generation \(restored): \(context)",
                    trace: [
                        "the grant of generation \(carried.handed) was handed out before it was saved "
                            + "(persist before publish)"
                    ])
            } else if restored < carried.latestIssued {
                tally.rotationsLost[carried.crash.rawValue, default: 0] += 1
                // The server may refuse the older refresh token (a reuse); the store may not give
                // the session up on its own.
                if !refused(entries), let why = callerFailure(life) {
                    report(
                        .durableRotation,
                        "the restarted store ended a session the server had not refused: \(why): \(context)",
                        trace: ["the storage held generation \(restored); the server refused no refresh token"])
                }
            } else if let why = callerFailure(life) ?? refusal(entries) {
                report(
                    .durableRotation,
                    "nothing was lost at the crash, yet the session did not survive the restart: \(why): \(context)",
                    trace: ["the storage held generation \(restored), the latest the server had issued"])
            }
            if let presented = entries.first(where: { $0.call == .refresh })?.presentedGeneration,
                presented < restored
            {
                report(
                    .durableRotation,
                    "the storage held generation \(restored)'s access token, but the restarted store presented "
                        + "generation \(presented)'s refresh token: \(context)",
                    trace: ["a grant is saved whole: the access token with the refresh token that came with it"])
            }
            if !life.signedIn, life.first == .failure(.signedOut) {
                report(.durableRotation, "the storage held a session but the store came back signed out: \(context)")
            }
        case .empty:
            if carried.handed > 0 {
                report(
                    .durableRotation,
                    "callers had generation \(carried.handed), but the storage held no session: \(context)")
            }
        case .unreadable:
            break  // I14 above
        }
        if refused(entries) || life.sawRevocation {
            tally.endedByReuse += 1
        } else if callerFailure(life) == nil, (try? life.first?.get()) != nil {
            tally.survived += 1
        }
        return findings
    }

    /// How a restarted session's callers saw it end: its first call failed, or a caller of its
    /// storm got `refreshTokenRevoked` or `signedOut` (a sign-out of its own aside).
    static func callerFailure(_ life: CrashRestartHistory.Life) -> String? {
        if case .failure(let error)? = life.first { return "its first call failed with \(error)" }
        let ownSignOut = life.crash == .signOutDuringRefresh
        let error = life.got.compactMap { result -> SessionError? in
            guard case .failure(let error) = result else { return nil }
            return error == .refreshTokenRevoked || (error == .signedOut && !ownSignOut) ? error : nil
        }.first
        return error.map { "a caller of its storm got \($0)" }
    }

    /// Whether the server refused a refresh token of this process (`invalid_grant`).
    package static func refused(_ entries: [LedgerEntry]) -> Bool { refusal(entries) != nil }

    /// The server's refusal of a refresh token of this process, described; `nil` if none.
    static func refusal(_ entries: [LedgerEntry]) -> String? {
        entries.first { $0.call == .refresh && $0.isInvalidGrant }.map {
            "the server refused its refresh token (\($0.outcome.rawValue))"
        }
    }

    /// I1, I2 and I7 within each process: one refresh per storm, one outcome for its callers,
    /// no token redeemed twice by the same process. A refresh token presented again after a
    /// restart is judged by I15 (handed out) or counted as a lost rotation, not here.
    static func audit(_ history: CrashRestartHistory, tally: inout Tally) -> [Finding] {
        var findings: [Finding] = []
        let entries = history.ledger
        var firstRedeemedBy: [UInt64: String] = [:]
        for entry in entries where entry.call == .refresh && entry.isRedemption {
            if let generation = entry.presentedGeneration, firstRedeemedBy[generation] == nil {
                firstRedeemedBy[generation] = CrashRestartHistory.process(of: entry)
            }
        }
        var handed: Set<UInt64> = []
        for life in history.lives {
            for result in [life.first].compactMap({ $0 }) + life.got {
                if let gen = try? result.get() { handed.insert(gen) }
            }
        }
        for life in history.lives {
            let name = "process \(life.index)"
            let slice = entries.filter { entry in
                guard CrashRestartHistory.process(of: entry) == name else { return false }
                guard let generation = entry.presentedGeneration, entry.call == .refresh else { return true }
                return firstRedeemedBy[generation] == name
            }
            findings += Oracle.ledgerFindings(slice, observed: { handed.contains($0) })
            let refreshes = entries.filter {
                CrashRestartHistory.process(of: $0) == name && $0.call == .refresh && $0.context.hasSuffix(", storm")
            }
            if refreshes.count > 1 {
                findings.append(
                    Finding(
                        invariant: .singleFlight,
                        summary: "\(name)'s 401 storm of \(history.stormSize) callers made \(refreshes.count) "
                            + "refresh calls",
                        trace: refreshes.prefix(3).map(Oracle.describe)))
            }
            let generations = Set(life.got.compactMap { try? $0.get() })
            if generations.count > 1, !life.crash.signsOut {
                findings.append(
                    Finding(
                        invariant: .sameOutcome,
                        summary: "callers of \(name)'s one storm got \(generations.count) different generations: "
                            + generations.sorted().map(String.init).joined(separator: ", ")))
            }
            tally.stormRefreshCalls += refreshes.count
            tally.storms += 1
            tally.stormCallers += life.got.count
            tally.served += UInt64(life.got.filter { (try? $0.get()) != nil }.count)
            tally.failed += UInt64(life.got.filter { (try? $0.get()) == nil }.count)
        }
        return findings
    }
}

/// I17 over what the harness found on disk: a backend that promises protection at rest keeps no
/// secret in clear and no file others can read.
package enum AtRestJudge {
    package static func judge(
        backend: String, protectsAtRest: Bool, exposures: [String], looseFiles: [String]
    ) -> [ContractJudge.Finding] {
        guard protectsAtRest else { return [] }
        var findings: [ContractJudge.Finding] = []
        if !exposures.isEmpty {
            findings.append(
                .init(
                    invariant: .sealedAtRest, summary: "the \(backend) storage kept secrets in clear on disk",
                    trace: exposures))
        }
        if !looseFiles.isEmpty {
            findings.append(
                .init(
                    invariant: .sealedAtRest,
                    summary: "the \(backend) storage wrote files the group or others can read",
                    trace: looseFiles))
        }
        return findings
    }
}
