/// Why a Limited Login `AuthenticationToken` was refused (422 `authentication_token_invalid` with `reason`), at login
/// or at a refresh. Nothing was stored, no event was written, and a login token's nonce stays usable.
public enum AuthenticationTokenError: Error, Sendable, Equatable {
    /// Not a compact JWS of three base64url parts with JSON objects for header and payload, over 16 KiB, or a claim
    /// of the wrong JSON type.
    case malformed
    /// The header's `alg` is anything but exactly `RS256` (`none` and `HS256` included).
    case unsupportedAlgorithm
    /// The header has no `kid`, or the key set does not hold it.
    case unknownKey
    /// The RS256 signature does not check under the key the `kid` names.
    case badSignature
    /// `iss` is neither `https://www.facebook.com` nor `https://limited.facebook.com`.
    case wrongIssuer
    /// `aud` is not the app's Facebook app id.
    case wrongAudience
    /// `exp` has passed (by more than the leeway).
    case expired
    /// `iat` is in the future (by more than the leeway).
    case notYetValid
    /// A required claim (`iss`, `aud`, `sub`, `jti`, `exp`, `iat`, `nonce`) is absent, null or empty.
    case missingClaim(String)
    /// A refresh only: `sub` is not the session's Facebook user.
    case wrongSubject
    /// A refresh only: `iat` is not later than the stored token's (a replay of it, or an older token; also the
    /// loser of refreshes racing with one token).
    case notNewer

    /// The `reason` sent with the error, e.g. `bad_signature`.
    public var reason: String {
        switch self {
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported_algorithm"
        case .unknownKey: "unknown_key"
        case .badSignature: "bad_signature"
        case .wrongIssuer: "wrong_issuer"
        case .wrongAudience: "wrong_audience"
        case .expired: "expired"
        case .notYetValid: "not_yet_valid"
        case .missingClaim: "missing_claim"
        case .wrongSubject: "wrong_subject"
        case .notNewer: "not_newer"
        }
    }

    /// Every reason, in the order the checks run (for the spec and its test).
    public static let reasons = [
        "malformed", "unsupported_algorithm", "unknown_key", "bad_signature", "missing_claim", "wrong_issuer",
        "wrong_audience", "expired", "not_yet_valid", "wrong_subject", "not_newer",
    ]
}
