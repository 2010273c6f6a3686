import SessionContract
import SessionStorage
import TokenServer

/// The checks of `crash-restart`, from what the processes reported, the server's ledger and
/// the storage's files. None looks inside a store or a backend.
extension CrashRestartDriver {
    /// I14, I15, I16 at the start of a process, against how the previous one left the session;
    /// and the survival figures.
    func judgeRestart(after carried: Carried, _ life: Incarnation, outcome: inout DriverOutcome) {
        let context = "process \(life.index) restarted after a \(carried.crash.rawValue) crash"
        if life.load == .unreadable {
            oracle.report(
                .restorable, "the stored session could not be read back: \(context)",
                trace: ["the previous process died at \(carried.crash.rawValue) while the storage was in use"])
        }
        if carried.ended, case .session(let generation)? = life.load {
            oracle.report(
                .signOutDurable,
                "a session signed out before the crash came back from storage (generation \(generation)): \(context)",
                trace: ["signOut() had returned in process \(life.index - 1) before it was killed"])
        }
        guard carried.live else { return }
        outcome.persistence?.restarts += 1
        switch life.load {
        case .session(let restored)?:
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
            }
            if !life.signedIn, life.first == .failure(.signedOut) {
                oracle.report(
                    .durableRotation, "the storage held a session but the store came back signed out: \(context)")
            }
        case .empty?, nil:
            if carried.handed > 0 {
                oracle.report(
                    .durableRotation,
                    "callers had generation \(carried.handed), but the storage held no session: \(context)")
            }
        case .unreadable?:
            break  // I14 above
        }
        if life.sawRevocation {
            outcome.persistence?.endedByReuse += 1
        } else if (try? life.first?.get()) != nil {
            outcome.persistence?.survived += 1
        }
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
            let refreshes = entries.filter { Self.process(of: $0) == name && $0.call == .refresh }
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
    func judgeAtRest(_ scan: AtRestScan, outcome: inout DriverOutcome) {
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

    /// `process 3` from a ledger entry's context (`process 3, mid-save`).
    static func process(of entry: LedgerEntry) -> String {
        String(entry.context.prefix { $0 != "," })
    }
}
