import Foundation
import SessionContract

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

    public init(
        store: String, backend: String, directory: String, incarnation: Int, signIn: Bool, subject: String,
        callers: Int, readsPerCaller: Int, crash: CrashPoint, midSaveLimit: Int
    ) {
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
    /// The process could not do its part (unknown store, storage unusable): the run errors.
    case problem(String)
    // Driver → session process.
    case plan(SessionProcessPlan)
    case grant(id: Int, TokenGrant)
    case failure(id: Int, TokenEndpointError)
}

/// What a storage folder holds, as the backend reads it back.
enum StoredState: Equatable {
    case session(generation: UInt64)
    case empty
    case unreadable
}
