import ArgumentParser
import SessionBench
import Synchronization

/// How stores reach the token server: `in-process` (method calls) or `http` (the server over
/// HTTP on loopback, the stores through AsyncHTTPClient).
enum TransportChoice: String, ExpressibleByArgument, CaseIterable, Codable, Sendable {
    case inProcess = "in-process"
    case http

    /// The transport a runner uses; `nil` in process. Throws when this build has no HTTP.
    func resolved() throws(UsageError) -> (any EndpointTransport)? {
        switch self {
        case .inProcess: return nil
        case .http: return try HTTPAvailability.required("--transport http").transport
        }
    }
}

/// The HTTP support this build was given (see `SessionBenchCommand.main(arguments:http:)`).
enum HTTPAvailability {
    private static let installed = Mutex<LoopbackHTTP?>(nil)

    static func install(_ http: LoopbackHTTP) { installed.withLock { $0 = http } }

    static var current: LoopbackHTTP? { installed.withLock { $0 } }

    /// The support `what` needs, or a one-line error that says how to get it.
    static func required(_ what: String) throws(UsageError) -> LoopbackHTTP {
        guard let http = current else {
            throw UsageError(
                "\(what) needs the HTTP trait, which this build left out: swift run -c release --traits HTTP "
                    + "session-bench … (or --enable-all-traits), or pass LoopbackHTTP.live from the SessionBenchHTTP "
                    + "product to SessionBenchCommand.main")
        }
        return http
    }
}
