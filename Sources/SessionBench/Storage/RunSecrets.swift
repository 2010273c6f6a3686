import SessionContract
import SessionOracle

/// The secrets issued to the run's session, for the at-rest scan: a prefix of every access
/// token, every refresh token, and the user id. Never printed.
struct Secrets {
    private(set) var byKind: [String: [[UInt8]]]

    init(subject: String) { byKind = ["user id": [Array(subject.utf8)], "access token": [], "refresh token": []] }

    /// The refresh tokens of the session now under way (from its sign-in on).
    private(set) var session: [[UInt8]] = []

    mutating func startSession() { session = [] }

    mutating func note(_ grant: TokenGrant) {
        byKind["access token", default: []].append(Array(grant.accessToken.value.utf8.prefix(64)))
        byKind["refresh token", default: []].append(Array(grant.refreshToken.value.utf8))
        session.append(Array(grant.refreshToken.value.utf8))
    }

    mutating func note(_ grant: TokenGrant, in life: inout CrashRestartHistory.Life) {
        note(grant)
        life.issued.append(grant.accessToken.generation)
        if life.first != nil { life.issuedInStorm.append(grant.accessToken.generation) }
    }
}
