import SessionContract
import Testing
import TokenServer

@Suite("Token server", .timeLimit(.minutes(30)))
struct TokenServerTests {
    let time = ManualTime()
    let alice = Credentials(subject: Subject("user-alice"))

    func server(_ configuration: TokenServer.Configuration = .init()) -> TokenServer {
        TokenServer(configuration: configuration, clock: .manual(time))
    }

    @Test func signInIssuesJWTSizedTokens() async throws {
        let server = server(.init(tokenLifetime: .seconds(60)))
        let grant = try await server.signIn(alice)
        #expect(grant.accessToken.value.utf8.count == 900)
        #expect(grant.accessToken.value.hasPrefix("eyJ"))
        #expect(grant.accessToken.subject == alice.subject)
        #expect(grant.accessToken.expiresAt == time.now + .seconds(60))
        let other = try await server.signIn(alice)
        #expect(other.accessToken.value != grant.accessToken.value)
        #expect(other.accessToken.generation > grant.accessToken.generation)
        #expect(server.ledger.signInCalls == 2)
    }

    @Test func issuedSecretsPrintRedacted() async throws {
        let grant = try await server().signIn(alice)
        let token = grant.accessToken
        let expiry = token.expiresAt.nanoseconds
        for (value, printed) in [
            (alice as Any, "Credentials(redacted)"), (alice.subject, "Subject(redacted)"),
            (grant.refreshToken, "RefreshToken(redacted)"),
            (token, "AccessToken(generation: \(token.generation), expiresAt: \(expiry)ns, value: redacted 900 bytes)"),
        ] {
            #expect(String(describing: value) == printed)
            #expect(String(reflecting: value) == printed)
        }
        var dumped = ""
        dump((alice, grant), to: &dumped)
        for secret in [token.value, grant.refreshToken.value, alice.subject.rawValue] {
            #expect(!dumped.contains(secret))
        }
    }

    @Test func refreshRotatesTheRefreshToken() async throws {
        let server = server()
        let first = try await server.signIn(alice)
        let second = try await server.refresh(first.refreshToken)
        let third = try await server.refresh(second.refreshToken)
        #expect(second.refreshToken != first.refreshToken)
        #expect(third.accessToken.generation > second.accessToken.generation)
        let ledger = server.ledger
        #expect(ledger.refreshCalls == 2)
        #expect(ledger.entries.filter { $0.call == .refresh }.map(\.outcome) == [.issued, .issued])
        #expect(ledger.repeatedRedemptions.isEmpty)
    }

