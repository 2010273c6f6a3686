import Foundation
import SessionContract
import SessionStorage
import TokenServer

/// A named preset and what happens in it.
public struct ScenarioPreset: Sendable {
    public let scenario: Scenario
    /// What happens in the scenario, in one Markdown line (links relative to docs/): the "what happens"
    /// column of docs/scenarios.md, which is generated from it.
    public let whatHappens: String

    public init(_ scenario: Scenario, whatHappens: String) {
        self.scenario = scenario
        self.whatHappens = whatHappens
    }
}

/// The named presets.
public enum ScenarioCatalog {
    /// Every preset with what happens in it, in the order `list` and the docs show them.
    public static let presets: [ScenarioPreset] = [
        ScenarioPreset(
            Scenario(name: "steady-reads", kind: .steadyReads, tasks: 4, duration: .milliseconds(400)),
            whatHappens: "4 callers read a long-lived token as fast as they can (or at `--rate`)"),
        ScenarioPreset(
            {
                var scenario = Scenario(
                    name: "writes-under-reads", kind: .steadyReads, tasks: 4, duration: .milliseconds(400))
                scenario.writeInterval = .milliseconds(1)
                return scenario
            }(),
            whatHappens:
                """
                the readers of `steady-reads` read as fast as they can while a writer reports a 401 for its token \
                once a millisecond (a refresh each time): the writer's wait behind the readers (`rejection` under \
                the async callers, `sync-write` under the `currentToken()` threads) and the readers' throughput \
                while it writes
                """),
        ScenarioPreset(
            Scenario(name: "expiry-storm", kind: .expiryStorm, tasks: 64, rounds: 40),
            whatHappens:
                """
                the token expires (in odd rounds: is halfway into the refresh skew, due but not expired); 64 \
                callers ask, in waves: before the refresh is sent, while it is in flight, as it lands, after; the \
                synchronous read before, during and after; 40 rounds
                """),
        ScenarioPreset(
            Scenario(name: "401-storm", kind: .rejectionStorm, tasks: 64, rounds: 40),
            whatHappens:
                """
                64 callers report a 401 for the current token, in the same waves; every other round the token has \
                also expired and half of them read instead, so a store's two refresh paths race; then stale 401s \
                that must not refresh
                """),
        ScenarioPreset(
            Scenario(name: "sign-out-race", kind: .signOutRace, tasks: 32, rounds: 30),
            whatHappens:
                """
                the user signs out, in turn: while 32 callers wait on a held refresh; while 16 readers (both \
                reads, in turn) hit a fresh cached token; while the refresh is held, then signs in again at once \
                before it lands; twice in a row; for a store that keeps its session, while it saves the \
                refreshed grant, or in turn another user's sign-in (the save held open until the sign-out \
                returns); calls after it returns must get \
                nothing of the session; every fourth sign-in after it is refused first
                """),
        ScenarioPreset(
            Scenario(name: "user-switch", kind: .userSwitch, tasks: 32, rounds: 30),
            whatHappens:
                """
                the same with another sign-in instead of a sign-out, in turn: user B with a refresh in flight, \
                user B with a cached token, the same user again with a refresh in flight, user B refused by the \
                server (A's session ends all the same), and for a store that keeps its session, user B while it \
                saves A's refreshed grant, or in turn A again while it saves B's sign-in
                """),
        ScenarioPreset(
            Scenario(
                name: "flaky-server", kind: .flakyServer, tasks: 32, rounds: 40,
                faults: FaultModel(
                    transientFailureRate: 0.25, timeoutRate: 0.1, timeoutAfter: .milliseconds(2),
                    lostResponseRate: 0.05)),
            whatHappens:
                """
                expiry storms of 32 callers against a server scripted to fail: a transient error in 25% of rounds, \
                a timeout in 10%, an outage (three failures in a row) and two failures back to back in 10% each; \
                follow-up calls check the failure was not sticky; a lost answer (whose retry is a reuse that \
                revokes the session: then the same user signs in again) and an administrator's revocation (then \
                the other user signs in), each with a 401 and a synchronous read after it
                """),
        ScenarioPreset(
            Scenario(name: "cancellation-storm", kind: .cancellationStorm, tasks: 64, rounds: 30, cancelFraction: 0.5),
            whatHappens:
                """
                expiry storms of 64; the caller whose call started the refresh is cancelled in even rounds, half \
                of the others in every round, everyone in every fifth; the server sees a cancelled refresh as a \
                dropped connection
                """),
        ScenarioPreset(
            Scenario(name: "family", kind: .family, tasks: 64, rounds: 30, accounts: 4),
            whatHappens: "staggered expiry storms over 4 accounts, each with its own store"),
        ScenarioPreset(
            Scenario(name: "scale-storm", kind: .scaleStorm, tasks: 100_000, rounds: 1),
            whatHappens:
                """
                one expiry storm of 100,000 callers; memory per waiting caller (run by name, not in the default \
                set)
                """),
        ScenarioPreset(
            Scenario(name: "crash-restart", kind: .crashRestart, tasks: 16, rounds: 16),
            whatHappens:
                """
                16 rounds of session processes, one after another over one storage folder, each killed at a crash \
                point of the seed's schedule and the next started on what it left; once per correct backend \
                (`crash-restart:BACKEND` picks one). The default `compare` runs it on `json-file` for every store \
                that keeps its session in storage (about 1 s per store × backend) — see [Tokens at \
                rest](storage-and-crashes.md)
                """),
        ScenarioPreset(
            Scenario(
                name: "crash-restart-grace", kind: .crashRestart, tasks: 16, rounds: 16,
                reuseGraceWindow: .seconds(30)),
            whatHappens:
                """
                the same against a server with a 30 s reuse grace window (as Okta's and Auth0's rotation settings \
                offer)
                """),
        ScenarioPreset(
            Scenario(
                name: "shared-storage", kind: .sharedStorage, tasks: 8, rounds: 16, latency: .fixed(.milliseconds(2))),
            whatHappens:
                """
                2 session processes × 2 store instances over one saved session, 16 events — 401 storms and \
                expiries of 8 callers per instance, by all instances or some — then a sign-out by one: exactly one \
                refresh per event across all of them, none after the sign-out; once per correct backend \
                (`shared-storage:BACKEND` picks one); the default `compare` runs it on `json-file` for every store \
                that shares its storage — see [Shared \
                storage](storage-and-crashes.md#shared-storage-several-holders-of-one-saved-session)
                """),
        ScenarioPreset(
            Scenario(name: "replicas", kind: .replicas, tasks: 16, rounds: 16, latency: .fixed(.milliseconds(2))),
            whatHappens:
                """
                4 replica processes (`--replicas`) of 16 callers share one session through PostgreSQL and reach \
                the token server over HTTP: the 16 events of `shared-storage`, 2,000 reads per caller that must \
                not reach the database, a replica killed holding the lock, one that stalls holding it, a sign-out; \
                once per correct server backend (`replicas:BACKEND` picks one), run by name, needs \
                `SESSION_BENCH_POSTGRES_URL` — see [Replicas through PostgreSQL](replicas.md)
                """),
        ScenarioPreset(
            Scenario(name: "step-up", kind: .stepUp, tasks: 100, rounds: 6),
            whatHappens:
                """
                seed 000's clinical records: 4 API objects made before sign-in and kept (plus 2 made in each \
                session, kept for the later ones); per round (6) a sign-in (the users alternate), a burst of 100 \
                concurrent clinical requests — half through kept objects, half through objects made on demand — \
                with the user's prompt held open (meanwhile reads from the store and from API objects, and a 401, \
                must complete, and two requests are cancelled), answered approve, or in two seeded rounds deny and \
                dismiss (the next request must prompt again); a burst with the elevated token fresh (no prompt); \
                one after it expired (one prompt); rounds end in turn with a sign-out during a prompt, a user \
                switch during a prompt, a sign-out with the elevated token fresh, a user switch with it fresh — \
                see [Step-up, API objects and observable state](step-up-and-state.md)
                """),
        ScenarioPreset(
            Scenario(name: "session-states", kind: .sessionStates, tasks: 100, rounds: 3),
            whatHappens:
                """
                1, then 100, subscribers to the store's state (and one slow one, 1 ms per state) through 3 rounds \
                of sign-in, expiry, 401, a subscriber joining mid-session, ten 401s back to back, sign-out while a \
                refresh is held at the server (landing after it), sign-in, user switch, revocation, and a final \
                sign-out; observer lag from the call that makes a change to each subscriber's receipt
                """),
        ScenarioPreset(
            Scenario(
                name: "generated", kind: .generated, tasks: 4, rounds: 200,
                latency: .uniform(.microseconds(50), .microseconds(500)),
                faults: FaultModel(timeoutAfter: .milliseconds(2))),
            whatHappens:
                """
                200 generated programs, each of 4 callers at once, each caller up to 5 steps drawn from the seed: \
                `validToken`, `tokenRejected` of the last token it saw, `currentToken`, an expiry, a token come \
                due, a sign-in as either of two users (or refused), a sign-out, a read or 401 cancelled from \
                another task, a server that fails, times out, loses its answer or revokes; every call judged \
                against the contract's model. `explore --scenario generated` makes each step and each \
                interleaving a choice of the schedule, and shrinks a failing program — see \
                [explore](explore.md#generated-programs)
                """),
    ]

