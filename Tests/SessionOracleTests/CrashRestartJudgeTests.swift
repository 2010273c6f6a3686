import SessionContract
import SessionOracle
import Testing
import TokenServer

/// `crash-restart`'s judge on histories written by hand: a real server rotates the refresh
/// tokens (its ledger names each call's process, as the driver's context does); what each
/// process's callers got and what the storage held after it are chosen.
@Suite("The crash-restart judge, on histories written by hand")
struct CrashRestartJudgeTests {
    typealias Life = CrashRestartHistory.Life

    /// A token server whose calls are made on behalf of numbered session processes.
    final class Network {
        let server = TokenServer(configuration: .init(), clock: .manual(ManualTime()))
        var grants: [UInt64: TokenGrant] = [:]

        func signIn(_ process: Int, _ crash: CrashPoint) async throws -> UInt64 {
            server.setContext(CrashRestartHistory.context(process, crash, "launch"))
            let grant = try await server.signIn(Credentials(subject: Subject("crash-restart-user")))
            grants[grant.accessToken.generation] = grant
            return grant.accessToken.generation
        }

        /// A refresh of process `process`'s storm presenting generation `presented`'s refresh token.
        @discardableResult
        func refresh(_ process: Int, _ crash: CrashPoint, presenting presented: UInt64) async -> UInt64? {
            server.setContext(CrashRestartHistory.context(process, crash, "storm"))
            guard let grant = try? await server.refresh(grants[presented]!.refreshToken) else { return nil }
            grants[grant.accessToken.generation] = grant
            return grant.accessToken.generation
        }
    }

    static func life(
        _ index: Int, _ crash: CrashPoint = .clean, signedIn: Bool, first: Result<UInt64, SessionError>?,
        got: [Result<UInt64, SessionError>] = [], issued: [UInt64] = [], disk: StoredState
    ) -> Life {
        var life = Life(index: index, crash: crash, signedIn: signedIn)
        life.first = first
        life.got = got
        life.issued = issued
        life.disk = disk
        return life
    }

    static func history(_ lives: [Life], _ network: Network, protectsAtRest: Bool = false) -> CrashRestartHistory {
        var history = CrashRestartHistory(stormSize: 4, backend: "json-file", protectsAtRest: protectsAtRest)
        history.lives = lives
        history.ledger = network.server.ledger.entries
        for index in history.lives.indices {
            history.lives[index].refused = CrashRestartJudge.refused(history.entries(of: index))
        }
        return history
    }

    @Test("a session saved before it was handed out survives the restart: no finding, one restart, one survival")
    func survived() async throws {
        let network = Network()
        let first = try await network.signIn(0, .afterPublish)
        let second = try #require(await network.refresh(0, .afterPublish, presenting: first))
        let third = try #require(await network.refresh(1, .clean, presenting: second))
        let history = Self.history(
            [
                Self.life(
                    0, .afterPublish, signedIn: true, first: .success(first),
                    got: Array(repeating: .success(second), count: 4),
                    issued: [first, second], disk: .session(generation: second)),
                Self.life(
                    1, signedIn: false, first: .success(second), got: Array(repeating: .success(third), count: 4),
                    issued: [third], disk: .session(generation: third)),
            ], network)
        let (findings, tally) = CrashRestartJudge.judge(history)
        #expect(findings.isEmpty)
        #expect(tally.restarts == 1)
        #expect(tally.survived == 1)
        #expect(tally.endedByReuse == 0)
        #expect(tally.storms == 2)
        #expect(tally.stormRefreshCalls == 2)
        #expect(tally.served == 8)
    }

