/// One save or clear of a store's storage, recorded with when it ended: what the storage
/// promises (persist before publish, nothing of a session after its fence) are judged over these.
package struct StorageWrite: Sendable {
    /// Real nanoseconds, the ledger's clock: when the write ended.
    package let at: Int64
    /// The access token's generation of the grant saved; `nil` for a clear.
    package let generation: UInt64?
    /// What the store's `currentToken()`, read from another thread while this save was under
    /// way, answered (its generation); `nil` when it answered nothing, or not in time.
    package var seenWhileSaving: UInt64?
    /// The generation of the access token the saved refresh token was issued with, as the
    /// server says (the storage's pairing with the server): the saved generation for a grant saved whole;
    /// `nil` for a clear, or when not asked.
    package var refreshIssuedWith: UInt64?
    /// The saved refresh token is not one the server issued.
    package var refreshUnknown = false

    package init(
        at: Int64, generation: UInt64?, seenWhileSaving: UInt64? = nil, refreshIssuedWith: UInt64? = nil,
        refreshUnknown: Bool = false
    ) {
        self.at = at
        self.generation = generation
        self.seenWhileSaving = seenWhileSaving
        self.refreshIssuedWith = refreshIssuedWith
        self.refreshUnknown = refreshUnknown
    }
}
