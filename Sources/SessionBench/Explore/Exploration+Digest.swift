import SessionOracle
import TokenServer

extension Exploration {
    /// What a schedule did, for its digest: the ledger, every call's answer, and `more` (what
    /// else it did, in order); ``value`` hashes them.
    struct ScheduleDigest: Sendable {
        var entries: [LedgerEntry] = []
        var calls: [ObservedCall] = []
        var more: [String] = []
        /// `false` for a schedule that has none (it could not start): its value is 0.
        var present = false

        static let none = ScheduleDigest()

        init() {}

        init(entries: [LedgerEntry], calls: [ObservedCall], more: [String] = []) {
            (self.entries, self.calls, self.more, present) = (entries, calls, more, true)
        }

        var value: UInt64 { present ? Exploration.digest(entries, calls, more: more) : 0 }
    }

    /// FNV-1a over what the server did and what each caller got, in order; real times left out.
    /// `more`: what else the schedule did, in order (each subscriber's states, say), mixed in after.
    static func digest(_ entries: [LedgerEntry], _ calls: [ObservedCall], more: [String] = []) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ text: String) {
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
        }
        for entry in entries {
            mix(
                "\(entry.call.rawValue) \(entry.family) \(entry.presentedGeneration ?? 0) \(entry.outcome) "
                    + "\(entry.issuedGeneration ?? 0) \(entry.context)|")
        }
        for call in calls {
            switch call.answer {
            case .token(let issued): mix("\(call.phase) \(call.caller) token \(issued.generation)|")
            case .error(let error): mix("\(call.phase) \(call.caller) error \(error)|")
            case .none: mix("\(call.phase) \(call.caller) none|")
            }
        }
        for line in more { mix(line + "|") }
        return hash
    }
}