    @Test("callers handed a generation the storage did not hold at the crash is I15: published before persisted")
    func publishedBeforePersisted() async throws {
        let network = Network()
        let first = try await network.signIn(0, .beforeSave)
        let second = try #require(await network.refresh(0, .beforeSave, presenting: first))
        await network.refresh(1, .clean, presenting: first)  // the reuse: the family is revoked
        let history = Self.history(
            [
                Self.life(
                    0, .beforeSave, signedIn: true, first: .success(first), got: [.success(second)],
                    issued: [first, second], disk: .session(generation: first)),
                Self.life(
                    1, signedIn: false, first: .success(first), got: [.failure(.refreshTokenRevoked)],
                    disk: .session(generation: first)),
            ], network)
        let findings = CrashRestartJudge.judge(history).findings
        #expect(findings.map(\.invariant) == [.durableRotation])
        #expect(
            findings.first?.summary.contains(
                "callers had generation \(second), but the storage held generation \(first)") == true)
        #expect(
            findings.first?.trace == [
                "the grant of generation \(second) was handed out before it was saved (persist before publish)"
            ])
    }

    @Test("a rotation lost in flight that the server then refuses is counted, not judged: no store can keep it")
    func lostInFlightRefused() async throws {
        let network = Network()
        let first = try await network.signIn(0, .inFlight)
        await network.refresh(0, .inFlight, presenting: first)  // rotated; the answer never arrived
        await network.refresh(1, .clean, presenting: first)
        let history = Self.history(
            [
                Self.life(
                    0, .inFlight, signedIn: true, first: .success(first), issued: [first, first + 1],
                    disk: .session(generation: first)),
                Self.life(
                    1, signedIn: false, first: .success(first),
                    got: Array(repeating: .failure(.refreshTokenRevoked), count: 4), disk: .session(generation: first)),
            ], network)
        #expect(history.lives[1].refused)
        let (findings, tally) = CrashRestartJudge.judge(history)
        #expect(findings.isEmpty)
        #expect(tally.rotationsLost == ["in-flight": 1])
        #expect(tally.endedByReuse == 1)
        #expect(tally.survived == 0)
    }

    @Test("a restarted store that gives up a session the server never refused is I15")
    func gaveUpOnItsOwn() async throws {
        let network = Network()
        let first = try await network.signIn(0, .inFlight)
        await network.refresh(0, .inFlight, presenting: first)
        let history = Self.history(
            [
                Self.life(
                    0, .inFlight, signedIn: true, first: .success(first), issued: [first, first + 1],
                    disk: .session(generation: first)),
                // Process 1 never asked the server: its first call failed on its own.
                Self.life(1, signedIn: false, first: .failure(.refreshTokenRevoked), disk: .session(generation: first)),
            ], network)
        let findings = CrashRestartJudge.judge(history).findings
        #expect(findings.map(\.invariant) == [.durableRotation])
        #expect(findings.first?.summary.contains("ended a session the server had not refused") == true)
    }

    @Test("a sign-out the storage did not keep, and a file still holding its refresh token, are each I16")
    func signOutNotDurable() async throws {
        let network = Network()
        let first = try await network.signIn(0, .afterSignOut)
        let second = try #require(await network.refresh(0, .afterSignOut, presenting: first))
        var signedOut = Self.life(
            0, .afterSignOut, signedIn: true, first: .success(first), got: [.success(second)], issued: [first, second],
            disk: .session(generation: second))
        signedOut.signedOut = true
        signedOut.afterSignOut = ["session.json.bak: refresh token"]
        let third = try await network.signIn(1, .clean)
        let history = Self.history(
            [signedOut, Self.life(1, signedIn: true, first: .success(third), disk: .session(generation: third))],
            network)
        let findings = CrashRestartJudge.judge(history).findings
        #expect(findings.map(\.invariant) == [.signOutDurable, .signOutDurable])
        #expect(findings.first?.trace == ["session.json.bak: refresh token"])
        #expect(findings.last?.summary.contains("a session signed out before the crash was still in storage") == true)
    }

    @Test("a sign-out that left nothing behind is no finding")
    func signOutDurable() async throws {
        let network = Network()
        let first = try await network.signIn(0, .afterSignOut)
        var signedOut = Self.life(
            0, .afterSignOut, signedIn: true, first: .success(first), issued: [first], disk: .empty)
        signedOut.signedOut = true
        signedOut.afterSignOut = []
        let second = try await network.signIn(1, .clean)
        let history = Self.history(
            [signedOut, Self.life(1, signedIn: true, first: .success(second), disk: .session(generation: second))],
            network)
        let (findings, tally) = CrashRestartJudge.judge(history)
        #expect(findings.isEmpty)
        #expect(tally.restarts == 0)
    }

    @Test("a stored session that cannot be read back is I14")
    func unreadable() async throws {
        let network = Network()
        let first = try await network.signIn(0, .midSave)
        let history = Self.history(
            [
                Self.life(0, .midSave, signedIn: true, first: .success(first), issued: [first], disk: .unreadable),
                Self.life(1, signedIn: false, first: .failure(.signedOut), disk: .unreadable),
            ], network)
        #expect(CrashRestartJudge.judge(history).findings.map(\.invariant) == [.restorable])
    }

    @Test("a restarted store presenting an older refresh token than the access token it restored is I15")
    func presentedOlder() async throws {
        let network = Network()
        let first = try await network.signIn(0, .afterSave)
        let second = try #require(await network.refresh(0, .afterSave, presenting: first))
        await network.refresh(1, .clean, presenting: first)
        let history = Self.history(
            [
                Self.life(
                    0, .afterSave, signedIn: true, first: .success(first), issued: [first, second],
                    disk: .session(generation: second)),
                Self.life(
                    1, signedIn: false, first: .success(second), got: [.failure(.refreshTokenRevoked)],
                    disk: .session(generation: second)),
            ], network)
        let summaries = CrashRestartJudge.judge(history).findings.filter { $0.invariant == .durableRotation }
            .map(\.summary)
        #expect(summaries.contains { $0.contains("presented generation \(first)'s refresh token") })
    }

    @Test("two refreshes in one process's storm is I1; its callers getting two generations is I2")
    func stormRefreshedTwice() async throws {
        let network = Network()
        let first = try await network.signIn(0, .clean)
        let second = try #require(await network.refresh(0, .clean, presenting: first))
        let third = try #require(await network.refresh(0, .clean, presenting: second))
        let history = Self.history(
            [
                Self.life(
                    0, signedIn: true, first: .success(first), got: [.success(second), .success(third)],
                    issued: [first, second, third], disk: .session(generation: third))
            ], network)
        let (findings, tally) = CrashRestartJudge.judge(history)
        #expect(findings.map(\.invariant) == [.singleFlight, .sameOutcome])
        #expect(findings.first?.summary == "process 0's 401 storm of 4 callers made 2 refresh calls")
        #expect(tally.stormRefreshCalls == 2)
    }

    @Test("secrets in clear or loose files are I17 only on a backend that promises protection at rest")
    func atRest() async throws {
        let network = Network()
        let first = try await network.signIn(0, .clean)
        let lives = [
            Self.life(0, signedIn: true, first: .success(first), issued: [first], disk: .session(generation: first))
        ]
        var promised = Self.history(lives, network, protectsAtRest: true)
        promised.exposures = ["session.json: refresh token"]
        promised.looseFiles = ["session.json 0644"]
        let findings = CrashRestartJudge.judge(promised).findings
        #expect(findings.map(\.invariant) == [.sealedAtRest, .sealedAtRest])
        #expect(findings.map(\.trace) == [["session.json: refresh token"], ["session.json 0644"]])
        var plain = promised
        plain.protectsAtRest = false
        #expect(CrashRestartJudge.judge(plain).findings.isEmpty)
    }

    @Test(
        "a stored session the restarted store came back signed out from is I15; so is storage left empty under a handed-out token"
    )
    func sessionNotRestored() async throws {
        let network = Network()
        let first = try await network.signIn(0, .afterPublish)
        let second = try #require(await network.refresh(0, .afterPublish, presenting: first))
        let kept = Self.history(
            [
                Self.life(
                    0, .afterPublish, signedIn: true, first: .success(first), got: [.success(second)],
                    issued: [first, second], disk: .session(generation: second)),
                Self.life(1, signedIn: false, first: .failure(.signedOut), disk: .session(generation: second)),
            ], network)
        let findings = CrashRestartJudge.judge(kept).findings
        #expect(findings.map(\.invariant) == [.durableRotation, .durableRotation])
        #expect(
            findings.first?.summary.contains("nothing was lost at the crash, yet the session did not survive") == true)
        #expect(
            findings.last?.summary.contains("the storage held a session but the store came back signed out") == true)

        let lost = Self.history(
            [
                Self.life(
                    0, .afterPublish, signedIn: true, first: .success(first), got: [.success(second)],
                    issued: [first, second], disk: .empty),
                Self.life(1, signedIn: false, first: .failure(.signedOut), disk: .empty),
            ], network)
        let (emptied, tally) = CrashRestartJudge.judge(lost)
        #expect(
            emptied.map(\.summary) == [
                "callers had generation \(second), but the storage held no session: process 1 restarted after a after-publish crash"
            ])
        #expect(tally.restarts == 1 && tally.survived == 0)
    }

    @Test("a rotation lost at the crash that the restarted store recovers from is counted, and the session survives")
    func lostRotationRecovered() async throws {
        let network = Network()
        let first = try await network.signIn(0, .beforeSave)
        await network.refresh(0, .beforeSave, presenting: first)  // rotated; the process died before saving
        let history = Self.history(
            [
                Self.life(
                    0, .beforeSave, signedIn: true, first: .success(first), issued: [first, first + 1],
                    disk: .session(generation: first)),
                // The restarted store went on from what it had restored: its storm got a new token.
                Self.life(
                    1, signedIn: false, first: .success(first), got: [.success(first + 5)],
                    disk: .session(generation: first + 5)),
            ], network)
        let (findings, tally) = CrashRestartJudge.judge(history)
        #expect(findings.isEmpty)
        #expect(tally.rotationsLost == ["before-save": 1])
        #expect(tally.survived == 1 && tally.endedByReuse == 0)
    }

    @Test("within one process, its sign-out leftovers are reported before its restart's findings")
    func orderWithinAProcess() async throws {
        let network = Network()
        let first = try await network.signIn(0, .afterPublish)
        var signedOut = Self.life(
            1, .afterSignOut, signedIn: false, first: .success(first), disk: .session(generation: first))
        signedOut.signedOut = true
        signedOut.afterSignOut = ["session.json.bak: refresh token"]
        let history = Self.history(
            [
                Self.life(0, .afterPublish, signedIn: true, first: .success(first), issued: [first], disk: .unreadable),
                signedOut,
            ], network)
        #expect(CrashRestartJudge.judge(history).findings.map(\.invariant) == [.signOutDurable, .restorable])
    }
}