    @Test func reuseRevokesTheWholeFamily() async throws {
        let server = server()
        let first = try await server.signIn(alice)
        let second = try await server.refresh(first.refreshToken)
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(first.refreshToken) }
        // The legitimate holder of the newest token is logged out too.
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(second.refreshToken) }
        let ledger = server.ledger
        #expect(ledger.entries.map(\.outcome) == [.issued, .issued, .reuseDetected, .familyRevoked])
        #expect(ledger.repeatedRedemptions == [first.accessToken.generation: 2])
        #expect(ledger.revokedFamilies.count == 1)
    }

    @Test func graceWindowToleratesReuseButCountsIt() async throws {
        let server = server(.init(reuseGraceWindow: .seconds(2)))
        let first = try await server.signIn(alice)
        _ = try await server.refresh(first.refreshToken)
        time.advance(by: .seconds(1))
        _ = try await server.refresh(first.refreshToken)
        time.advance(by: .seconds(2))
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(first.refreshToken) }
        let ledger = server.ledger
        #expect(ledger.entries.dropFirst().map(\.outcome) == [.issued, .reuseAccepted, .reuseDetected])
        #expect(ledger.reuseCount == 2)
        #expect(ledger.repeatedRedemptions == [first.accessToken.generation: 3])
    }

    @Test func transientFailureAndTimeoutChangeNothing() async throws {
        let server = server(.init(faults: .init(timeoutAfter: .milliseconds(1))))
        let first = try await server.signIn(alice)
        server.injectRefreshFaults(.transientFailure)
        server.injectRefreshFaults(.timeout)
        await #expect(throws: TokenEndpointError.transient) { try await server.refresh(first.refreshToken) }
        await #expect(throws: TokenEndpointError.timeout) { try await server.refresh(first.refreshToken) }
        _ = try await server.refresh(first.refreshToken)
        #expect(server.ledger.entries.dropFirst().map(\.outcome) == [.transientFailure, .timedOut, .issued])
        #expect(server.ledger.repeatedRedemptions.isEmpty, "failed attempts are not redemptions")
    }

    @Test func lostResponseLeavesTheClientWithAUsedToken() async throws {
        let server = server()
        let first = try await server.signIn(alice)
        server.injectRefreshFaults(.lostResponse)
        await #expect(throws: TokenEndpointError.timeout) { try await server.refresh(first.refreshToken) }
        // The client retries with the only refresh token it has: reuse.
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(first.refreshToken) }
        #expect(server.ledger.entries.dropFirst().map(\.outcome) == [.responseLost, .reuseDetected])
    }

    @Test func unknownRefreshTokenIsInvalidGrant() async throws {
        let server = server()
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(RefreshToken("rt.forged")) }
        #expect(server.ledger.entries.map(\.outcome) == [.unknownToken])
    }

    @Test func randomFaultsFollowTheirRateAndSeed() async throws {
        func outcomes(seed: UInt64) async throws -> [LedgerEntry.Outcome] {
            let server = TokenServer(
                configuration: .init(faults: .init(transientFailureRate: 0.3), seed: seed), clock: .manual(time))
            var grant = try await server.signIn(alice)
            for _ in 0..<400 {
                if let next = try? await server.refresh(grant.refreshToken) { grant = next }
            }
            return server.ledger.entries.map(\.outcome)
        }
        let first = try await outcomes(seed: 7)
        #expect(try await outcomes(seed: 7) == first, "same seed, same faults")
        let failures = first.count { $0 == .transientFailure }
        #expect((80...160).contains(failures), "about 30% of 400: \(failures)")
    }

    @Test(arguments: [
        LatencyModel.fixed(.milliseconds(3)), .uniform(.milliseconds(1), .milliseconds(5)),
        .logNormal(median: .milliseconds(2), sigma: 0.5),
    ])
    func latencySamplesAreDeterministicAndInRange(_ model: LatencyModel) {
        var a = SeededRandom(seed: 42), b = SeededRandom(seed: 42)
        let samples = (0..<2_000).map { _ in model.sample(using: &a) }
        #expect(samples == (0..<2_000).map { _ in model.sample(using: &b) })
        #expect(samples.allSatisfy { $0 > .zero && $0 < .milliseconds(50) })
        let sorted = samples.sorted()
        let median = sorted[sorted.count / 2]
        switch model {
        case .fixed(let value): #expect(samples.allSatisfy { $0 == value })
        case .uniform(let low, let high):
            #expect(samples.allSatisfy { $0 >= low && $0 < high })
            #expect(median > .milliseconds(2.5) && median < .milliseconds(3.5))
        case .logNormal(let expected, _):
            #expect(median > expected * 0.9 && median < expected * 1.1)
        case .none: break
        }
    }

    @Test func gateHoldsRefreshesUntilReleased() async throws {
        let server = server()
        let grant = try await server.signIn(alice)
        server.gate.hold()
        let refresh = Task { try await server.refresh(grant.refreshToken) }
        while server.gate.waitingCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(server.ledger.refreshCalls == 0, "not acted on while held")
        server.gate.release()
        _ = try await refresh.value
        #expect(server.ledger.refreshCalls == 1)
    }

    @Test("a client that hangs up while its refresh is held is a dropped connection: nothing changes")
    func cancelledWhileHeldIsDropped() async throws {
        let server = server()
        let grant = try await server.signIn(alice)
        server.gate.hold()
        let refresh = Task { await server.refreshResult(grant.refreshToken) }
        while server.gate.waitingCount == 0 { try await Task.sleep(for: .milliseconds(1)) }
        refresh.cancel()
        #expect(await refresh.value == .failure(.transient))
        server.gate.release()
        let entry = try #require(server.ledger.entries.last)
        #expect(entry.outcome == .dropped && !entry.isRedemption)
        #expect(entry.presentedGeneration == grant.accessToken.generation)
        // The refresh token was never used: it still works.
        #expect(try await server.refresh(grant.refreshToken).accessToken.generation > grant.accessToken.generation)
    }

    @Test("a client that hangs up while the answer travels loses a rotation that happened")
    func cancelledWhileAnsweringLosesTheGrant() async throws {
        let server = server(.init(latency: .fixed(.milliseconds(200))))
        let grant = try await server.signIn(alice)
        let refresh = Task { await server.refreshResult(grant.refreshToken) }
        while server.ledger.refreshCalls == 0 { try await Task.sleep(for: .milliseconds(1)) }
        refresh.cancel()
        #expect(await refresh.value == .failure(.transient))
        let entry = try #require(server.ledger.entries.last)
        #expect(entry.outcome == .responseLost && entry.lostByClient && entry.isRedemption)
        await #expect(throws: TokenEndpointError.invalidGrant) { try await server.refresh(grant.refreshToken) }
    }

    @Test("every call carries when it was sent and answered, and what the harness was doing")
    func ledgerStampsAndContext() async throws {
        let server = server(.init(latency: .fixed(.milliseconds(2))))
        server.setContext("round 7")
        let grant = try await server.signIn(alice)
        _ = try await server.refresh(grant.refreshToken)
        for entry in server.ledger.entries {
            let answered = try #require(entry.respondedAt)
            #expect(answered - entry.sentAt >= 2_000_000)
            #expect(entry.context == "round 7")
        }
        #expect(server.ledger.entries[1].sentAt >= server.ledger.entries[0].respondedAt!)
    }

    @Test("a scripted refresh answers as told, one call each, then the random model resumes")
    func scriptedRefreshes() async throws {
        let server = server()
        var grant = try await server.signIn(alice)
        server.scriptRefreshes([.transientFailure, nil, .timeout])
        #expect(server.scriptedRefreshesLeft == 3)
        await #expect(throws: TokenEndpointError.transient) { try await server.refresh(grant.refreshToken) }
        grant = try await server.refresh(grant.refreshToken)
        await #expect(throws: TokenEndpointError.timeout) { try await server.refresh(grant.refreshToken) }
        _ = try await server.refresh(grant.refreshToken)
        #expect(server.ledger.entries.dropFirst().map(\.outcome) == [.transientFailure, .issued, .timedOut, .issued])
        #expect(server.scriptedRefreshesLeft == 0)
    }

    @Test("a token issued already expired is marked so in the ledger")
    func deliveredExpired() async throws {
        let server = TokenServer(
            configuration: .init(tokenLifetime: .milliseconds(1), latency: .fixed(.milliseconds(20))), clock: .system)
        let grant = try await server.signIn(alice)
        _ = try await server.refresh(grant.refreshToken)
        let entry = try #require(server.ledger.entries.last)
        #expect(entry.deliveredExpired && !entry.deliveredGrant && entry.isPassingFailure)
    }

    @Test func secretsNeverReachDescriptions() async throws {
        let server = server()
        let grant = try await server.signIn(alice)
        let printed = [
            "\(grant.accessToken)", String(reflecting: grant.accessToken), "\(grant.refreshToken)", "\(alice)",
            "\(alice.subject)", "\(grant)", "\(server.ledger.entries)",
        ].joined(separator: "\n")
        #expect(!printed.contains(grant.accessToken.value))
        #expect(!printed.contains(grant.refreshToken.value))
        #expect(!printed.contains("user-alice"))
        #expect(printed.contains("generation: \(grant.accessToken.generation)"))
    }
}
