import Foundation
import SessionContract
import SessionOracle

/// What one session process does: the store and storage it opens, and how its round ends.
/// Sent as the first line of its standard input.
public struct SessionProcessPlan: Sendable, Codable, Hashable {
    /// The store to make (a name the command line knows).
    public var store: String
    /// The storage backend (a name from `StorageBackendCatalog`).
    public var backend: String
    /// The folder the backend owns; the same for every process of one run.
    public var directory: String
    /// Which process of the run this is, from 0.
    public var incarnation: Int
    /// Sign in first (the session ended, or none was ever started).
    public var signIn: Bool
    /// The user to sign in as. Personal data in a real app: never printed.
    public var subject: String
    /// Callers of the round's 401 storm, and of the read phase after it.
    public var callers: Int
    /// Reads per caller in the read phase, which checks that reads never touch storage.
    public var readsPerCaller: Int
    /// How the round ends.
    public var crash: CrashPoint
    /// For ``CrashPoint/midSave``: the file-size limit, in bytes, that cuts the write short.
    public var midSaveLimit: Int
    /// `shared-storage`: how many store instances the process makes over the storage (each with
    /// a storage of its own on the same folder), and the start of the manual clock they share
    /// with the driver's server. `0` instances: a `crash-restart` round.
    public var instances: Int
    public var clockStart: Int64
    /// `replicas`: where the driver serves its token server; `nil`: over the pipe.
    public var serverURL: String?

    public init(
        store: String, backend: String, directory: String, incarnation: Int, signIn: Bool, subject: String,
        callers: Int, readsPerCaller: Int, crash: CrashPoint, midSaveLimit: Int, instances: Int = 0,
        clockStart: Int64 = 0, serverURL: String? = nil
    ) {
        self.serverURL = serverURL
        self.store = store
        self.backend = backend
        self.directory = directory
        self.incarnation = incarnation
        self.signIn = signIn
        self.subject = subject
        self.callers = callers
        self.readsPerCaller = readsPerCaller
        self.crash = crash
        self.midSaveLimit = midSaveLimit
        self.instances = instances
        self.clockStart = clockStart
    }
}

/// One line between the driver and a session process. Grants and refresh tokens cross this
/// pipe (it is the session's network); nothing of it is ever printed or written to results.
enum SessionLine: Equatable {
    // Session process → driver.
    /// The token endpoint's calls, answered by ``grant(_:_:)`` or ``failure(_:_:)``.
    case signInRequest(id: Int, subject: String)
    case refreshRequest(id: Int, refreshToken: String)
    /// The first `validToken()` after the store was made (restored or signed in).
    case first(Result<UInt64, SessionError>)
    /// A caller of the storm got this generation or this error.
    case got(Result<UInt64, SessionError>)
    /// One save took this many nanoseconds.
    case saved(nanoseconds: Int64)
    /// The read phase: reads made, and storage calls while they ran.
    case reads(count: Int, storageCalls: Int)
    /// `signOut()` returned.
    case signedOut
    /// The round's work is done; the process waits to be killed or told to exit.
    case done
    /// `shared-storage`: a caller of store instance `instance` got this generation or this
    /// error after `nanoseconds`.
    case answered(instance: Int, Result<UInt64, SessionError>, nanoseconds: Int64)
    /// `shared-storage`: every caller of round `index` has its answer.
    case roundDone(Int)
    /// `replicas`: the instance told to crash holds its turn to refresh and waits to be killed.
    case inTurn
    /// `replicas` over a network: what the transport added to each refresh since the last report
    /// (round trip less the server's own time), in nanoseconds.
    case overheads([Int64])
    /// The process could not do its part (unknown store, storage unusable): the run errors.
    case problem(String)
    /// The storage's server could not be reached (a database that is down): the run errors, and
    /// nothing the store did since is judged.
    case unreachable(String)
    /// A storage call failed to write (a full disk, a failing one): the run errors, saying why,
    /// and nothing the store did since is judged — the store did not choose what it met.
    case storageFailed(String)
    // Driver → session process.
    case plan(SessionProcessPlan)
    /// `shared-storage`: the next round.
    case round(SharedRound)
    case grant(id: Int, TokenGrant)
    case failure(id: Int, TokenEndpointError)
}

extension SessionLine {
    /// The driver's answer to the token-endpoint request `id`.
    static func reply(_ id: Int, _ result: Result<TokenGrant, TokenEndpointError>) -> SessionLine {
        switch result {
        case .success(let grant): .grant(id: id, grant)
        case .failure(let error): .failure(id: id, error)
        }
    }
}

/// One step of `shared-storage`, as the driver orders it: move the clock on by `advance`
/// nanoseconds (past the token's lifetime, for an expiry), then the step's action by the store
/// instances it names; the other instances only move their clock.
struct SharedRound: Equatable, Codable {
    enum Action: String, Codable {
        /// Each instance reads its token (`validToken()`) and keeps it for the storm that follows.
        case hold
        /// Every caller reports a 401 for the token its instance holds.
        case storm
        /// Every caller asks for a token (`validToken()`).
        case expiry
        /// Each instance signs out.
        case signOut = "sign-out"
        /// `replicas`: every caller reads its token over and over (`readsPerCaller` each); the
        /// process reports the reads and the storage calls made meanwhile (there must be none).
        case reads
        /// `replicas`: the instance refreshes (the clock has moved past the token's lifetime) and,
        /// inside its turn, says `inTurn` and waits to be killed. No `roundDone` follows.
        case crash
        /// `replicas`: the instance refreshes and, in its turn, after reading the storage, says
        /// `inTurn` and waits, lock held, until `release`. No `roundDone` follows.
        case stall
        /// `replicas`: a stalled instance goes on; the round is done when its refresh is.
        case release
    }

    var index: Int
    var action: Action
    var advance: Int64
    /// The instances that act, numbered across processes: process × instances per process + instance.
    var holders: [Int]
}
