import SessionContract
import Synchronization

/// The storage backends session-bench ships, by name.
///
/// The encrypted backends keep their key in `<directory>/key` and their data in
/// `<directory>/data`, so the data folder alone reveals nothing; the plain ones use the folder
/// itself.
public enum StorageBackendCatalog {
    /// Backends a build adds (the PostgreSQL ones), after the built-in ones.
    private static let extra = Mutex<[StorageBackend]>([])

    /// Adds backends (before the command line parses its arguments). A name already known is
    /// not added again.
    public static func register(_ backends: [StorageBackend]) {
        extra.withLock { extra in
            for backend in backends where !(builtIn + extra).contains(backend) { extra.append(backend) }
        }
    }

    /// Every backend, reference-broken ones included, in the order reports list them.
    public static var all: [StorageBackend] { builtIn + extra.withLock { $0 } }

    /// A backend this build left out: its name, whether it keeps the session on a database server,
    /// and the package trait that builds it in.
    public struct LeftOut: Sendable, Equatable {
        public var name: String
        public var isServer: Bool
        public var trait: String

        public init(name: String, isServer: Bool = false, trait: String) {
            self.name = name
            self.isServer = isServer
            self.trait = trait
        }

        /// How to get it, for the one-line error that asks for it.
        public var remedy: String {
            "the \(name) backend needs the \(trait) trait, which this build left out: "
                + "swift run -c release --traits \(trait) session-bench … (or --enable-all-traits)"
        }
    }

    private static let leftOutExtra = Mutex<[LeftOut]>([])

    /// Says which backends a build left out (the PostgreSQL ones without their trait), so that
    /// asking for one says how to get it.
    public static func leftOut(_ backends: [LeftOut]) {
        leftOutExtra.withLock { $0 += backends.filter { named($0.name) == nil } }
    }

    /// The backends this build left out, and the trait each needs.
    public static var leftOut: [LeftOut] { leftOutBuiltIn + leftOutExtra.withLock { $0 } }

    /// The backend called `name` that this build left out, if it is one.
    public static func leftOut(named name: String) -> LeftOut? { leftOut.first { $0.name == name } }

    #if Storage
        static let leftOutBuiltIn: [LeftOut] = []
    #else
        static let leftOutBuiltIn: [LeftOut] = sealedAndSQLite.map { LeftOut(name: $0, trait: "Storage") }
    #endif

    /// The backends that need swift-crypto or GRDB: built with the `Storage` trait.
    static let sealedAndSQLite = [
        "encrypted-file", "sqlite", "sqlite-sealed", "encrypted-file-leaky", "sqlite-plain-delete",
    ]

    /// The backends in this package that keep the session in a folder of this machine, in the
    /// order reports list them.
    static let builtIn: [StorageBackend] = {
        #if Storage
            [jsonFile, encryptedFile, sqlite, sqliteSealed, jsonFileInPlace, encryptedFileLeaky, sqlitePlainDelete]
        #else
            [jsonFile, jsonFileInPlace]
        #endif
    }()

    static let jsonFile = StorageBackend(
        name: "json-file", summary: "plaintext JSON file (UserDefaults analogue), replaced atomically"
    ) { directory throws(StorageError) in try JSONFileStorage(directory: directory) }

    static let jsonFileInPlace = StorageBackend(
        name: "json-file-in-place", summary: "JSON file truncated and rewritten in place: a crash tears it",
        isReferenceBroken: true
    ) { directory throws(StorageError) in try InPlaceJSONFileStorage(directory: directory) }

    #if Storage
        static let encryptedFile = StorageBackend(
            name: "encrypted-file", summary: "AES-256-GCM sealed file, key in a separate file, replaced atomically",
            protectsAtRest: true
        ) { directory throws(StorageError) in
            try EncryptedFileStorage(
                directory: FileSystem.join(directory, "data"), keyDirectory: FileSystem.join(directory, "key"))
        }

        static let sqlite = StorageBackend(
            name: "sqlite", summary: "one row of a SQLite database (GRDB) in WAL mode; erased on sign-out"
        ) { directory throws(StorageError) in try SQLiteStorage(directory: directory) }

        static let sqliteSealed = StorageBackend(
            name: "sqlite-sealed",
            summary: "the sqlite backend with its row sealed by AES-256-GCM, key in a separate file",
            protectsAtRest: true
        ) { directory throws(StorageError) in
            try SQLiteStorage(
                directory: FileSystem.join(directory, "data"), keyDirectory: FileSystem.join(directory, "key"))
        }

        static let encryptedFileLeaky = StorageBackend(
            name: "encrypted-file-leaky",
            summary: "seals only the refresh token: user id and access token in clear, files 0644",
            isReferenceBroken: true, protectsAtRest: true
        ) { directory throws(StorageError) in
            try LeakyEncryptedFileStorage(
                directory: FileSystem.join(directory, "data"), keyDirectory: FileSystem.join(directory, "key"))
        }

        static let sqlitePlainDelete = StorageBackend(
            name: "sqlite-plain-delete",
            summary: "SQLite row removed with a plain DELETE: the ended session stays in the file's free space",
            isReferenceBroken: true
        ) { directory throws(StorageError) in try SQLiteStorage(directory: directory, erasesOnClear: false) }
    #endif

    /// The backends meant to be correct: what "all backends" means unless broken ones are asked for.
    public static var correct: [StorageBackend] { all.filter { !$0.isReferenceBroken } }

    /// The correct backends a scenario runs unless one is named: those on a database server for
    /// `replicas` (`servers: true`), the ones in a folder for the others.
    public static func correct(servers: Bool) -> [StorageBackend] { correct.filter { $0.isServer == servers } }

    /// The backend called `name`, if there is one.
    public static func named(_ name: String) -> StorageBackend? { all.first { $0.name == name } }
}
