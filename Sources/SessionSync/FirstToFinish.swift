import Synchronization

/// Runs each operation in a task of its own and returns as soon as the first one finishes.
///
/// The others are neither awaited nor cancelled: the point is a bound on waiting for work that
/// may not stop when asked (awaiting an unstructured task, a request held by a peer). A task
/// group would wait for all of its children, cancelled or not.
public func firstToFinish(_ operations: [@Sendable () async -> Void]) async {
    guard !operations.isEmpty else { return }
    let first = FirstFinish()
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        for operation in operations {
            Task {
                await operation()
                if first.claim() { continuation.resume() }
            }
        }
    }
}

/// Whether an operation has finished yet: the first to claim it resumes the waiter.
private final class FirstFinish: Sendable {
    private let finished = Atomic<Bool>(false)

    func claim() -> Bool { !finished.exchange(true, ordering: .acquiringAndReleasing) }
}
