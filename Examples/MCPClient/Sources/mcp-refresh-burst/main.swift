// The MCP Swift SDK's OAuthAuthorizer under many concurrent callers, against `session-bench serve`:
//
//     session-bench serve --port 0 --token-lifetime 45s --latency 50ms   (401-storm: --token-lifetime 2s)
//     mcp-refresh-burst --server http://127.0.0.1:PORT [--callers 100] [--pattern proactive|401-storm]
//
// It prints what the client side saw; stop serve afterwards for the server's verdicts. Exit status:
// 0 when the run completed (the finding is reported, not judged), 1 when the authorizer could not
// get a first token, 2 for bad arguments or a server that cannot be reached.
import Foundation
import MCP
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: Command line

enum Pattern: String {
    /// Callers ask the authorizer for a token that is inside its proactive refresh window.
    case proactive
    /// Callers hand the authorizer a 401 at once, as requests do when their token went bad.
    case storm = "401-storm"
}

let usage = "usage: mcp-refresh-burst --server http://127.0.0.1:PORT [--callers N] [--pattern proactive|401-storm]"

func fail(_ status: Int32, _ message: String) -> Never {
    FileHandle.standardError.write(Data("mcp-refresh-burst: \(message)\n".utf8))
    exit(status)
}

func parseArguments() -> (server: URLComponents, callers: Int, pattern: Pattern) {
    var server: URLComponents?
    var callers = 100
    var pattern = Pattern.proactive
    var arguments = CommandLine.arguments.dropFirst()
    while let name = arguments.popFirst() {
        if name == "--help" || name == "-h" {
            print(usage)
            exit(0)
        }
        guard let value = arguments.popFirst() else { fail(2, "\(name) needs a value; \(usage)") }
        switch name {
        case "--server":
            guard let parsed = URLComponents(string: value), parsed.scheme == "http", parsed.host?.isEmpty == false,
                parsed.port != nil, parsed.path.isEmpty || parsed.path == "/"
            else { fail(2, "--server '\(value)' is not http://HOST:PORT as serve prints it") }
            server = parsed
        case "--callers":
            guard let count = Int(value), (1...10_000).contains(count) else {
                fail(2, "--callers '\(value)' is not a whole number from 1 to 10000")
            }
            callers = count
        case "--pattern":
            guard let parsed = Pattern(rawValue: value) else {
                fail(2, "--pattern '\(value)' is not proactive or 401-storm")
            }
            pattern = parsed
        default:
            fail(2, "unknown argument '\(name)'; \(usage)")
        }
    }
    guard let server else { fail(2, "--server is required; \(usage)") }
    return (server, callers, pattern)
}

// MARK: The https face of serve

/// What went to serve through the proxy.
struct Tally: Sendable {
    var refreshSent = 0, refreshOK = 0, refreshRefused = 0, invalidGrant = 0, refreshOther = 0
    var refreshTokens: Set<String> = []
    /// Whether an invalid_grant has come back yet, and the refresh requests sent after it had.
    var refused = false, sentAfterRefusal = 0
    var clientCredentials = 0
    var inFlight = 0, mostInFlight = 0
}

/// serve speaks plain HTTP on loopback, and OAuthAuthorizer accepts only an https authorization
/// server. This stands in for a TLS-terminating proxy in front of serve: it sends each
/// https://HOST:PORT request on as http://HOST:PORT with `X-Forwarded-Proto: https` (so serve's
/// metadata names https URLs), and counts the token requests and their answers on the way.
final class LoopbackProxy: URLProtocol {
    struct State: Sendable {
        var host = "", port = 0
        var tally = Tally()
    }
    static let state = Mutex(State())

