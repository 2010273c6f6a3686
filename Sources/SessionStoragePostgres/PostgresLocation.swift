#if PostgreSQL
import Foundation
import NIOCore
import PostgresNIO

/// Where a PostgreSQL server is and who to be there, from a `postgres://` URL:
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`.
///
/// Connections are plain TCP (no TLS): a server on loopback, as `scripts/postgres start` runs one,
/// or on a private network. The password is never printed: ``description`` leaves it out.
public struct PostgresLocation: Sendable, Hashable, CustomStringConvertible {
    /// The environment variable the command line and the tests read the URL from.
    public static let environmentVariable = "SESSION_BENCH_POSTGRES_URL"

    public let host: String
    public let port: Int
    public let username: String
    let password: String?
    public let database: String

    /// Parses `url`; the error says what is wrong with it in one line, never quoting a password.
    public init(url: String) throws(PostgresLocationError) {
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            ["postgres", "postgresql"].contains(scheme)
        else {
            throw PostgresLocationError(
                "not a postgres:// URL; expected postgres://USER@HOST[:PORT]/DATABASE (scripts/postgres url prints one)")
        }
        guard let host = components.host, !host.isEmpty else { throw PostgresLocationError("the URL names no host") }
        guard let user = components.user, !user.isEmpty else {
            throw PostgresLocationError("the URL names no user: postgres://USER@\(host)/DATABASE")
        }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresLocationError("the URL names no database: postgres://USER@\(host)/DATABASE")
        }
        if let query = components.queryItems, !query.isEmpty {
            throw PostgresLocationError(
                "URL parameters are not supported (\(query.map(\.name).joined(separator: ", "))): connections are plain TCP")
        }
        self.host = host
        port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw PostgresLocationError("port \(port) is out of range") }
        username = user
        password = components.password
        self.database = database
    }

    /// The location in ``environmentVariable``; `nil` when it is unset or empty.
    public static func fromEnvironment() throws(PostgresLocationError) -> PostgresLocation? {
        guard let url = ProcessInfo.processInfo.environment[environmentVariable], !url.isEmpty else { return nil }
        do throws(PostgresLocationError) { return try PostgresLocation(url: url) } catch {
            throw PostgresLocationError("\(environmentVariable): \(error.description)")
        }
    }

    /// How to connect, giving up when the server has not let us in within `timeout` (the TCP
    /// connection and the start-up exchange together).
    func configuration(connectingWithin timeout: Duration) -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: database, tls: .disable)
        configuration.options.connectTimeout = TimeAmount(timeout)
        return configuration
    }

    /// `user@host:port/database`, no password.
    public var description: String { "\(username)@\(host):\(port)/\(database)" }
}

/// A `postgres://` URL that cannot be used, with what is wrong.
public struct PostgresLocationError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
#endif
