import SessionOracle

/// The storage families' own CSV columns (`crash-restart`, and `shared-storage` and `replicas`, whose
/// driver fills the same ``PersistenceFigures``); empty elsewhere.
extension CrashRestartFamily {
    static let columns: [CSVColumn] = [
        CSVColumn(
            "storage",
            """
            scenarios over storage: the backend (`json-file`, `encrypted-file`, …); this and the columns below are \
            empty elsewhere
            """,
            value: { $0.result.persistence?.backend ?? "" }),
        CSVColumn(
            "reuse_grace_s", "the server's reuse grace window in seconds (0: any reuse revokes the session)",
            value: { CSVColumn.optional($0.result.persistence?.reuseGraceSeconds, 3) }),
        CSVColumn(
            "processes",
            """
            session processes started (`shared-storage`: its 2 processes, with 0 `crashes` and the restart columns \
            0; its figure is `refreshes_per_expiry`, refresh calls per 401 storm or expiry across all 4 holders)
            """,
            value: { persisted($0, \.processes) }),
        CSVColumn(
            "crashes", "of `processes`: how many were killed or cut short rather than exiting cleanly",
            value: { persisted($0, \.crashes) }),
        CSVColumn(
            "restarts", "restarts over a session that was live when its process ended",
            value: { persisted($0, \.restarts) }),
        CSVColumn("restarts_survived", "of `restarts`: the session went on") { persisted($0, \.survived) },
        CSVColumn(
            "restarts_ended_by_reuse", "of `restarts`: the server refused the restored refresh token as a reuse",
            value: { persisted($0, \.endedByReuse) }),
        CSVColumn(
            "rotations_lost_in_flight",
            """
            restarts that found an older refresh token than the server had issued, the newer one lost at the crash \
            point `in-flight` (none was handed to a caller: that would be I15)
            """,
            value: { persisted($0) { $0.rotationsLost(.inFlight) } }),
        CSVColumn(
            "rotations_lost_before_save",
            """
            restarts that found an older refresh token than the server had issued, the newer one lost at the crash \
            point `before-save`
            """,
            value: { persisted($0) { $0.rotationsLost(.beforeSave) } }),
        CSVColumn(
            "rotations_lost_mid_save",
            """
            restarts that found an older refresh token than the server had issued, the newer one lost at the crash \
            point `mid-save`
            """,
            value: { persisted($0) { $0.rotationsLost(.midSave) } }),
        CSVColumn(
            "plaintext_at_rest",
            "`yes` when any file of the storage held an access token, a refresh token or the user id in clear",
            value: { $0.result.persistence.map { $0.plaintextAtRest ? "yes" : "no" } ?? "" }),
        CSVColumn(
            "file_mode", "the widest permission bits seen on the storage's files (`0600`)",
            value: { $0.result.persistence?.fileMode ?? "" }),
        CSVColumn(
            "storage_calls_during_reads",
            """
            storage calls made while the read phases ran (`validToken()` on a fresh token): 0 when reads never \
            touch storage
            """,
            value: { persisted($0, \.storageCallsDuringReads) }),
    ]

    /// A count from the storage figures, empty outside scenarios over storage.
    private static func persisted(_ row: CSVRow, _ figure: (PersistenceFigures) -> Int) -> String {
        row.result.persistence.map { "\(figure($0))" } ?? ""
    }
}