    /// Plain HTTP to serve, allowed as many connections as there are callers.
    static let upstream: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 10_000
        return URLSession(configuration: configuration)
    }()

    private let forwarding = Mutex<Task<Void, Never>?>(nil)

    override class func canInit(with request: URLRequest) -> Bool {
        guard let url = request.url, url.scheme == "https" else { return false }
        return state.withLock { url.host == $0.host && url.port == $0.port }
    }

    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        // In a task, off the queue this is called on: FoundationNetworking's sessions share one,
        // and starting another session's request from it deadlocks.
        let (request, proxy) = (request, Unchecked(self))
        forwarding.withLock { $0 = Task { await Self.forward(request, answering: proxy.value) } }
    }

    override func stopLoading() {
        forwarding.withLock { $0?.cancel() }
    }

    private static func forward(_ request: URLRequest, answering proxy: URLProtocol) async {
        guard let url = request.url, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            return proxy.client?.urlProtocol(proxy, didFailWithError: URLError(.badURL)) ?? ()
        }
        components.scheme = "http"
        var forwarded = request
        forwarded.url = components.url
        forwarded.setValue("https", forHTTPHeaderField: "X-Forwarded-Proto")
        // A POST body reaches a protocol class as a stream.
        let body = request.httpBody ?? request.httpBodyStream.map(read)
        forwarded.httpBody = body
        let form = body.map(Self.form) ?? [:]
        let refreshing = form["grant_type"] == "refresh_token"
        state.withLock {
            $0.tally.inFlight += 1
            $0.tally.mostInFlight = max($0.tally.mostInFlight, $0.tally.inFlight)
            if refreshing {
                $0.tally.refreshSent += 1
                if $0.tally.refused { $0.tally.sentAfterRefusal += 1 }
                $0.tally.refreshTokens.insert(form["refresh_token"] ?? "")
            }
            if form["grant_type"] == "client_credentials" { $0.tally.clientCredentials += 1 }
        }
        let answer: (data: Data, response: URLResponse)
        do {
            answer = try await upstream.data(for: forwarded)
        } catch {
            state.withLock {
                $0.tally.inFlight -= 1
                if refreshing { $0.tally.refreshOther += 1 }
            }
            // A request the loading system stopped (stopLoading cancels this task) is answered
            // no more: FoundationNetworking crashes on a client call for a task it let go.
            guard !Task.isCancelled else { return }
            return proxy.client?.urlProtocol(proxy, didFailWithError: error) ?? ()
        }
        let status = (answer.response as? HTTPURLResponse)?.statusCode ?? 0
        state.withLock {
            $0.tally.inFlight -= 1
            guard refreshing else { return }
            switch status {
            case 200: $0.tally.refreshOK += 1
            case 400:
                $0.tally.refreshRefused += 1
                if String(decoding: answer.data, as: UTF8.self).contains(#""invalid_grant""#) {
                    $0.tally.invalidGrant += 1
                    $0.tally.refused = true
                }
            default: $0.tally.refreshOther += 1
            }
        }
        let headers = (answer.response as? HTTPURLResponse)?.allHeaderFields as? [String: String]
        guard
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
        else { return proxy.client?.urlProtocol(proxy, didFailWithError: URLError(.badServerResponse)) ?? () }
        // The client may stop the request once it has seen the response: each call is made only
        // while the request is still loading.
        guard !Task.isCancelled else { return }
        proxy.client?.urlProtocol(proxy, didReceive: response, cacheStoragePolicy: .notAllowed)
        guard !Task.isCancelled else { return }
        proxy.client?.urlProtocol(proxy, didLoad: answer.data)
        guard !Task.isCancelled else { return }
        proxy.client?.urlProtocolDidFinishLoading(proxy)
    }

    static func read(_ stream: InputStream) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        stream.open()
        defer { stream.close() }
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            if count <= 0 { return data }
            data.append(buffer, count: count)
        }
    }

    static func form(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }
}

/// A value handed to another task as is. URLProtocol is not Sendable; the loading system
/// expects a protocol's client to be called from any thread, once per step.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The authorizer's token store behind a lock: the callers race in the authorizer, not here.
final class LockedTokenStorage: TokenStorage {
    private let token = Mutex<OAuthAccessToken?>(nil)
    func save(_ token: OAuthAccessToken) { self.token.withLock { $0 = token } }
    func load() -> OAuthAccessToken? { token.withLock { $0 } }
    func clear() { token.withLock { $0 = nil } }
}

// MARK: Run

let (server, callers, pattern) = parseArguments()
var https = server
https.scheme = "https"
https.path = ""
let base = https.string!
let endpoint = URL(string: base + "/mcp")!
// serve answers at /mcp as the protected resource, as an MCP server would.
let resource = endpoint
LoopbackProxy.state.withLock {
    $0.host = (server.host ?? "").trimmingCharacters(in: ["[", "]"])  // as URL.host names [::1]
    $0.port = server.port ?? 0
}
let sessionConfiguration = URLSessionConfiguration.ephemeral
sessionConfiguration.protocolClasses = [LoopbackProxy.self]
sessionConfiguration.httpMaximumConnectionsPerHost = 10_000
let session = URLSession(configuration: sessionConfiguration)

/// GET /mcp, with a bearer token or none: the status and the WWW-Authenticate challenge.
func getResource(authorization: String?) async throws -> (status: Int, headers: [String: String]) {
    var request = URLRequest(url: resource)
    request.setValue(authorization, forHTTPHeaderField: "Authorization")
    let (_, response) = try await session.data(for: request)
    let http = response as? HTTPURLResponse
    return (http?.statusCode ?? 0, http?.allHeaderFields as? [String: String] ?? [:])
}

func wwwAuthenticate(_ headers: [String: String]) -> String {
    headers.first { $0.key.lowercased() == "www-authenticate" }?.value ?? "(none)"
}

// A first request with no token: the 401 an MCP client meets before it has one.
let challenge: [String: String]
do {
    let (status, headers) = try await getResource(authorization: nil)
    guard status == 401 else {
        fail(2, "\(server.string!)/mcp answered \(status) to a request with no token, not 401")
    }
    challenge = headers
} catch {
    fail(2, "cannot reach serve at \(server.string!): \(error.localizedDescription)")
}

