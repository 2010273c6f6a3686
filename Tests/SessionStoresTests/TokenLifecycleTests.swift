import SessionContract
import SessionStores
import Testing

/// The lifecycle driven event by event, with plain integers as waiters.
@Suite("Token lifecycle")
struct TokenLifecycleTests {
    typealias Lifecycle = TokenLifecycle<Int>

    let start = TokenInstant(nanoseconds: 0)

    func grant(generation: UInt64, subject: String = "a", expiresIn seconds: Int64 = 100) -> TokenGrant {
        TokenGrant(
            accessToken: AccessToken(
                value: "v\(generation)", subject: Subject(subject), generation: generation,
                expiresAt: start + .seconds(seconds)),
            refreshToken: RefreshToken("r\(generation)"))
    }

    func signedIn(_ generation: UInt64 = 1) -> Lifecycle {
        var lifecycle = Lifecycle(skew: .seconds(10))
        let started = lifecycle.beginSignIn()
        #expect(started.orphans.isEmpty)
        let completed = lifecycle.signInCompleted(epoch: started.epoch, result: .success(grant(generation: generation)))
        #expect(completed.error == nil)
        return lifecycle
    }

    func request(_ action: Lifecycle.AcquireAction) -> Lifecycle.RefreshRequest? {
        if case .startRefresh(let request) = action { return request }
        return nil
    }

    /// The waiters and outcome of a completion that was not discarded.
    func resumed(_ action: Lifecycle.RefreshCompletedAction) -> (waiters: [Int], outcome: Lifecycle.Outcome)? {
        if case .resume(let waiters, let outcome) = action { return (waiters, outcome) }
        return nil
    }

    func isDiscarded(_ action: Lifecycle.RefreshCompletedAction) -> Bool {
        if case .discarded = action { return true }
        return false
    }

    @Test func freshTokenRespectsSkew() {
        let lifecycle = signedIn()
        #expect(lifecycle.freshToken(at: start + .seconds(89))?.generation == 1)
        #expect(lifecycle.freshToken(at: start + .seconds(90)) == nil)
    }

