import SessionMeasurement
import SessionOracle

/// `session-states`' own CSV column; empty elsewhere.
extension SessionStatesFamily {
    static let columns: [CSVColumn] = [
        CSVColumn(
            "observers", "`session-states` lag rows: the subscribers observed at once (`1` or `tasks`)",
            value: { row in
                switch row.latency?.kind {
                case .observerLagOne?: "1"
                case .observerLagMany?: row.result.observers.map { "\($0)" } ?? ""
                default: ""
                }
            })
    ]
}
