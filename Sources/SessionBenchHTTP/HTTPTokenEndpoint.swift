#if HTTP
internal import AsyncHTTPClient
import Foundation
internal import NIOHTTP1
internal import NIOCore
import SessionBench
import SessionContract
import SessionSync
import Synchronization
import TokenServer

/// A token endpoint that reaches its server over HTTP with AsyncHTTPClient: form-encoded
/// requests, JSON answers, status codes mapped back to ``TokenEndpointError`` as a real client
/// would map them.
///
/// | answer | error |
/// |---|---|
/// | 400 `invalid_grant` | `invalidGrant` (`invalidCredentials` for a sign-in) |
/// | 504, or no answer in time | `timeout` |
/// | any other failure, a refused or dropped connection, a cancelled call | `transient` |
///
/// Each token call asks for a connection of its own (`Connection: close`), so that a client
/// that hangs up is seen by the server as it is in process: the call is dropped, or its answer
/// lost. Each refresh's round trip, less the server's own time from its `Server-Timing`
/// header, is kept as the transport's overhead.
final class HTTPTokenEndpoint: TransportEndpoint {
    private let transport: HTTPTransport
    /// Where the server is: registered at `/s/ID` on this process's own server, or served by
    /// another process at a URL.
    private let location: Location
    private enum Location {
        case registered(path: String)
        case url(String)
    }
    private let overheads = Mutex<[Int64]>([])
    private let closed = Atomic<Bool>(false)
    /// What a sign-in without a secret sends as its password.
    static let simulatedPassword = "session-bench"

    init(transport: HTTPTransport, path: String) {
        self.transport = transport
        location = .registered(path: path)
    }

    init(transport: HTTPTransport, url: String) {
        self.transport = transport
        location = .url(url)
    }

    func refreshOverheads() -> [Int64] { overheads.withLock(visibleTo: self) { $0 } }

    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if case .registered(let path) = location { transport.server.unregister(path) }
    }

    func signIn(_ credentials: Credentials) async throws(TokenEndpointError) -> TokenGrant {
        let answer: Answer
        do throws(TokenEndpointError) {
            // The password grant needs a password; the harness's simulated users have none (the
            // simulated server takes any), so they send a fixed one.
            let password = credentials.secret.isEmpty ? Self.simulatedPassword : credentials.secret
            answer = try await post([
                "grant_type": "password", "username": credentials.subject.rawValue, "password": password,
            ])
        } catch .invalidGrant {
            throw .invalidCredentials
        }
        return try answer.grant()
    }

    func refresh(_ refreshToken: RefreshToken) async throws(TokenEndpointError) -> TokenGrant {
        try await post(["grant_type": "refresh_token", "refresh_token": refreshToken.value], measured: true).grant()
    }

    func elevate(_ accessToken: AccessToken, proof: StepUpProof) async throws(TokenEndpointError) -> ElevatedToken {
        let answer = try await post([
            "grant_type": OAuthWire.stepUpGrant, "access_token": accessToken.value, "proof": proof.value,
        ])
        guard let fields = answer.body.sessionBench, let base = fields.baseGeneration else { throw .transient }
        return ElevatedToken(
            value: answer.body.accessToken, subject: Subject(fields.subject), generation: fields.generation,
            baseGeneration: base, expiresAt: TokenInstant(nanoseconds: fields.expiresAtNanoseconds))
    }

    struct Answer {
        let body: OAuthWire.TokenAnswer

        func grant() throws(TokenEndpointError) -> TokenGrant {
            guard let fields = body.sessionBench, let refresh = body.refreshToken else { throw .transient }
            return TokenGrant(
                accessToken: AccessToken(
                    value: body.accessToken, subject: Subject(fields.subject), generation: fields.generation,
                    expiresAt: TokenInstant(nanoseconds: fields.expiresAtNanoseconds)),
                refreshToken: RefreshToken(refresh))
        }
    }

    /// One token request; `measured` keeps its overhead.
    private func post(_ fields: KeyValuePairs<String, String>, measured: Bool = false) async throws(TokenEndpointError)
        -> Answer
    {
        guard !closed.load(ordering: .acquiring) else { throw .transient }
        let base: String
        switch location {
        case .registered(let path):
            let port: Int
            do { port = try await transport.port() } catch { throw .transient }
            base = "http://127.0.0.1:\(port)\(path)"
        case .url(let url):
            base = url
        }
        var request = HTTPClientRequest(url: base + OAuthWire.tokenPath)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.headers.add(name: "Connection", value: "close")
        request.headers.add(name: OAuthWire.harnessHeader, value: "1")
        request.body = .bytes(ByteBuffer(string: OAuthWire.encodeForm(fields)))
        let started = TokenServer.realNanoseconds()
        let status: Int
        let timing: String?
        let data: ByteBuffer
        do {
            let response = try await transport.client.execute(request, timeout: HTTPTransport.requestTimeout)
            status = Int(response.status.code)
            timing = response.headers.first(name: "Server-Timing")
            data = try await response.body.collect(upTo: 1 << 20)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            throw .timeout
        } catch {
            throw .transient
        }
        let elapsed = TokenServer.realNanoseconds() - started
        if measured, let serverNanoseconds = Self.serverNanoseconds(timing) {
            overheads.withLock(visibleTo: self) { $0.append(max(0, elapsed - serverNanoseconds)) }
        }
        switch status {
        case 200:
            guard let body = try? JSONDecoder().decode(OAuthWire.TokenAnswer.self, from: Data(data.readableBytesView)) else {
                throw .transient
            }
            return Answer(body: body)
        case 400:
            let error = try? JSONDecoder().decode(OAuthWire.ErrorAnswer.self, from: Data(data.readableBytesView))
            throw error?.error == "invalid_grant" ? .invalidGrant : .transient
        case 504:
            throw .timeout
        default:
            throw .transient
        }
    }

    /// `app;dur=1.234` (milliseconds) as nanoseconds.
    static func serverNanoseconds(_ header: String?) -> Int64? {
        guard let header, let range = header.range(of: "dur=") else { return nil }
        let number = header[range.upperBound...].prefix { $0.isNumber || $0 == "." }
        return Double(number).map { Int64($0 * 1e6) }
    }
}
#endif
