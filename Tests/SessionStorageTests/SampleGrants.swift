import Foundation
import SessionContract

/// Grants whose secrets are easy to spot in raw bytes: each value is ASCII, JSON-safe and carries a
/// marker found nowhere else, so finding the marker on disk means the value is there in clear.
enum SampleGrants {
    static let subject = "user-subject-7c1e9a42"

    /// A grant with a JWT-sized access token; `tag` makes grants of one test distinct.
    static func grant(_ tag: String = "a", generation: UInt64 = 7) -> TokenGrant {
        TokenGrant(
            accessToken: AccessToken(
                value: "access-marker-\(tag)-" + String(repeating: "eyJhbGciOiJIUzI1NiJ9", count: 44),
                subject: Subject(subject), generation: generation,
                expiresAt: TokenInstant(nanoseconds: 1_700_000_000_123_456_789)),
            refreshToken: RefreshToken("refresh-marker-\(tag)-d41d8cd98f00b204e9800998ecf8427e"))
    }

    /// A grant with awkward contents: characters JSON must escape, non-ASCII text, slashes, and
    /// numbers at the edges of their types.
    static let awkward = TokenGrant(
        accessToken: AccessToken(
            value: "a/b+c=\"quoted\"\\back\nline\u{0}nul é 🔑", subject: Subject("ümlaut/\"user\"\t"),
            generation: .max, expiresAt: TokenInstant(nanoseconds: .min)),
        refreshToken: RefreshToken(""))

    /// The byte strings that must never be found in clear under a backend promising protection.
    static func secrets(of grant: TokenGrant) -> [(what: String, bytes: Data)] {
        [
            ("access token", Data(grant.accessToken.value.utf8)),
            ("access token marker", Data(grant.accessToken.value.utf8.prefix(16))),
            ("refresh token", Data(grant.refreshToken.value.utf8)),
            ("refresh token marker", Data(grant.refreshToken.value.utf8.prefix(16))),
            ("subject", Data(grant.accessToken.subject.rawValue.utf8)),
        ]
    }
}
