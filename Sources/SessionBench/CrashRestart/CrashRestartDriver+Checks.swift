import SessionContract
import SessionOracle
import SessionStorage

/// Hands what `crash-restart` recorded to its judge (``CrashRestartJudge``), and the judge's
/// tally and the disk's figures to the run's outcome. None looks inside a store or a backend.
extension CrashRestartDriver {
    /// Judges `history` after the run and fills the outcome's figures from it.
    func judge(_ history: CrashRestartHistory, scan: AtRestScan, outcome: inout DriverOutcome) {
        let (findings, tally) = CrashRestartJudge.judge(history)
        oracle.record(findings)
        outcome.persistence?.restarts += tally.restarts
        for (point, lost) in tally.rotationsLost { outcome.persistence?.rotationsLost[point, default: 0] += lost }
        outcome.persistence?.endedByReuse += tally.endedByReuse
        outcome.persistence?.survived += tally.survived
        outcome.refreshCalls += tally.stormRefreshCalls
        outcome.stormRefreshCalls += tally.stormRefreshCalls
        outcome.storms += tally.storms
        outcome.stormCallers += tally.stormCallers
        outcome.operations += tally.served
        outcome.failedCalls += tally.failed
        scan.figures(into: &outcome)
    }
}

extension AtRestScan {
    /// What was found on disk, as the run's figures: whether a secret was ever in clear, and the
    /// widest file mode.
    func figures(into outcome: inout DriverOutcome) {
        outcome.persistence?.plaintextAtRest = holdsPlaintext
        outcome.persistence?.fileMode = widestMode == 0 ? nil : "0" + String(widestMode, radix: 8)
    }

    /// I17 over this scan (``AtRestJudge``), and its figures.
    func judge(backend: StorageBackend, oracle: Oracle, outcome: inout DriverOutcome) {
        figures(into: &outcome)
        oracle.record(
            AtRestJudge.judge(
                backend: backend.name, protectsAtRest: backend.protectsAtRest, exposures: exposures,
                looseFiles: looseFiles))
    }
}
