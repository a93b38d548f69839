extension GraphError {
    /// Codes Graph uses for throttling (docs/facebook-graph.md §7.2, D-rate): 4 app, 17 user, 32 Pages, 341 application
    /// limit, 613 custom, 80000–80014 business use case.
    public static let rateLimitCodes: Set<Int> = Set([4, 17, 32, 341, 613]).union(80000...80014)

    /// Classifies an error Graph sent (docs/facebook-graph.md §7.4–§7.5, docs/api-contract.md "Reasons").
    ///
    /// Order matters: the authentication family first (190 and 102; 493 is data-access expiry), then missing
    /// permissions, then throttling (even when Graph marks it `is_transient`: rate limits are surfaced, not
    /// retried), then codes 1 and 2 and `is_transient`, then a 5xx status; everything else is `other`.
    /// An `OAuthException` without any code counts as an invalid token. When Graph leaves out the subcode of a
    /// 190, the contract says `token_invalid`; the one exception is the data-access message ("hasn't engaged the
    /// app in longer than 90 days"), which is kept as `dataAccessExpired` because closing a session is
    /// irreversible and docs/facebook-graph.md §7.2 asks clients to fall back to the message.
    /// - Parameters:
    ///   - detail: what Graph said.
    ///   - usage: the `x-app-usage` header of the response, if any.
    /// - Returns: the typed error.
    public static func classify(_ detail: GraphErrorDetail, usage: GraphAppUsage? = nil) -> GraphError {
        let code = detail.code
        let isAuthentication = code == 190 || code == 102 || (code == 0 && detail.type == "OAuthException")
        if isAuthentication {
            if isDataAccessExpiry(detail) {
                return .dataAccessExpired(detail)
            }
            return .invalidToken(
                ClosedReason(graphCode: code == 0 ? 190 : code, subcode: detail.subcode)
                    ?? .tokenInvalid, detail)
        }
        if code == 10 || (200...299).contains(code) {
            return .permissionMissing(detail)
        }
        if rateLimitCodes.contains(code) {
            return .rateLimited(usage, detail)
        }
        if code == 1 || code == 2 || detail.isTransient {
            return .transient(GraphTransientFailure(.graphError, httpStatus: detail.httpStatus, detail: detail))
        }
        if let status = detail.httpStatus, status >= 500 {
            return .transient(GraphTransientFailure(.graphError, httpStatus: status, detail: detail))
        }
        return .other(detail)
    }

    private static func isDataAccessExpiry(_ detail: GraphErrorDetail) -> Bool {
        if detail.subcode == dataAccessExpiredSubcode {
            return true
        }
        return detail.subcode == nil && detail.message.contains("hasn't engaged the app in longer than 90 days")
    }
}
