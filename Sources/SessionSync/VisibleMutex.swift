import Synchronization

// ThreadSanitizer cannot see `Synchronization.Mutex` on Linux: its lock is a futex driven
// from the uninstrumented standard library, so TSan reports every access made under it as a
// race (a two-thread counter under `withLock` is enough to show it). Builds made with
// `-Xswiftc -DSESSION_BENCH_TSAN` tell TSan about the happens-before edges the mutex
// really creates; every other build compiles the plain `withLock`.
#if SESSION_BENCH_TSAN
@usableFromInline @_silgen_name("__tsan_acquire")
func __tsan_acquire(_ address: UnsafeMutableRawPointer)

@usableFromInline @_silgen_name("__tsan_release")
func __tsan_release(_ address: UnsafeMutableRawPointer)
#endif

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the critical section announced to ThreadSanitizer under `owner`'s
    /// address when the build asks for it. `owner` must be the object that stores the mutex,
    /// so every use of one mutex announces the same address.
    @inlinable @inline(__always)
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        visibleTo owner: AnyObject, _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try withLock { (value: inout sending Value) throws(E) -> sending Result in
            #if SESSION_BENCH_TSAN
            let address = Unmanaged.passUnretained(owner).toOpaque()
            __tsan_acquire(address)
            defer { __tsan_release(address) }
            #endif
            return try body(&value)
        }
    }
}