    @Test func firstStaleReaderStartsRefreshOthersPark() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        #expect(refresh.refreshToken == RefreshToken("r1"))
        guard case .parked = lifecycle.acquire(2, id: 2, now: late, isCancelled: false) else {
            Issue.record("second reader must park")
            return
        }
        #expect(lifecycle.freshToken(at: start) == nil, "no fast path while refreshing")
        let completed = lifecycle.refreshCompleted(
            refresh, result: .success(grant(generation: 2, expiresIn: 200)), now: late)
        let (waiters, outcome) = try #require(resumed(completed))
        #expect(Set(waiters) == [1, 2])
        #expect(try outcome.get().generation == 2)
        #expect(lifecycle.freshToken(at: late)?.generation == 2)
    }

    @Test("an announced grant is taken only if the same user's, newer and fresh; it answers a waiting refresh")
    func adoptsAnnouncedGrant() throws {
        var lifecycle = signedIn(3)
        for (refused, why) in [
            (grant(generation: 2, expiresIn: 300), "older"), (grant(generation: 3, expiresIn: 300), "the same"),
            (grant(generation: 4, subject: "b", expiresIn: 300), "another user"),
            (grant(generation: 4, expiresIn: 5), "within the skew of expiry"),
        ] {
            if case .resume = lifecycle.adopt(refused, now: start) { Issue.record("\(why) must be refused") }
        }
        #expect(lifecycle.freshToken(at: start)?.generation == 3)
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        _ = lifecycle.acquire(2, id: 2, now: late, isCancelled: false)
        guard case .resume(let waiters, let token) = lifecycle.adopt(grant(generation: 4, expiresIn: 300), now: late)
        else {
            Issue.record("a newer, fresh grant of the same user is taken")
            return
        }
        #expect(Set(waiters) == [1, 2])
        #expect(token.generation == 4)
        #expect(lifecycle.freshToken(at: late)?.generation == 4)
        #expect(!lifecycle.isCurrent(refresh), "the refresh it answered must not reach the server")
        #expect(isDiscarded(lifecycle.refreshCompleted(refresh, result: .success(grant(generation: 5)), now: late)))
        #expect(lifecycle.freshToken(at: late)?.generation == 4, "its late answer is discarded")
    }

    @Test func rejectionOfCurrentRefreshesOfOlderDoesNot() throws {
        var lifecycle = signedIn(5)
        let current = try #require(lifecycle.freshToken(at: start))
        let older = AccessToken(value: "old", subject: Subject("a"), generation: 4, expiresAt: start)
        guard
            case .resume(7, .success(let token)) = lifecycle.rejected(
                older, waiter: 7, id: 7, now: start, isCancelled: false)
        else {
            Issue.record("a stale 401 returns the current token")
            return
        }
        #expect(token == current)
        #expect(request(lifecycle.rejected(current, waiter: 8, id: 8, now: start, isCancelled: false)) != nil)
    }

    @Test func staleRejectionIsAnsweredWithoutWaitingOnlyWhenSafe() throws {
        var lifecycle = signedIn(5)
        let current = try #require(lifecycle.freshToken(at: start))
        let older = AccessToken(value: "old", subject: Subject("a"), generation: 4, expiresAt: start)
        let otherUser = AccessToken(value: "b", subject: Subject("b"), generation: 9, expiresAt: start)
        #expect(lifecycle.currentTokenIfStale(older, at: start) == current)
        #expect(lifecycle.currentTokenIfStale(otherUser, at: start) == current)
        #expect(lifecycle.currentTokenIfStale(current, at: start) == nil, "a 401 for the current token must refresh")
        #expect(
            lifecycle.currentTokenIfStale(older, at: start + .seconds(95)) == nil,
            "not when the current one is stale too")
        _ = lifecycle.rejected(current, waiter: 1, id: 1, now: start, isCancelled: false)
        #expect(lifecycle.currentTokenIfStale(older, at: start) == nil, "not while a refresh is in flight")
    }

    @Test func signOutOrphansWaitersAndDiscardsLateRefresh() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        _ = lifecycle.acquire(2, id: 2, now: late, isCancelled: false)
        #expect(Set(lifecycle.signOut()) == [1, 2])
        #expect(isDiscarded(lifecycle.refreshCompleted(refresh, result: .success(grant(generation: 2)), now: late)))
        #expect(lifecycle.freshToken(at: start) == nil)
        guard case .resume(3, .failure(.signedOut)) = lifecycle.acquire(3, id: 3, now: start, isCancelled: false) else {
            Issue.record("signed out stays signed out")
            return
        }
    }

    @Test func overtakenSignInIsDiscarded() {
        var lifecycle = Lifecycle(skew: .zero)
        let first = lifecycle.beginSignIn().epoch
        let second = lifecycle.beginSignIn().epoch
        #expect(lifecycle.signInCompleted(epoch: first, result: .success(grant(generation: 1))).error == .signedOut)
        #expect(lifecycle.signInCompleted(epoch: second, result: .success(grant(generation: 2))).error == nil)
        #expect(lifecycle.freshToken(at: start)?.generation == 2)
    }

    @Test func cancelledWaiterLeavesTheRefreshToOthers() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        _ = lifecycle.acquire(2, id: 2, now: late, isCancelled: false)
        #expect(lifecycle.cancelWaiter(id: 1) == 1)
        #expect(lifecycle.cancelWaiter(id: 1) == nil, "cancelled once")
        #expect(lifecycle.waiterCount == 1)
        let completed = lifecycle.refreshCompleted(
            refresh, result: .success(grant(generation: 2, expiresIn: 200)), now: late)
        let (waiters, outcome) = try #require(resumed(completed))
        #expect(waiters == [2])
        #expect(try outcome.get().generation == 2)
    }

    @Test func failureIsSharedThenForgotten() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        _ = lifecycle.acquire(2, id: 2, now: late, isCancelled: false)
        let completed = lifecycle.refreshCompleted(refresh, result: .failure(.transient), now: late)
        let (waiters, outcome) = try #require(resumed(completed))
        #expect(Set(waiters) == [1, 2])
        #expect(outcome.error == .refreshFailed)
        #expect(request(lifecycle.acquire(3, id: 3, now: late, isCancelled: false)) != nil, "the next call may refresh")
    }

    @Test("a grant that arrives already expired fails the round but keeps the rotated refresh token")
    func expiredOnArrivalKeepsTheRotation() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        // Issued with a lifetime shorter than the trip: expired by the time it lands.
        let completed = lifecycle.refreshCompleted(
            refresh, result: .success(grant(generation: 2, expiresIn: 90)), now: late)
        let (_, outcome) = try #require(resumed(completed))
        #expect(outcome.error == .refreshFailed)
        let next = try #require(request(lifecycle.acquire(2, id: 2, now: late, isCancelled: false)))
        #expect(next.refreshToken == RefreshToken("r2"), "the used refresh token r1 would be a reuse")
    }

    @Test func invalidGrantRevokes() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        let completed = lifecycle.refreshCompleted(refresh, result: .failure(.invalidGrant), now: late)
        let (_, outcome) = try #require(resumed(completed))
        #expect(outcome.error == .refreshTokenRevoked)
        guard
            case .resume(2, .failure(.refreshTokenRevoked)) = lifecycle.acquire(2, id: 2, now: late, isCancelled: false)
        else {
            Issue.record("revoked is terminal until sign-in")
            return
        }
    }

    @Test func versionMovesOnEveryChangeReadersCareAbout() throws {
        var lifecycle = signedIn()
        var seen = [lifecycle.version]
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        seen.append(lifecycle.version)
        _ = lifecycle.refreshCompleted(refresh, result: .success(grant(generation: 2, expiresIn: 200)), now: late)
        seen.append(lifecycle.version)
        _ = lifecycle.signOut()
        seen.append(lifecycle.version)
        #expect(seen == seen.sorted() && Set(seen).count == seen.count)
        _ = lifecycle.acquire(9, id: 9, now: late, isCancelled: false)
        #expect(lifecycle.version == seen.last, "a read that changes nothing moves nothing")
    }

    @Test("a completion discarded by a sign-in moves neither the state nor the version")
    func discardedCompletionChangesNothing() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(1, id: 1, now: late, isCancelled: false)))
        let started = lifecycle.beginSignIn()
        #expect(started.orphans == [1])
        let before = lifecycle.observed
        #expect(before.state == .signedOut)
        #expect(isDiscarded(lifecycle.refreshCompleted(refresh, result: .failure(.invalidGrant), now: late)))
        #expect(lifecycle.observed == before, "not revoked by a refresh of the ended session")
        #expect(lifecycle.isCurrentSignIn(epoch: started.epoch))
    }

    @Test("an announced grant with no refresh in flight resumes no one; a refused one moves nothing")
    func adoptWithoutRefresh() {
        var lifecycle = signedIn(3)
        let before = lifecycle.observed
        guard case .refused = lifecycle.adopt(grant(generation: 3, expiresIn: 300), now: start) else {
            Issue.record("the same generation is refused")
            return
        }
        #expect(lifecycle.observed == before)
        guard case .resume(let waiters, let token) = lifecycle.adopt(grant(generation: 4, expiresIn: 300), now: start)
        else {
            Issue.record("a newer grant is taken")
            return
        }
        #expect(waiters.isEmpty)
        #expect(token.generation == 4)
        #expect(lifecycle.observed.state == .signedIn(generation: 4))
        #expect(lifecycle.observed.version > before.version)
    }

    @Test("parking and cancelling waiters leave the refresh in flight and the session as observers saw it")
    func waiterChangesLeaveTheRefreshInFlight() throws {
        var lifecycle = signedIn()
        let late = start + .seconds(95)
        let refresh = try #require(request(lifecycle.acquire(0, id: 0, now: late, isCancelled: false)))
        let refreshing = lifecycle.observed
        #expect(refreshing.state == .refreshing(generation: 1))
        for id in 1...1_000 { _ = lifecycle.acquire(id, id: UInt64(id), now: late, isCancelled: false) }
        let odd = Array(stride(from: 1, through: 1_000, by: 2))
        let cancelled = odd.compactMap { lifecycle.cancelWaiter(id: UInt64($0)) }
        #expect(cancelled == odd)
        #expect(lifecycle.waiterCount == 501)
        #expect(lifecycle.observed == refreshing, "waiters coming and going are no change observers see")
        #expect(lifecycle.isCurrent(refresh))
        let completed = lifecycle.refreshCompleted(
            refresh, result: .success(grant(generation: 2, expiresIn: 200)), now: late)
        let (waiters, _) = try #require(resumed(completed))
        #expect(Set(waiters) == Set(0...1_000).subtracting(odd))
        #expect(lifecycle.cancelWaiter(id: 2) == nil, "no refresh in flight: nothing to cancel")
        #expect(lifecycle.observed.state == .signedIn(generation: 2))
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
