import Foundation
import SessionContract
import SessionStorage
import TokenServer

/// One workload, fully set by its parameters: the same scenario and seed reproduce the
/// same schedule of expiries, faults and cancellations (thread interleaving aside).
public struct Scenario: Sendable, Hashable, Codable {
    /// What the callers do.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// Callers read a long-lived token as fast as they can (or at a fixed arrival rate).
        case steadyReads = "steady-reads"
        /// Rounds: the token expires, then every caller asks for one at once.
        case expiryStorm = "expiry-storm"
        /// Rounds: every caller reports a 401 for the same token; then some report a stale one.
        case rejectionStorm = "401-storm"
        /// Rounds: callers wait on a refresh, the user signs out before it lands.
        case signOutRace = "sign-out-race"
        /// Rounds: callers wait on user A's refresh, user B signs in before it lands.
        case userSwitch = "user-switch"
        /// Rounds of expiry storms against a server that fails or times out at random.
        case flakyServer = "flaky-server"
        /// Rounds of expiry storms in which part of the waiters are cancelled mid-wait.
        case cancellationStorm = "cancellation-storm"
        /// Rounds of expiry storms over several accounts, each with its own store.
        case family
        /// One expiry storm of a very large crowd, measuring memory per waiting caller.
        case scaleStorm = "scale-storm"
        /// Rounds of a session process over one storage, killed at seeded crash points and
        /// started again: what survives, what is lost, what is left on disk.
        case crashRestart = "crash-restart"
        /// Rounds of 401 storms and expiries over one saved session that two session processes,
        /// with two store instances each, share through one storage.
        case sharedStorage = "shared-storage"
        /// Rounds of 401 storms and expiries, a read phase and a replica killed while it holds the
        /// lock, over one session that replica processes share through a database server.
        case replicas
        /// Rounds of clinical-request bursts through API objects made before sign-in: step-up
        /// prompts (held open, approved, denied, dismissed), expiry of the elevated token, sign-out
        /// with a prompt open, and user switches.
        case stepUp = "step-up"
        /// Subscribers to the store's state (1, then `tasks` of them) through sign-ins, refreshes,
        /// a sign-out racing a refresh, user switches and a revocation.
        case sessionStates = "session-states"
        /// Rounds of generated programs: each caller a short sequence of the contract's calls,
        /// expiries, sign-ins, sign-outs and cancellations, all callers at once.
        case generated
    }

    public var name: String
    public var kind: Kind
    /// Concurrent callers.
    public var tasks: Int
    /// How long a steady scenario runs.
    public var duration: Duration
    /// How many rounds a round-based scenario runs.
    public var rounds: Int
    /// Access-token lifetime the server grants.
    public var tokenLifetime: Duration
    /// The server's response time.
    public var latency: LatencyModel
    /// The server's faults.
    public var faults: FaultModel
    /// Accounts (stores) in the family scenario.
    public var accounts: Int
    /// Steady scenarios only: total calls per second across all callers (open loop), or
    /// `nil` for as fast as possible (closed loop).
    public var arrivalRate: Double?
    /// Fraction of waiters cancelled in a cancellation storm.
    public var cancelFraction: Double
    /// Steady scenarios only: after this many reads a caller reports a 401 for the token it
    /// holds (a write: it forces a refresh unless someone beat it to it); `nil` for reads only.
    public var readersPerWriter: Int?
    /// Seeds the server's faults and latencies and the choice of cancelled callers.
    public var seed: UInt64
    /// Scenarios over storage: the backend (`StorageBackendCatalog`). A preset leaves it `nil`
    /// and runs once per correct backend.
    public var storage: String?
    /// How long the server accepts a used refresh token again before revoking the session.
    public var reuseGraceWindow: Duration
    /// `replicas`: how many replica processes share the session (`nil`: the default, 4).
    public var replicas: Int?
    /// Steady scenarios: a writer reports a 401 for its token this often while the readers read
    /// (`writes-under-reads`); `nil` for none.
    public var writeInterval: Duration?
    /// Steady scenarios, stores with a synchronous read: the OS threads that call
    /// `currentToken()` after the async loop (`nil`: as many as callers, at most 256; 0: none).
    public var syncThreads: Int?
    /// Round-based scenarios: at least this much real time between the starts of two rounds, for
    /// a store whose own refresh policy runs on real time (a refresh rate limit) and cannot live
    /// with the rounds' compressed time. `nil`: rounds follow one another at once.
    public var pace: Duration?

    /// Replica processes of a `replicas` run when the scenario names none.
    public static let defaultReplicas = 4

    public init(
        name: String, kind: Kind, tasks: Int, duration: Duration = .milliseconds(500), rounds: Int = 40,
        tokenLifetime: Duration = .seconds(300), latency: LatencyModel = .none, faults: FaultModel = .none,
        accounts: Int = 1, arrivalRate: Double? = nil, cancelFraction: Double = 0, readersPerWriter: Int? = nil,
        seed: UInt64 = 1, storage: String? = nil, reuseGraceWindow: Duration = .zero
    ) {
        self.name = name
        self.kind = kind
        self.tasks = tasks
        self.duration = duration
        self.rounds = rounds
        self.tokenLifetime = tokenLifetime
        self.latency = latency
        self.faults = faults
        self.accounts = accounts
        self.arrivalRate = arrivalRate
        self.cancelFraction = cancelFraction
        self.readersPerWriter = readersPerWriter
        self.seed = seed
        self.storage = storage
        self.reuseGraceWindow = reuseGraceWindow
    }

    /// The simulated token server every scenario family builds from the scenario: its token
    /// lifetime, reuse grace window, latency, faults and seed. A family changes only what it
    /// owns (a flaky round scripts its own faults, step-up sets the elevated token's lifetime).
    public var serverConfiguration: TokenServer.Configuration {
        TokenServer.Configuration(
            tokenLifetime: tokenLifetime, reuseGraceWindow: reuseGraceWindow, latency: latency, faults: faults,
            seed: seed)
    }

    /// Whether the scenario runs a store over storage (only stores that persist their session).
    public var needsStorage: Bool { kind == .crashRestart || kind == .sharedStorage || kind == .replicas }

    /// Whether the scenario shares one storage between store instances and processes (only
    /// stores that coordinate their refreshes through it: `StoreDescriptor.sharesStorage`).
    public var sharesStorage: Bool { kind == .sharedStorage || kind == .replicas }

    /// Whether the scenario runs in synchronized rounds (a storm per round).
    public var isRoundBased: Bool { kind != .steadyReads }

    /// The most real time ``pace`` adds to a run: each round after the first starts a pace after
    /// the one before it did, so the run lasts at most that much longer than unpaced.
    public var pacingSeconds: Double {
        guard let pace, isRoundBased else { return 0 }
        return Double(max(0, rounds - 1)) * pace.secondsValue
    }

    /// Every parameter that shapes what the scenario measures, as text under the name the
    /// command line gives it (`tasks`, `duration`, `rounds`, `seed`, `rate`…): runs whose
    /// setups differ are not repeats of one another and are never compared.
    public var setup: [String: String] {
        func seconds(_ duration: Duration) -> String { InputRange.text(duration.secondsValue) + "s" }
        func json(_ value: some Encodable) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "?"
        }
        var fields = [
            "kind": kind.rawValue, "tasks": "\(tasks)", "seed": "\(seed)", "accounts": "\(accounts)",
            "token-lifetime": seconds(tokenLifetime), "latency": json(latency), "faults": json(faults),
            "cancel-fraction": InputRange.text(cancelFraction), "reuse-grace": seconds(reuseGraceWindow),
        ]
        if isRoundBased {
            fields["rounds"] = "\(rounds)"
        } else {
            fields["duration"] = seconds(duration)
            fields["rate"] = arrivalRate.map(InputRange.text) ?? "closed loop"
        }
        if let readersPerWriter { fields["readers-per-writer"] = "\(readersPerWriter)" }
        if let storage { fields["storage"] = storage }
        if kind == .replicas { fields["replicas"] = "\(replicas ?? Self.defaultReplicas)" }
        if let pace, isRoundBased { fields["pace"] = seconds(pace) }
        if let syncThreads, !isRoundBased { fields["sync-threads"] = "\(syncThreads)" }
        if let writeInterval, !isRoundBased { fields["write-interval"] = seconds(writeInterval) }
        return fields
    }

    /// Validates the parameters, naming the first one out of range.
    public func validate() throws(ScenarioError) {
        guard InputRange.tasks.contains(tasks) else {
            throw .invalid("\(name): tasks must be \(InputRange.text(InputRange.tasks)) (got \(tasks))")
        }
        guard InputRange.durationSeconds.contains(duration.secondsValue) else {
            throw .invalid("\(name): duration must be between 1ms and 1h")
        }
        guard InputRange.rounds.contains(rounds) else {
            throw .invalid("\(name): rounds must be \(InputRange.text(InputRange.rounds)) (got \(rounds))")
        }
        guard tokenLifetime > .zero else { throw .invalid("\(name): token lifetime must be positive") }
        guard accounts >= 1, accounts <= tasks else {
            throw .invalid("\(name): accounts must be between 1 and tasks (\(tasks)), got \(accounts)")
        }
        if let arrivalRate, !InputRange.rate.contains(arrivalRate) {
            throw .invalid("\(name): arrival rate must be \(InputRange.text(InputRange.rate)) calls per second")
        }
        if let readersPerWriter, !InputRange.readersPerWriter.contains(readersPerWriter) {
            throw .invalid(
                "\(name): readers per writer must be \(InputRange.text(InputRange.readersPerWriter)) (got \(readersPerWriter))"
            )
        }
        guard (0...1).contains(cancelFraction) else {
            throw .invalid("\(name): cancel fraction must be between 0 and 1")
        }
        if needsStorage {
            guard let storage else { throw .invalid("\(name): needs a storage backend") }
            guard let backend = StorageBackendCatalog.named(storage) else {
                throw .invalid(
                    "\(name): unknown storage backend '\(Printable.name(storage))'; known: "
                        + StorageBackendCatalog.all.map(\.name).joined(separator: ", "))
            }
            if kind == .replicas, !backend.isServer {
                throw .invalid(
                    "\(name): replicas share a session through a database server; \(backend.name) keeps it in a "
                        + "folder (known: \(StorageBackendCatalog.all.filter(\.isServer).map(\.name).joined(separator: ", ")))"
                )
            }
            if kind == .crashRestart, backend.isServer {
                throw .invalid("\(name): crash-restart runs over a backend in a folder; \(backend.name) is a server's")
            }
        }
        if let pace, !InputRange.paceSeconds.contains(pace.secondsValue) {
            throw .invalid("\(name): pace must be between 1ms and 10m")
        }
        if let replicas, !InputRange.replicas.contains(replicas) {
            throw .invalid("\(name): replicas must be \(InputRange.text(InputRange.replicas)) (got \(replicas))")
        }
        if let writeInterval, !InputRange.writeIntervalSeconds.contains(writeInterval.secondsValue) {
            throw .invalid("\(name): the write interval must be between 100us and 10s")
        }
        if let syncThreads, !InputRange.syncThreads.contains(syncThreads) {
            throw .invalid(
                "\(name): sync threads must be \(InputRange.text(InputRange.syncThreads)) (got \(syncThreads))")
        }
        let rates = [faults.transientFailureRate, faults.timeoutRate, faults.lostResponseRate]
        guard rates.allSatisfy({ (0...1).contains($0) }), rates.reduce(0, +) <= 1 else {
            throw .invalid("\(name): fault rates must each be in 0…1 and sum to at most 1")
        }
    }
}

public enum ScenarioError: Error, Equatable, CustomStringConvertible {
    case invalid(String)
    case unknown(String)
    case unknownBackend(String)
    /// A scenario whose backend this build left out, and how to get it.
    case leftOut(String, String)

    public var description: String {
        switch self {
        case .invalid(let message): message
        case .unknown(let name):
            "unknown scenario '\(Printable.name(name))'; known: \(ScenarioCatalog.all.map(\.name).joined(separator: ", "))"
        case .unknownBackend(let name):
            "unknown storage backend in '\(Printable.name(name))'; known: "
                + StorageBackendCatalog.all.map(\.name).joined(separator: ", ")
        case .leftOut(let name, let remedy): "\(Printable.name(name)): \(remedy)"
        }
    }
}
