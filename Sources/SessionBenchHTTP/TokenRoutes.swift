#if HTTP
import Foundation
internal import HTTPTypes
internal import Hummingbird
internal import HummingbirdCore
internal import NIOCore
import SessionBench
import SessionContract
import TokenServer

/// The answers: each a function of the request and the token server behind it.
struct TokenRoutes: Sendable {
    let limits: OAuthHTTPServer.Limits

    static let serverTiming = HTTPField.Name("Server-Timing")!
    static let pragma = HTTPField.Name("Pragma")!
    static let harness = HTTPField.Name(OAuthWire.harnessHeader)!
    static let admin = HTTPField.Name(OAuthWire.adminHeader)!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!

    // MARK: Token endpoint (RFC 6749 §3.2, §5, §6)

    /// A token request. Its body is read, then the grant decided in a task cancelled if the
    /// client hangs up (`watch`): the server then sees a dropped connection, as the in-process
    /// server sees a cancelled call (`dropped` before it acted, `responseLost` after). The
    /// connection stays open: a request pipelined behind this one is answered next.
    func token(_ request: Request, server: TokenServer, watch: HangUpWatch?) async -> Response {
        let started = TokenServer.realNanoseconds()
        let harness = request.headers[Self.harness] == "1"
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/x-www-form-urlencoded") else {
            return Self.error(
                .badRequest, "invalid_request", "the token endpoint takes application/x-www-form-urlencoded")
        }
        let authorization = request.headers[.authorization]
        let buffer: ByteBuffer
        switch await collect(request.body) {
        case .success(let collected): buffer = collected
        case .failure(.tooLarge):
            return Self.error(.contentTooLarge, "invalid_request", "the body is over \(limits.bodyLimit) bytes")
        case .failure(.tooSlow):
            return Self.error(
                .requestTimeout, "invalid_request",
                "the body did not arrive within \(limits.bodyTimeout.secondsValue.formatted()) s")
        case .failure(.broken):
            return Self.error(.badRequest, "invalid_request", "the body could not be read")
        }
        let form: [String: String]
        switch OAuthWire.decodeForm(String(buffer: buffer)) {
        case .failure(.malformed):
            return Self.error(.badRequest, "invalid_request", "the form body is not valid percent-encoding")
        case .failure(.repeated):
            // Names and values are never echoed: a client that put a token in the wrong
            // place would get it back in an answer it may log.
            return Self.error(.badRequest, "invalid_request", "a parameter was given more than once")
        case .success(let decoded): form = decoded
        }
        let decided = Task { await grant(form, authorization: authorization, server: server, harness: harness) }
        watch?.onHangUp { decided.cancel() }
        var response = await withTaskCancellationHandler { await decided.value } onCancel: { decided.cancel() }
        watch?.clear()
        if decided.isCancelled {
            // The client hung up; no one reads the answer.
            return Response(status: .init(code: 499, reasonPhrase: "Client Closed Request"))
        }
        let elapsed = Double(TokenServer.realNanoseconds() - started) / 1e6
        response.headers[Self.serverTiming] = "app;dur=\(String(format: "%.3f", elapsed))"
        return response
    }

    enum BodyProblem: Error {
        case tooLarge, tooSlow, broken
    }

    /// The whole body, within the size and time limits.
    private func collect(_ body: RequestBody) async -> Result<ByteBuffer, BodyProblem> {
        let limit = limits.bodyLimit
        let deadline = limits.bodyTimeout
        return await withTaskGroup(of: Result<ByteBuffer, BodyProblem>?.self) { group in
            group.addTask {
                var buffer = ByteBuffer()
                do {
                    for try await part in body {
                        guard buffer.readableBytes + part.readableBytes <= limit else { return .failure(.tooLarge) }
                        var part = part
                        buffer.writeBuffer(&part)
                    }
                } catch {
                    return .failure(.broken)
                }
                return .success(buffer)
            }
            group.addTask {
                try? await Task.sleep(for: deadline)
                return Task.isCancelled ? nil : .failure(.tooSlow)
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return .failure(.broken)
        }
    }

    private func grant(
        _ form: [String: String], authorization: String?, server: TokenServer, harness: Bool
    ) async -> Response {
        switch form["grant_type"] {
        case "refresh_token":
            guard let token = form["refresh_token"], !token.isEmpty else {
                return Self.error(.badRequest, "invalid_request", "refresh_token is missing")
            }
            return answer(await server.refreshResult(RefreshToken(token)), server: server, harness: harness)
        case "password":
            // Both required (RFC 6749 §4.3.2); one sent empty counts as left out (§3.1).
            guard let username = form["username"], !username.isEmpty else {
                return Self.error(.badRequest, "invalid_request", "username is missing")
            }
            guard let password = form["password"], !password.isEmpty else {
                return Self.error(.badRequest, "invalid_request", "password is missing")
            }
            let credentials = Credentials(subject: Subject(username), secret: password)
            return answer(await server.signInResult(credentials), server: server, harness: harness)
        case "client_credentials":
            // A machine client: each grant starts a session of its own, with a refresh token.
            guard let client = Self.clientID(authorization: authorization, form: form) else {
                return Self.error(
                    .unauthorized, "invalid_client",
                    "client_credentials needs the client's id: HTTP Basic authentication or client_id")
            }
            return answer(.success(await server.signInClient(Subject(client))), server: server, harness: harness)
        case OAuthWire.stepUpGrant:
            guard let value = form["access_token"], let proof = form["proof"] else {
                return Self.error(.badRequest, "invalid_request", "a step-up needs access_token and proof")
            }
            guard let access = server.accessToken(value: value) else {
                return Self.error(.badRequest, "invalid_grant", "the access token is unknown")
            }
            let result: Result<ElevatedToken, TokenEndpointError>
            do throws(TokenEndpointError) {
                result = .success(try await server.elevate(access, proof: StepUpProof(subject: access.subject, value: proof)))
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let elevated):
                return Self.json(
                    .ok,
                    OAuthWire.TokenAnswer(
                        accessToken: elevated.value, expiresIn: Self.seconds(until: elevated.expiresAt, server: server),
                        refreshToken: nil,
                        sessionBench: harness
                            ? .init(
                                generation: elevated.generation, expiresAtNanoseconds: elevated.expiresAt.nanoseconds,
                                subject: elevated.subject.rawValue, baseGeneration: elevated.baseGeneration)
                            : nil))
            case .failure(let error):
                return Self.failure(error)
            }
        case nil:
            return Self.error(.badRequest, "invalid_request", "grant_type is missing")
        case _?:
            return Self.error(
                .badRequest, "unsupported_grant_type",
                "grant_type is not one of refresh_token, password, client_credentials, \(OAuthWire.stepUpGrant)")
        }
    }

    private func answer(_ result: Result<TokenGrant, TokenEndpointError>, server: TokenServer, harness: Bool) -> Response {
        switch result {
        case .success(let grant):
            let access = grant.accessToken
            return Self.json(
                .ok,
                OAuthWire.TokenAnswer(
                    accessToken: access.value, expiresIn: Self.seconds(until: access.expiresAt, server: server),
                    refreshToken: grant.refreshToken.value,
                    sessionBench: harness
                        ? .init(
                            generation: access.generation, expiresAtNanoseconds: access.expiresAt.nanoseconds,
                            subject: access.subject.rawValue, baseGeneration: nil)
                        : nil))
        case .failure(let error):
            return Self.failure(error)
        }
    }

    /// Seconds left, to the nearest, never negative (RFC 6749's `expires_in`): a 60 s token
    /// answered 2 ms after it was made says 60, not 59, and a 1 s token says 1, not 0.
    static func seconds(until instant: TokenInstant, server: TokenServer) -> Int {
        max(0, Int(instant.duration(since: server.now()).secondsValue.rounded(.toNearestOrAwayFromZero)))
    }

    static func failure(_ error: TokenEndpointError) -> Response {
        switch error {
        case .invalidGrant:
            Self.error(.badRequest, "invalid_grant", "the refresh token is unknown, used, or its session revoked")
        case .invalidCredentials:
            Self.error(.badRequest, "invalid_grant", "the credentials were refused")
        case .transient:
            Self.error(.serviceUnavailable, "temporarily_unavailable", "try again")
        case .timeout:
            Self.error(.gatewayTimeout, "temporarily_unavailable", "no answer in time")
        }
    }

    /// The client's id: HTTP Basic (RFC 6749 §2.3.1) or `client_id` in the body.
    static func clientID(authorization: String?, form: [String: String]) -> String? {
        if let authorization, authorization.lowercased().hasPrefix("basic "),
            let data = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
        {
            let id = String(text[..<colon]).removingPercentEncoding ?? ""
            if !id.isEmpty { return id }
        }
        if let id = form["client_id"], !id.isEmpty { return id }
        return nil
    }

    // MARK: Answers

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        let data = (try? JSONEncoder().encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status,
            headers: [.contentType: "application/json", .cacheControl: "no-store", pragma: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func error(_ status: HTTPResponse.Status, _ code: String, _ description: String) -> Response {
        json(status, OAuthWire.ErrorAnswer(error: code, errorDescription: description))
    }

    static func unknownServer() -> Response {
        error(.notFound, "invalid_request", "no token server is registered at this path")
    }
}
#endif
