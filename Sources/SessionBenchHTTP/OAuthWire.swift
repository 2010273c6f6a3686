#if HTTP
import Foundation
import SessionContract

/// What travels between a client and `serve`: form-encoded requests (RFC 6749 §3.2) and JSON
/// answers (§5.1, §5.2), with the names both sides use.
enum OAuthWire {
    /// The token endpoint's path, under the server's base.
    static let tokenPath = "/oauth/token"
    /// The protected resource's path.
    static let resourcePath = "/resource"
    /// The grant a step-up uses: a fresh access token and a proof of presence buy an elevated token.
    static let stepUpGrant = "urn:session-bench:params:oauth:grant-type:step-up"
    /// A request with this header set to `1` gets the harness's fields beside the standard ones
    /// (generation, expiry instant, subject): what a store's ``AccessToken`` is made of.
    static let harnessHeader = "X-Session-Bench-Harness"
    /// `POST /admin/shutdown` needs this header (any value).
    static let adminHeader = "X-Session-Bench-Admin"

    /// `application/x-www-form-urlencoded`: `+` is a space, `%XX` a byte; every name once.
    static func decodeForm(_ text: String) -> Result<[String: String], FormError> {
        var fields: [String: String] = [:]
        guard !text.isEmpty else { return .success(fields) }
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = unescape(parts[0]), let value = unescape(parts.count > 1 ? parts[1] : "") else {
                return .failure(.malformed)
            }
            guard fields[name] == nil else { return .failure(.repeated(name)) }
            fields[name] = value
        }
        return .success(fields)
    }

    enum FormError: Error, Equatable {
        case malformed
        case repeated(String)
    }

    private static func unescape(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// Characters left as they are in a form value: RFC 3986's unreserved set.
    private static let unreserved: CharacterSet = {
        var set = CharacterSet(charactersIn: "-._~")
        set.formUnion(CharacterSet(charactersIn: "a"..."z"))
        set.formUnion(CharacterSet(charactersIn: "A"..."Z"))
        set.formUnion(CharacterSet(charactersIn: "0"..."9"))
        return set
    }()

    static func encodeForm(_ fields: KeyValuePairs<String, String>) -> String {
        fields.map { name, value in
            escape(name) + "=" + escape(value)
        }.joined(separator: "&")
    }

    private static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// A successful token answer (RFC 6749 §5.1), with the harness's fields when asked for.
    struct TokenAnswer: Codable {
        var accessToken: String
        var tokenType = "Bearer"
        var expiresIn: Int
        var refreshToken: String?
        var sessionBench: HarnessFields?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token"
            case tokenType = "token_type"
            case expiresIn = "expires_in"
            case refreshToken = "refresh_token"
            case sessionBench = "session_bench"
        }
    }

    /// What a store's tokens carry beyond the standard answer: the server's generation, the
    /// expiry instant on the harness's clock, the subject, and for an elevated token the
    /// generation it was bought with.
    struct HarnessFields: Codable {
        var generation: UInt64
        var expiresAtNanoseconds: Int64
        var subject: String
        var baseGeneration: UInt64?

        enum CodingKeys: String, CodingKey {
            case generation
            case expiresAtNanoseconds = "expires_at_ns"
            case subject
            case baseGeneration = "base_generation"
        }
    }

    /// An error answer (RFC 6749 §5.2).
    struct ErrorAnswer: Codable {
        var error: String
        var errorDescription: String?

        enum CodingKeys: String, CodingKey {
            case error
            case errorDescription = "error_description"
        }
    }
}
#endif