    public static let all: [Scenario] = presets.map(\.scenario)

    /// What `compare` runs when no scenario is named: every preset over one store but the
    /// 100,000-caller scale storm, and the scenarios over storage once each, on the plain JSON
    /// file, so that a store that keeps or shares its session is judged on it (they run only such
    /// stores). The scale storm, the grace-window variant, the other backends and the replicas run
    /// by name.
    public static var defaults: [Scenario] {
        all.filter { $0.kind != .scaleStorm && !$0.needsStorage }
            + ["crash-restart:json-file", "shared-storage:json-file"].flatMap { (try? resolved($0)) ?? [] }
    }

    public static func named(_ name: String) throws(ScenarioError) -> Scenario {
        guard let scenario = all.first(where: { $0.name == name }) else { throw .unknown(name) }
        return scenario
    }

    /// What `name` runs: its preset, or, for a scenario over storage, the preset once per
    /// correct backend; `name:backend` (`crash-restart:encrypted-file`) picks one, broken ones too.
    public static func resolved(_ name: String) throws(ScenarioError) -> [Scenario] {
        let parts = name.split(separator: ":", maxSplits: 1).map(String.init)
        guard let base = parts.first, let preset = all.first(where: { $0.name == base }) else {
            throw .unknown(name)
        }
        guard preset.needsStorage else {
            guard parts.count == 1 else { throw .unknown(name) }
            return [preset]
        }
        let backends: [String]
        let servers = preset.kind == .replicas
        if parts.count == 2 {
            if let leftOut = StorageBackendCatalog.leftOut(named: parts[1]) { throw .leftOut(name, leftOut.remedy) }
            guard StorageBackendCatalog.named(parts[1]) != nil else { throw .unknownBackend(name) }
            backends = [parts[1]]
        } else {
            backends = StorageBackendCatalog.correct(servers: servers).map(\.name)
            // Every backend it runs on was left out of this build (replicas without PostgreSQL).
            if backends.isEmpty, let leftOut = StorageBackendCatalog.leftOut.first(where: { $0.isServer == servers }) {
                throw .leftOut(name, leftOut.remedy)
            }
        }
        return backends.map { backend in
            var scenario = preset
            scenario.name = "\(preset.name):\(backend)"
            scenario.storage = backend
            return scenario
        }
    }
}
