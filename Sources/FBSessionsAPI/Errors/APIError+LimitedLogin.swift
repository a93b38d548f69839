import FBSessionsCore

/// The statuses and codes of Limited Login; called from ``APIError/from(_:)``.
extension APIError {
    /// 422 `authentication_token_invalid` with `reason` (and `claim` for `missing_claim`), `field`
    /// `authentication_token`. The message never repeats any part of the token.
    static func authenticationTokenError(_ error: AuthenticationTokenError) -> APIError {
        let message: String
        switch error {
        case .malformed:
            message = "The authentication_token is not a compact JWS of at most 16 KiB with JSON object header and payload."
        case .unsupportedAlgorithm: message = "The authentication_token's alg must be RS256."
        case .unknownKey: message = "The authentication_token's kid is not in Facebook's Limited Login key set."
        case .badSignature: message = "The authentication_token's signature does not check."
        case .wrongIssuer: message = "The authentication_token was not issued by Facebook."
        case .wrongAudience: message = "The authentication_token was issued for another Facebook app."
        case .expired: message = "The authentication_token has expired; log in again."
        case .notYetValid: message = "The authentication_token's iat is in the future."
        case .missingClaim(let claim): message = "The authentication_token has no \(claim) claim."
        case .wrongSubject: message = "The authentication_token is another Facebook user's than the session's."
        case .notNewer:
            message = "The authentication_token was not issued after the session's current one (a replay or an older token)."
        }
        var mapped = APIError(
            422, .authenticationTokenInvalid, message, extra: ["reason": error.reason, "field": "authentication_token"])
        if case .missingClaim(let claim) = error { mapped.extra["claim"] = claim }
        return mapped
    }

    /// 400 `invalid_nonce`, `nonce_used` or `nonce_expired`.
    static func nonceError(_ error: LoginNonceError) -> APIError {
        switch error {
        case .invalid:
            return APIError(
                400, .invalidNonce,
                "The token's nonce is not one this service issued for this owner and app; ask POST /v1/login-nonces.",
                extra: ["field": "authentication_token"])
        case .used:
            return APIError(
                400, .nonceUsed, "The token's nonce was used already; log in again with a new nonce.",
                extra: ["field": "authentication_token"])
        case .expired:
            return APIError(
                400, .nonceExpired, "The token's nonce expired (10 minutes); log in again with a new nonce.",
                extra: ["field": "authentication_token"])
        }
    }

    /// 503 `graph_unavailable` with `Retry-After`: the key set is unreachable and no key for the token is cached.
    static func signingKeyError(_ error: SigningKeyError) -> APIError {
        switch error {
        case .unavailable(let retryAfter):
            var mapped = APIError(
                503, .graphUnavailable, "Facebook's Limited Login key set could not be reached; try again shortly.")
            mapped.headers.add("Retry-After", String(retryAfter))
            return mapped
        }
    }
}
