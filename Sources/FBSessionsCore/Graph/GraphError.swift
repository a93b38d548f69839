/// A failed Graph call, classified for the session manager (issue 3; docs/facebook-graph.md §7.5).
///
/// | case | Graph says | the session |
/// | --- | --- | --- |
/// | `invalidToken` | 190 or 102 (any subcode but 493), `OAuthException` without a code | closes with the reason |
/// | `dataAccessExpired` | 190/493 | stays; `action_required: reauthorize` |
/// | `permissionMissing` | 10, 200–299 | stays; re-request the permission |
/// | `rateLimited` | 4, 17, 32, 341, 613, 80000–80014 | stays; stop calling for a while |
/// | `transient` | 1, 2, `is_transient`, 5xx, timeouts, broken connections, malformed bodies | stays, `deferred` |
/// | `other` | anything else (100 bad parameter, 368 blocked, a refused code exchange, ...) | stays |
///
/// `description` names the case, the reason and Graph's codes; `debugDescription` adds Graph's message. Neither
/// ever contains an access token, app secret, `appsecret_proof` or OAuth code.
public enum GraphError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The user token is dead: the session must close with this reason (190 family, 102).
    case invalidToken(ClosedReason, GraphErrorDetail)
    /// The token is valid but its 90-day data access expired (190/493): keep it, ask the user to re-authorize.
    case dataAccessExpired(GraphErrorDetail)
    /// The token lacks a permission the call needs (10, 200–299).
    case permissionMissing(GraphErrorDetail)
    /// Graph throttled the app or user (4, 17, 32, 341, 613, 80000–80014), with what `x-app-usage` said. The
    /// client does not retry these: calling on makes the throttling last longer.
    case rateLimited(GraphAppUsage?, GraphErrorDetail)
    /// The call failed in a way that may succeed later; the client already retried it where that was safe.
    case transient(GraphTransientFailure)
    /// Any other Graph error (or a request the client refused to build); retrying will not help.
    case other(GraphErrorDetail)

    /// Graph's subcode for data-access expiry (190/493).
    public static let dataAccessExpiredSubcode = 493

    /// The reason to close the session with: non-`nil` only for `invalidToken`.
    public var closedReason: ClosedReason? {
        if case .invalidToken(let reason, _) = self {
            return reason
        }
        return nil
    }

    /// Whether this answer to a revocation (`DELETE /me/permissions`) says the app's grant is gone already:
    /// 190/458 (the user has not authorized the app) or 190/466 (the session was invalidated through an API
    /// call), the errors a token gets once its permissions were deleted (docs/facebook-graph.md, "Revoking").
    public var confirmsRevocation: Bool {
        closedReason == .appRemoved || closedReason == .revoked
    }

    /// Whether the same call may succeed later without anything changing on the user's side: `transient` and
    /// `rateLimited`. Such failures must never close a session; the service answers 503 with `Retry-After`, or
    /// keeps a session `token_loaded` with `validation: deferred`. (The client itself retries only `transient`.)
    public var isRetryable: Bool {
        switch self {
        case .transient, .rateLimited: true
        case .invalidToken, .dataAccessExpired, .permissionMissing, .other: false
        }
    }

    /// Graph's error detail, when Graph sent one.
    public var detail: GraphErrorDetail? {
        switch self {
        case .invalidToken(_, let detail), .dataAccessExpired(let detail), .permissionMissing(let detail),
            .rateLimited(_, let detail), .other(let detail):
            detail
        case .transient(let failure):
            failure.detail
        }
    }

    /// The case name in snake case, for metrics labels and logs: `invalid_token`, `data_access_expired`,
    /// `permission_missing`, `rate_limited`, `transient` or `other`.
    public var outcome: String {
        switch self {
        case .invalidToken: "invalid_token"
        case .dataAccessExpired: "data_access_expired"
        case .permissionMissing: "permission_missing"
        case .rateLimited: "rate_limited"
        case .transient: "transient"
        case .other: "other"
        }
    }

    /// For example `GraphError.invalidToken(token_expired, 190/463 OAuthException http=400)`; no message.
    public var description: String {
        switch self {
        case .invalidToken(let reason, let detail):
            "GraphError.invalidToken(\(reason.rawValue), \(detail))"
        case .dataAccessExpired(let detail), .permissionMissing(let detail), .other(let detail):
            "GraphError.\(caseName)(\(detail))"
        case .rateLimited(let usage, let detail):
            "GraphError.rateLimited(\(detail)\(usage.map { ", usage: \($0)" } ?? ""))"
        case .transient(let failure):
            "GraphError.transient(\(failure))"
        }
    }

    /// The description plus Graph's message, if any.
    public var debugDescription: String {
        guard let message = detail?.message, !message.isEmpty else {
            return description
        }
        return "\(description): \(message)"
    }

    private var caseName: String {
        switch self {
        case .invalidToken: "invalidToken"
        case .dataAccessExpired: "dataAccessExpired"
        case .permissionMissing: "permissionMissing"
        case .rateLimited: "rateLimited"
        case .transient: "transient"
        case .other: "other"
        }
    }
}
