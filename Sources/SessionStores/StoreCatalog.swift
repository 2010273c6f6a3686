import SessionContract

/// The stores session-bench ships, by name.
public enum StoreCatalog {
    /// Every built-in store, reference-broken ones included, in the order reports list them.
    public static let all: [StoreDescriptor] = [
        StoreDescriptor(
            name: "lock-free-read", summary: "per-thread token copy checked by one atomic load; Mutex for writes",
            offersSynchronousRead: true, persistsSession: true, sharesStorage: true, offersStepUp: true,
            offersStateStream: true
        ) { LockFreeReadStore(configuration: $0) },
        StoreDescriptor(
            name: "mutex", summary: "Synchronization.Mutex around the shared lifecycle", offersSynchronousRead: true,
            persistsSession: true, sharesStorage: true, offersStepUp: true,
            offersStateStream: true
        ) { MutexStore(configuration: $0) },
        StoreDescriptor(
            name: "nslock", summary: "Foundation NSLock around the shared lifecycle", offersSynchronousRead: true,
            persistsSession: true, sharesStorage: true, offersStepUp: true,
            offersStateStream: true
        ) { NSLockStore(configuration: $0) },
        StoreDescriptor(
            name: "actor-task", summary: "actor sharing one in-flight refresh Task", offersStepUp: true,
            offersStateStream: true
        ) { ActorTaskStore(configuration: $0) },
        StoreDescriptor(
            name: "actor-fast-read",
            summary: "actor-task that publishes each token it would hand out; reads take no hop",
            offersSynchronousRead: true, offersStepUp: true, offersStateStream: true
        ) { ActorFastReadStore(configuration: $0) },
        StoreDescriptor(
            name: "main-actor", summary: "@MainActor class around the shared lifecycle", isolatedToMainActor: true
        ) {
            MainActorStore(configuration: $0)
        },
        StoreDescriptor(
            name: "barrier-queue", summary: "concurrent DispatchQueue, sync reads, barrier writes",
            offersSynchronousRead: true, persistsSession: true, sharesStorage: true, offersStepUp: true,
            offersStateStream: true
        ) { BarrierQueueStore(configuration: $0) },
        StoreDescriptor(
            name: "serial-queue", summary: "serial DispatchQueue.sync around the shared lifecycle",
            offersSynchronousRead: true, persistsSession: true, sharesStorage: true, offersStepUp: true,
            offersStateStream: true
        ) { SerialQueueStore(configuration: $0) },
        StoreDescriptor(
            name: "actor-naive", summary: "seed ADR actor as written: check, await refresh, set",
            isReferenceBroken: true
        ) { NaiveActorStore(configuration: $0) },
        StoreDescriptor(
            name: "persist-after-publish",
            summary: "mutex store that hands a refreshed token out before saving its grant",
            isReferenceBroken: true, offersSynchronousRead: true, persistsSession: true
        ) { MutexStore(configuration: $0, persistOrder: .afterPublish) },
        StoreDescriptor(
            name: "persist-unfenced",
            summary: "mutex store that saves every refreshed grant, even one a sign-out discarded",
            isReferenceBroken: true, offersSynchronousRead: true, persistsSession: true
        ) { MutexStore(configuration: $0, persistOrder: .unfenced) },
        StoreDescriptor(
            name: "shared-process-lock",
            summary: "mutex store whose refreshes over shared storage take one lock per process, none across processes",
            isReferenceBroken: true, offersSynchronousRead: true, persistsSession: true, sharesStorage: true,
            offersStepUp: true,
            offersStateStream: true
        ) { MutexStore(configuration: $0, persistOrder: .beforePublish, turns: .processOnly) },
        StoreDescriptor(
            name: "step-up-per-client",
            summary: "mutex store whose API objects each keep their own step-up, so each one prompts",
            isReferenceBroken: true, offersSynchronousRead: true, offersStepUp: true
        ) { MutexStore(configuration: $0, persistOrder: .beforePublish, elevation: .perClient) },
        StoreDescriptor(
            name: "actor-single-stream",
            summary: "actor-task with the seed ADR's state stream: one continuation, replaced by each subscriber",
            isReferenceBroken: true, offersStateStream: true
        ) { ActorTaskStore(configuration: $0, stateStream: .singleContinuation) },
    ]

    /// The stores meant to be correct: what "all stores" means unless broken ones are asked for.
    public static var correct: [StoreDescriptor] { all.filter { !$0.isReferenceBroken } }

    /// The store called `name`, if there is one.
    public static func named(_ name: String) -> StoreDescriptor? { all.first { $0.name == name } }
}
