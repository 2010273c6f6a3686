import SessionContract
import SessionStores

extension SelfTestStores {
    /// The mutex store over a storage that hands each write to a task of its own (the `Task {
    /// try? keychain.save(grant) }` an app writes to keep the main thread free): the store saves
    /// before it publishes, but the grant is durable only once the task has run. A crash before
    /// then restarts with a refresh token the server has rotated; two writes may land out of order.
    static let savesInBackground = StoreDescriptor(
        name: "saves-in-background",
        summary:
            "the mutex store, each storage write handed to a Task: a crash before it runs loses the grant (self-test)",
        isReferenceBroken: true, offersSynchronousRead: true, persistsSession: true
    ) { configuration in
        var deferred = configuration
        deferred.storage = configuration.storage.map { BackgroundWrites(base: $0) }
        return MutexStore(configuration: deferred)
    }
}

/// A storage whose writes happen later, each in a task of its own.
final class BackgroundWrites: TokenStorage {
    let base: any TokenStorage

    init(base: any TokenStorage) { self.base = base }

    func load() throws(StorageError) -> TokenGrant? { try base.load() }

    func save(_ grant: TokenGrant) throws(StorageError) {
        let base = self.base
        Task { try? base.save(grant) }
    }

    func clear() throws(StorageError) {
        let base = self.base
        Task { try? base.clear() }
    }
}
