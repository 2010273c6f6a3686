#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CReaderSlot
import SessionContract
import Synchronization

/// One per thread: the last token this thread read from a publisher of per-thread copies
/// (``LockFreeReadGuard``, ``TokenSnapshot``). Plain memory behind a thread-local pointer, so
/// reaching it counts no references.
struct ReaderSlot {
    /// The publisher the copy came from (``nextPublisherID``), so two stores never share a copy.
    var publisherID: UInt64 = 0
    var version: UInt64 = 0
    /// The instant (nanoseconds) from which `token` counts as expired, skew included.
    var freshUntil: Int64 = .min
    var token: AccessToken?

    /// The calling thread's slot: a C thread-local pointer (one load); the pthread key only
    /// frees the slot when its thread exits.
    static var current: UnsafeMutablePointer<ReaderSlot> {
        if let raw = session_bench_reader_slot() { return raw.assumingMemoryBound(to: ReaderSlot.self) }
        let slot = UnsafeMutablePointer<ReaderSlot>.allocate(capacity: 1)
        slot.initialize(to: ReaderSlot())
        session_bench_set_reader_slot(slot)
        pthread_setspecific(readerSlotKey, slot)
        return slot
    }

    /// The fast path of every per-thread-copy read: the calling thread's copy when it came from
    /// `publisher` at the `published` version and is fresh at `now`. Otherwise `miss()` reads the
    /// publisher's state under its lock — the version it read, and the fresh token with the
    /// instant it stops being fresh, or `nil` — and the thread keeps a copy of its own of that
    /// token (one allocation) for its next reads.
    @inline(__always)
    static func read(
        publisher: UInt64, published version: UInt64, at now: TokenInstant,
        miss: () -> (version: UInt64, token: AccessToken, freshUntil: Int64)?
    ) -> AccessToken? {
        let slot = current
        if slot.pointee.publisherID == publisher, slot.pointee.version == version,
            now.nanoseconds < slot.pointee.freshUntil, let token = slot.pointee.token
        {
            return token
        }
        guard let (lockedVersion, fresh, freshUntil) = miss() else {
            // Nothing to hand out: drop this publisher's old copy, a secret nobody may be given.
            if slot.pointee.publisherID == publisher { slot.pointee.token = nil }
            return nil
        }
        let copy = fresh.unsharedCopy()
        slot.pointee = ReaderSlot(publisherID: publisher, version: lockedVersion, freshUntil: freshUntil, token: copy)
        return copy
    }
}

extension AccessToken {
    /// The instant (nanoseconds) from which the token is inside a skew of `skew` nanoseconds
    /// of its expiry; `Int64.min` (never fresh) if that instant is before every representable one.
    func freshUntil(skew: Int64) -> Int64 {
        let (instant, overflow) = expiresAt.nanoseconds.subtractingReportingOverflow(skew)
        return overflow ? .min : instant
    }
}

/// Numbers each publisher of per-thread copies, so a thread's slot knows whose copy it holds.
let nextPublisherID = Atomic<UInt64>(0)

private let readerSlotKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        guard let raw else { return }
        session_bench_set_reader_slot(nil)
        let slot = raw.assumingMemoryBound(to: ReaderSlot.self)
        slot.deinitialize(count: 1)
        slot.deallocate()
    }
    precondition(status == 0, "pthread_key_create failed (\(status))")
    return key
}()
