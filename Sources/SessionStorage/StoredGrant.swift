import Foundation
import SessionContract

/// A ``TokenGrant`` as the file backends keep it: every field of the grant, as plain JSON values.
/// Also the form a grant takes on the pipe between the harness and a session process.
///
/// Converting back gives a grant equal to the one saved, field for field. Decoding errors say
/// which field is missing or malformed, or that the bytes are not JSON, but never echo the
/// bytes themselves: a torn file still holds secrets.
public struct StoredGrant: Codable, Equatable, Sendable {
    var accessToken: String
    var subject: String
    var generation: UInt64
    var expiresAt: Int64
    var refreshToken: String

    public init(_ grant: TokenGrant) {
        accessToken = grant.accessToken.value
        subject = grant.accessToken.subject.rawValue
        generation = grant.accessToken.generation
        expiresAt = grant.accessToken.expiresAt.nanoseconds
        refreshToken = grant.refreshToken.value
    }

    public var grant: TokenGrant {
        TokenGrant(
            accessToken: AccessToken(
                value: accessToken, subject: Subject(subject), generation: generation,
                expiresAt: TokenInstant(nanoseconds: expiresAt)),
            refreshToken: RefreshToken(refreshToken))
    }

    /// The record's JSON, keys sorted so equal grants give equal bytes.
    func encoded(for fileName: String) throws(StorageError) -> Data {
        try JSONRecord.encode(self, for: fileName)
    }

    /// The grant in `data`, read from the file called `fileName`.
    static func decode(_ data: Data, from fileName: String) throws(StorageError) -> TokenGrant {
        try JSONRecord.decode(StoredGrant.self, from: data, fileName: fileName).grant
    }
}
