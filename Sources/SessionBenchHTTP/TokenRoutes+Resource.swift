#if HTTP
internal import HTTPTypes
internal import Hummingbird
internal import HummingbirdCore
internal import NIOCore
import SessionBench
import SessionContract
import TokenServer

/// The protected resource and the metadata a client discovers the servers by.
extension TokenRoutes {
    // MARK: Protected resource (RFC 6750)

    func resource(_ request: Request, server: TokenServer) -> Response {
        // Where a client finds the authorization server (RFC 9728 §5.1).
        let metadata = Self.base(of: request) + "/.well-known/oauth-protected-resource" + request.uri.path
        let realm = #"Bearer realm="session-bench", resource_metadata="# + Self.quoted(metadata)
        guard let header = request.headers[.authorization] else {
            return Response(status: .unauthorized, headers: [.wwwAuthenticate: realm])
        }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return Response(
                status: .badRequest,
                headers: [.wwwAuthenticate: realm + #", error="invalid_request", error_description="Authorization is not Bearer <token>""#])
        }
        switch server.checkAccess(String(parts[1])) {
        case nil:
            return Self.json(.ok, ["ok": true])
        case let rejection?:
            let why =
                switch rejection {
                case .expired: "The access token expired"
                case .revoked: "The session was revoked"
                case .unknown: "The access token is unknown"
                }
            return Response(
                status: .unauthorized,
                headers: [.wwwAuthenticate: realm + #", error="invalid_token", error_description=""# + why + #"""#])
        }
    }

    /// `text` as an HTTP quoted-string (RFC 9110 §5.6.4): `"` and `\\` escaped, control
    /// characters dropped, so no value can close the quotes and add a parameter of its own.
    static func quoted(_ text: String) -> String {
        var quoted = "\""
        for scalar in text.unicodeScalars where scalar.value >= 0x20 && scalar.value != 0x7F {
            if scalar == "\"" || scalar == "\\" { quoted.append("\\") }
            quoted.unicodeScalars.append(scalar)
        }
        return quoted + "\""
    }

    // MARK: Metadata (RFC 8414, RFC 9728)

    /// The base URL as the client reached it: its Host, and `https` if a proxy in front says so.
    static func base(of request: Request) -> String {
        let proto = request.headers[forwardedProto]?.lowercased() == "https" ? "https" : "http"
        let host = request.head.authority ?? "127.0.0.1"
        return "\(proto)://\(host)"
    }

    func authorizationServerMetadata(_ request: Request) -> Response {
        let base = Self.base(of: request)
        return Self.json(
            .ok,
            AuthorizationServerMetadata(
                issuer: base, tokenEndpoint: base + OAuthWire.tokenPath,
                grantTypesSupported: ["refresh_token", "password", "client_credentials", OAuthWire.stepUpGrant],
                tokenEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post", "none"],
                responseTypesSupported: []))
    }

    /// The resource is the path after the well-known prefix (RFC 9728 §3.1): `…/oauth-protected-resource/mcp`
    /// describes `/mcp`; the bare prefix describes the whole origin.
    func protectedResourceMetadata(_ request: Request) -> Response {
        let base = Self.base(of: request)
        let path = String(request.uri.path.dropFirst("/.well-known/oauth-protected-resource".count))
        return Self.json(
            .ok,
            ProtectedResourceMetadata(
                resource: base + path, authorizationServers: [base], bearerMethodsSupported: ["header"]))
    }

    struct AuthorizationServerMetadata: Encodable {
        let issuer: String
        let tokenEndpoint: String
        let grantTypesSupported: [String]
        let tokenEndpointAuthMethodsSupported: [String]
        let responseTypesSupported: [String]

        enum CodingKeys: String, CodingKey {
            case issuer
            case tokenEndpoint = "token_endpoint"
            case grantTypesSupported = "grant_types_supported"
            case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
            case responseTypesSupported = "response_types_supported"
        }
    }

    struct ProtectedResourceMetadata: Encodable {
        let resource: String
        let authorizationServers: [String]
        let bearerMethodsSupported: [String]

        enum CodingKeys: String, CodingKey {
            case resource
            case authorizationServers = "authorization_servers"
            case bearerMethodsSupported = "bearer_methods_supported"
        }
    }
}
#endif
