#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Holds `count` OS threads asleep until all have arrived, then wakes them all at once. A
/// barrier rather than a condition variable: woken threads need no lock to leave, so a crowd
/// on few cores is runnable together instead of handing a mutex on one time slice at a time.
final class ThreadStartLine: @unchecked Sendable {
    private let barrier: UnsafeMutablePointer<pthread_barrier_t>

    init(count: Int) {
        barrier = .allocate(capacity: 1)
        let status = pthread_barrier_init(barrier, nil, UInt32(count))
        precondition(status == 0, "pthread_barrier_init failed (\(status))")
    }

    deinit {
        pthread_barrier_destroy(barrier)
        barrier.deallocate()
    }

    func arriveAndWait() { _ = pthread_barrier_wait(barrier) }
}
