import FBSessionsCore

/// One kind of Graph call: how to build its request and how its answers are judged. Internal to `GraphClient`.
struct GraphEndpoint: Sendable {
    /// Whether a call may be repeated after it may have reached Graph.
    enum Repetition: Sendable {
        /// Repeating has no extra effect (reads; the long-lived exchange, whose input stays valid).
        case safe
        /// Repeat only when the request surely never left: the code exchange (a code works once) and the
        /// revocation (a repeat would fail with 190 and hide the success).
        case singleUse
    }

    /// The metrics and log label, for example `debug_token`.
    let name: String
    /// The HTTP method.
    let method: String
    /// The path after the version, for example `me/permissions`.
    let path: String
    /// Query parameters besides the authentication ones.
    let query: [(String, String)]
    /// The token sent.
    let authentication: GraphAuthentication
    /// Whether repeating is safe.
    let repetition: Repetition
    /// Secret values of this call besides the token, secret and proof (an OAuth code, an input token).
    let secrets: [String]
    /// Whether it is `oauth/access_token`, where code 1 means "Error validating client secret." (docs/facebook-graph.md
    /// §4.2): a configuration problem, not a transient one.
    let isOAuth: Bool

    init(
        _ name: String,
        method: String = "GET",
        path: String,
        query: [(String, String)] = [],
        authentication: GraphAuthentication,
        repetition: Repetition = .safe,
        secrets: [String] = [],
        isOAuth: Bool = false
    ) {
        self.name = name
        self.method = method
        self.path = path
        self.query = query
        self.authentication = authentication
        self.repetition = repetition
        self.secrets = secrets
        self.isOAuth = isOAuth
    }

    /// The endpoint as a span names it (`graph debug_token`, `graph me/permissions`): the path without the version,
    /// which it never has, and with any segment holding a digit (a node id) as `{id}`. Never the query.
    var traceName: String {
        path.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.contains(where: \.isNumber) ? "{id}" : String($0) }
            .joined(separator: "/")
    }

    /// Classifies what Graph said about this call.
    ///
    /// Two adjustments to `GraphError.classify`: an authentication error on an app-token call (`debug_token`)
    /// is about the app's credentials, not a user's token, so it is `.other` and can never close a session; and
    /// code 1 on `oauth/access_token` below HTTP 500 and without `is_transient` is a wrong client secret, so it
    /// is `.other` rather than retried.
    func classify(_ detail: GraphErrorDetail, usage: GraphAppUsage?) -> GraphError {
        let error = GraphError.classify(detail, usage: usage)
        switch error {
        case .invalidToken, .dataAccessExpired:
            return authentication == .app ? .other(detail) : error
        case .transient where isOAuth && detail.code == 1 && !detail.isTransient && (detail.httpStatus ?? 400) < 500:
            return .other(detail)
        default:
            return error
        }
    }

    /// Query parameters and scrubber for `credentials`: the endpoint's own parameters plus `access_token` (and
    /// `appsecret_proof` for a user token). Caller-supplied authentication parameters are dropped.
    func fullQuery(credentials: GraphCredentials) -> (query: [(String, String)], scrubber: SecretScrubber) {
        let reserved: Set<String> = ["access_token", "appsecret_proof", "appsecret_time"]
        var query = self.query.filter { !reserved.contains($0.0) }
        var secrets = secrets + [credentials.appSecret, credentials.appAccessToken]
        switch authentication {
        case .user(let token):
            let proof = credentials.appSecretProof(for: token)
            query += [("access_token", token), ("appsecret_proof", proof)]
            secrets += [token, proof]
        case .app:
            query.append(("access_token", credentials.appAccessToken))
        case .none:
            break
        }
        return (query, SecretScrubber(secrets))
    }
}