let storage = LockedTokenStorage()
let authorizer = OAuthAuthorizer(
    configuration: OAuthConfiguration(
        grantType: .clientCredentials,
        authentication: .clientSecretBasic(clientID: "mcp-refresh-burst", clientSecret: "secret")),
    tokenStorage: storage)

// Warm-up: one 401 makes the authorizer discover serve's metadata and take a client_credentials grant.
do {
    _ = try await authorizer.handleChallenge(
        statusCode: 401, headers: challenge, endpoint: endpoint, operationKey: nil, session: session)
} catch {
    fail(1, "warm-up failed: the authorizer did not get a token from serve: \(error)")
}
guard let first = storage.load(), first.refreshToken != nil else {
    fail(1, "warm-up failed: serve's client_credentials grant left no token with a refresh token")
}
// The proactive window is 60 s: a token living longer is moved inside it (its refresh token kept).
let window: TimeInterval = 60
if pattern == .proactive, let expiresAt = first.expiresAt, expiresAt.timeIntervalSinceNow >= window {
    storage.save(
        OAuthAccessToken(
            value: first.value, tokenType: first.tokenType, expiresAt: Date(timeIntervalSinceNow: 45),
            scopes: first.scopes, authorizationServer: first.authorizationServer,
            refreshToken: first.refreshToken, clientID: first.clientID))
}
let expiresIn = storage.load()?.expiresAt.map { Int($0.timeIntervalSinceNow.rounded()) }
print("serve: \(server.string!), reached by the SDK as \(base) (a proxy adds X-Forwarded-Proto: https)")
print(
    "warm-up: 401 with WWW-Authenticate: \(wwwAuthenticate(challenge)) -> discovery + 1 client_credentials grant; "
        + "token expires in \(expiresIn.map { "\($0) s" } ?? "(no expiry)"), proactive refresh window \(Int(window)) s")
// A 401 storm needs real 401s: wait until serve has expired the token (run it with a short
// --token-lifetime), so that every caller's request with it is refused.
if pattern == .storm {
    guard let expiresAt = first.expiresAt, expiresAt.timeIntervalSinceNow < 30 else {
        fail(2, "the 401-storm pattern waits for the token to expire: run serve with --token-lifetime 2s")
    }
    try await Task.sleep(for: .milliseconds(Int64(max(0, expiresAt.timeIntervalSinceNow) * 1000) + 300))
}
let expired = "Bearer " + first.value
LoopbackProxy.state.withLock { $0.tally = Tally() }

// The burst: every caller at once, on one authorizer, as an MCP client's concurrent requests are.
let started = ContinuousClock.now
let results: [String] = await withTaskGroup(of: String.self) { group in
    for _ in 0..<callers {
        group.addTask {
            do {
                switch pattern {
                case .proactive:
                    try await authorizer.prepareAuthorization(for: endpoint, session: session)
                    return "returned"
                case .storm:
                    // Each caller's own request with the expired token, and the 401 it got.
                    let (status, headers) = try await getResource(authorization: expired)
                    guard status == 401 else { return "got \(status), not 401" }
                    let handled = try await authorizer.handleChallenge(
                        statusCode: 401, headers: headers, endpoint: endpoint, operationKey: nil, session: session)
                    return handled ? "returned true" : "returned false"
                }
            } catch {
                return "threw \(error)"
            }
        }
    }
    var results: [String] = []
    for await result in group { results.append(result) }
    return results
}
let elapsed = ContinuousClock.now - started
let tally = LoopbackProxy.state.withLock { $0.tally }

let call = pattern == .proactive ? "prepareAuthorization(for:session:)" : "handleChallenge(statusCode: 401, …)"
let outcomes = Dictionary(grouping: results) { $0 }.map { "\($0.value.count) \($0.key)" }.sorted()
print(
    "pattern \(pattern.rawValue): \(callers) concurrent callers of \(call): \(outcomes.joined(separator: ", ")); "
        + "\(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow)))")
print(
    "refresh_token requests: \(tally.refreshSent) sent with \(tally.refreshTokens.count) distinct refresh token(s): "
        + "\(tally.refreshOK) answered 200, \(tally.refreshRefused) answered 400 "
        + "(\(tally.invalidGrant) invalid_grant), \(tally.refreshOther) other; "
        + "\(tally.sentAfterRefusal) sent after the first invalid_grant had come back")
print(
    "client_credentials requests: \(tally.clientCredentials) sent (each a new session at serve); "
        + "at most \(tally.mostInFlight) request(s) in flight at once")

// Afterwards: does the authorizer still hold a token, and does serve take it?
if let header = authorizer.authorizationHeader(for: endpoint) {
    let answer = try? await getResource(authorization: header)
    let status = answer.map { "\($0.status)" } ?? "no answer"
    let why = answer.map { $0.status == 200 ? "" : " (\(wwwAuthenticate($0.headers)))" } ?? ""
    print("afterwards: the authorizer offers a token; serve's /mcp answered \(status)\(why)")
} else {
    print("afterwards: the authorizer has no usable token (the next request goes out without one and meets a 401)")
}
