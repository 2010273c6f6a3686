import SessionContract
import SessionOracle
import SessionStorage
import TokenServer

/// The checks of `crash-restart`, from what the processes reported, the server's ledger and
/// the storage's files. None looks inside a store or a backend.
extension CrashRestartDriver {
    /// I14, I15, I16 over a restart: what the storage held when `life` started (read by the
    /// driver once `previous` had ended), against how `previous` left the session; what the
    /// restarted store presented to the server; whether a session saved intact went on. And
    /// the survival figures.
    func judgeRestart(
        after carried: Carried, _ previous: Incarnation, _ life: Incarnation, entries: [LedgerEntry],
        outcome: inout DriverOutcome
    ) {
        let context = "process \(life.index) restarted after a \(carried.crash.rawValue) crash"
        if previous.disk == .unreadable {
            oracle.report(
                .restorable, "the stored session could not be read back: \(context)",
                trace: ["the previous process died at \(carried.crash.rawValue) while the storage was in use"])
        }
        if carried.ended, case .session(let generation) = previous.disk {
            oracle.report(
                .signOutDurable,
                "a session signed out before the crash was still in storage (generation \(generation)): \(context)",
                trace: ["signOut() had returned in process \(previous.index) before it was killed"])
        }
        guard carried.live else { return }
        outcome.persistence?.restarts += 1
        switch previous.disk {
        case .session(let restored):
            if restored < carried.handed {
                oracle.report(
                    .durableRotation,
                    "callers had generation \(carried.handed), but the storage held generation \(restored): \(context)",
                    trace: [
                        "the grant of generation \(carried.handed) was handed out before it was saved "
                            + "(persist before publish)"
                    ])
            } else if restored < carried.latestIssued {
                outcome.persistence?.rotationsLost[carried.crash.rawValue, default: 0] += 1
                // The server may refuse the older refresh token (a reuse); the store may not give
                // the session up on its own.
                if !Self.refused(entries), let why = Self.callerFailure(life) {
                    oracle.report(
                        .durableRotation,
                        "the restarted store ended a session the server had not refused: \(why): \(context)",
                        trace: ["the storage held generation \(restored); the server refused no refresh token"])
                }
            } else if let why = Self.callerFailure(life) ?? Self.refusal(entries) {
                oracle.report(
                    .durableRotation,
                    "nothing was lost at the crash, yet the session did not survive the restart: \(why): \(context)",
                    trace: ["the storage held generation \(restored), the latest the server had issued"])
            }
            if let presented = entries.first(where: { $0.call == .refresh })?.presentedGeneration,
                presented < restored
            {
                oracle.report(
                    .durableRotation,
                    "the storage held generation \(restored)'s access token, but the restarted store presented "
                        + "generation \(presented)'s refresh token: \(context)",
                    trace: ["a grant is saved whole: the access token with the refresh token that came with it"])
            }
            if !life.signedIn, life.first == .failure(.signedOut) {
                oracle.report(
                    .durableRotation, "the storage held a session but the store came back signed out: \(context)")
            }
        case .empty:
            if carried.handed > 0 {
                oracle.report(
                    .durableRotation,
                    "callers had generation \(carried.handed), but the storage held no session: \(context)")
            }
        case .unreadable:
            break  // I14 above
        }
        if Self.refused(entries) || life.sawRevocation {
            outcome.persistence?.endedByReuse += 1
        } else if Self.callerFailure(life) == nil, (try? life.first?.get()) != nil {
            outcome.persistence?.survived += 1
        }
    }

    /// How a restarted session's callers saw it end: its first call failed, or a caller of its
    /// storm got `refreshTokenRevoked` or `signedOut` (a sign-out of its own aside).
    static func callerFailure(_ life: Incarnation) -> String? {
        if case .failure(let error)? = life.first { return "its first call failed with \(error)" }
        let ownSignOut = life.crash == .signOutDuringRefresh
        let error = life.got.compactMap { result -> SessionError? in
            guard case .failure(let error) = result else { return nil }
            return error == .refreshTokenRevoked || (error == .signedOut && !ownSignOut) ? error : nil
        }.first
        return error.map { "a caller of its storm got \($0)" }
    }

    /// Whether the server refused a refresh token of this process (`invalid_grant`).
    static func refused(_ entries: [LedgerEntry]) -> Bool { refusal(entries) != nil }

