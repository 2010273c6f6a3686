#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A point in time on a ``TokenClock``, in nanoseconds from an arbitrary origin.
///
/// Token expiry is compared against instants of the clock the store was given, never
/// against wall-clock time, so a test can move time forward by hand.
public struct TokenInstant: Comparable, Hashable, Sendable {
    public var nanoseconds: Int64

    @inlinable
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }

    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    @inlinable
    public static func + (lhs: Self, rhs: Duration) -> Self {
        Self(nanoseconds: lhs.nanoseconds &+ rhs.nanosecondsClamped)
    }

    @inlinable
    public static func - (lhs: Self, rhs: Duration) -> Self {
        Self(nanoseconds: lhs.nanoseconds &- rhs.nanosecondsClamped)
    }

    /// The duration from `other` to `self` (negative when `other` is later).
    @inlinable
    public func duration(since other: Self) -> Duration {
        .nanoseconds(nanoseconds &- other.nanoseconds)
    }
}

extension Duration {
    /// Whole nanoseconds, saturating at `Int64` bounds.
    @inlinable
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }

    /// The duration in seconds, as a `Double` (for rates and reports, not for arithmetic).
    @inlinable
    public var secondsValue: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in nanoseconds, as a `Double`.
    @inlinable
    public var nanosecondsValue: Double { Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9 }
}

/// Time as stores and the token server read it.
///
/// A small value type rather than a protocol so that the read on every store's fast path
/// costs a predictable branch, not a witness-table call. Three sources:
/// - ``system``: `CLOCK_MONOTONIC`, precise (tens of nanoseconds per read through the vDSO).
/// - ``coarse``: `CLOCK_MONOTONIC_COARSE` on Linux, a few nanoseconds per read with
///   millisecond-scale resolution (``resolution`` says how coarse). A store using it must
///   refresh at least one resolution step before expiry, which
///   ``SessionStoreConfiguration`` enforces.
/// - ``manual(_:)``: a ``ManualTime`` that tests move by hand.
public struct TokenClock: Sendable {
    @usableFromInline
    enum Source: Sendable {
        case monotonic
        case coarse
        case manual(ManualTime)
    }

    @usableFromInline
    let source: Source

    @usableFromInline
    init(source: Source) { self.source = source }

    /// The precise monotonic clock.
    public static let system = TokenClock(source: .monotonic)

    /// The coarse monotonic clock: cheap to read, coarse in resolution.
    public static let coarse = TokenClock(source: .coarse)

    /// A clock that moves only when the given ``ManualTime`` is advanced.
    public static func manual(_ time: ManualTime) -> TokenClock { TokenClock(source: .manual(time)) }

    /// The current instant.
    @inlinable
    public func now() -> TokenInstant {
        switch source {
        case .monotonic: return TokenInstant(nanoseconds: Self.read(CLOCK_MONOTONIC))
        case .coarse: return TokenInstant(nanoseconds: Self.read(Self.coarseClockID))
        case .manual(let time): return time.now
        }
    }

    /// The smallest step by which ``now()`` can advance.
    public var resolution: Duration {
        switch source {
        case .manual: return .zero
        case .monotonic, .coarse:
            var spec = timespec()
            let id = if case .coarse = source { Self.coarseClockID } else { CLOCK_MONOTONIC }
            clock_getres(id, &spec)
            return .seconds(Int64(spec.tv_sec)) + .nanoseconds(Int64(spec.tv_nsec))
        }
    }

    /// A short name for reports: `monotonic`, `coarse` or `manual`.
    public var name: String {
        switch source {
        case .monotonic: "monotonic"
        case .coarse: "coarse"
        case .manual: "manual"
        }
    }

    @usableFromInline
    static var coarseClockID: clockid_t {
        #if os(Linux)
        CLOCK_MONOTONIC_COARSE
        #else
        CLOCK_MONOTONIC
        #endif
    }

    @inlinable
    static func read(_ id: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(id, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}

/// Time that moves only when told to. Safe to advance from any thread.
public final class ManualTime: Sendable {
    @usableFromInline
    let nanoseconds: Atomic<Int64>

    public init(start: TokenInstant = TokenInstant(nanoseconds: 1_000_000_000)) {
        nanoseconds = Atomic(start.nanoseconds)
    }

    @inlinable
    public var now: TokenInstant { TokenInstant(nanoseconds: nanoseconds.load(ordering: .acquiring)) }

    /// Moves time forward by `duration`.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "ManualTime cannot move backwards")
        nanoseconds.add(duration.nanosecondsClamped, ordering: .releasing)
    }
}
