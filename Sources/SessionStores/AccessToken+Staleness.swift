import SessionContract

extension AccessToken {
    /// Whether this token is older than `current`, or another user's: a 401 for it says
    /// nothing about `current`, which the caller can retry with at once.
    func isStale(comparedWith current: AccessToken) -> Bool {
        subject != current.subject || generation < current.generation
    }
}