    /// The server's refusal of a refresh token of this process, described; `nil` if none.
    static func refusal(_ entries: [LedgerEntry]) -> String? {
        entries.first { $0.call == .refresh && $0.isInvalidGrant }.map {
            "the server refused its refresh token (\($0.outcome.rawValue))"
        }
    }

    /// I16 on disk: once `signOut()` has returned, no file holds the ended session's refresh
    /// token in clear (a backup, a leftover of an interrupted write, a second file).
    func judgeSignOutLeftovers(_ scan: AtRestScan, _ life: Incarnation) {
        guard scan.holdsPlaintext else { return }
        oracle.report(
            .signOutDurable,
            "after signOut() returned in process \(life.index), the ended session's refresh token was still on disk",
            trace: scan.exposures)
    }

    /// I1, I2 and I7 within each process: one refresh per storm, one outcome for its callers,
    /// no token redeemed twice by the same process. A refresh token presented again after a
    /// restart is judged by I15 (handed out) or counted as a lost rotation, not here.
    func auditLedger(_ entries: [LedgerEntry], lives: [Incarnation], outcome: inout DriverOutcome) {
        var firstRedeemedBy: [UInt64: String] = [:]
        for entry in entries where entry.call == .refresh && entry.isRedemption {
            if let generation = entry.presentedGeneration, firstRedeemedBy[generation] == nil {
                firstRedeemedBy[generation] = Self.process(of: entry)
            }
        }
        var handed: Set<UInt64> = []
        for life in lives {
            for result in [life.first].compactMap({ $0 }) + life.got {
                if let gen = try? result.get() { handed.insert(gen) }
            }
        }
        for life in lives {
            let name = "process \(life.index)"
            let slice = entries.filter { entry in
                guard Self.process(of: entry) == name else { return false }
                guard let generation = entry.presentedGeneration, entry.call == .refresh else { return true }
                return firstRedeemedBy[generation] == name
            }
            oracle.auditLedger(slice, observed: { handed.contains($0) })
            let refreshes = entries.filter {
                Self.process(of: $0) == name && $0.call == .refresh && $0.context.hasSuffix(", storm")
            }
            if refreshes.count > 1 {
                oracle.report(
                    .singleFlight,
                    "\(name)'s 401 storm of \(scenario.tasks) callers made \(refreshes.count) refresh calls",
                    trace: refreshes.prefix(3).map(Oracle.describe))
            }
            let generations = Set(life.got.compactMap { try? $0.get() })
            if generations.count > 1, !life.crash.signsOut {
                oracle.report(
                    .sameOutcome,
                    "callers of \(name)'s one storm got \(generations.count) different generations: "
                        + generations.sorted().map(String.init).joined(separator: ", "))
            }
            outcome.refreshCalls += refreshes.count
            outcome.stormRefreshCalls += refreshes.count
            outcome.storms += 1
            outcome.stormCallers += life.got.count
            outcome.operations += UInt64(life.got.filter { (try? $0.get()) != nil }.count)
            outcome.failedCalls += UInt64(life.got.filter { (try? $0.get()) == nil }.count)
        }
    }

    /// I17: a backend that promises protection at rest keeps no secret in clear and no file
    /// others can read. Every backend's exposure is reported, promised or not.
    static func judgeAtRest(
        _ scan: AtRestScan, backend: StorageBackend, oracle: Oracle, outcome: inout DriverOutcome
    ) {
        outcome.persistence?.plaintextAtRest = scan.holdsPlaintext
        outcome.persistence?.fileMode = scan.widestMode == 0 ? nil : "0" + String(scan.widestMode, radix: 8)
        guard backend.protectsAtRest else { return }
        if scan.holdsPlaintext {
            oracle.report(
                .sealedAtRest, "the \(backend.name) storage kept secrets in clear on disk", trace: scan.exposures)
        }
        if !scan.looseFiles.isEmpty {
            oracle.report(
                .sealedAtRest, "the \(backend.name) storage wrote files the group or others can read",
                trace: scan.looseFiles)
        }
    }

    /// `process 3` from a ledger entry's context (`process 3, mid-save, storm`).
    static func process(of entry: LedgerEntry) -> String {
        String(entry.context.prefix { $0 != "," })
    }
}
