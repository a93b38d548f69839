import FBSessionsCore
import Foundation
import HTTPClient
import Support
import Tracing

/// The production `GraphAPI`: Graph calls over `HTTPClient.Client` (libcurl's multi interface on one thread), so
/// hundreds of calls can wait on Graph at once without holding a thread each.
///
/// - User-token calls send `access_token` and `appsecret_proof` (hex HMAC-SHA256 of the token under the app
///   secret) in the query; app-token calls send `APP_ID|APP_SECRET`; the OAuth exchanges send `client_secret`.
/// - Each call is bounded by `Configuration.timeout`, retries included. Transient failures are retried with
///   jittered exponential backoff (`RetryPolicy`); single-use calls only when the connection failed.
/// - Answers are decoded with `JSONDecoder`; anything unexpected (empty, huge, HTML, wrong types, truncated) is
///   `GraphError.transient`, never a crash.
/// - No token, secret, proof or code reaches an error, a log record or a metric label.
///
/// Single-use calls (the code exchange, the revocation) ask `HTTPClient` for a fresh connection that is closed
/// afterwards (`ClientRequest.freshConnection`), so they never ride a pooled keep-alive connection: libcurl
/// silently re-sends a request whose reused connection dies before any answer, and that would repeat a call that
/// may already have reached Graph.
///
/// Ownership: holds an `HTTPClient.Client`, its own (stopped by `shutdown()`) or a shared one passed to `init`
/// (left running).
/// Thread safety: a value of `Sendable` parts; call from anywhere.
public struct GraphClient: GraphAPI {
    /// The settings this client was made with.
    public let configuration: Configuration
    let http: Client
    let logger: Logger
    let metrics: GraphMetrics?
    /// Told the version of every answer that names one in `facebook-api-version`.
    let servedVersions: (@Sendable (_ facebookAppID: String, _ requested: String, _ served: String) -> Void)?
    private let ownsHTTPClient: Bool
    /// Makes a `graph {endpoint}` span for each call of a traced request; nil when tracing is off.
    let tracer: Tracer?
    /// The Graph host, for the spans' `server.address`.
    let serverAddress: String?

    /// Creates a client.
    /// - Parameters:
    ///   - configuration: base URL, default version, timeouts, size cap, retries.
    ///   - httpClient: a shared HTTP client to use; `nil` makes one (https only, or also http when
    ///     `allowsPlainHTTP`), stopped by `shutdown()`. Timeouts and the size cap are set per request either way.
    ///   - logger: receives `debug` records for retries and failures and a `warning` when Graph rate-limits.
    ///   - metrics: when given, registers `fbs_graph_calls_total{endpoint,outcome}`,
    ///     `fbs_graph_retries_total{endpoint}` and `fbs_graph_call_seconds{endpoint}`.
    ///   - servedVersions: told, for every answer whose `facebook-api-version` header names a well-formed version,
    ///     the Facebook app id, the version asked for and the one that answered (``GraphVersionWatch``). It must
    ///     return at once: it runs on the HTTP client's thread.
    /// - Throws: `ConfigurationError` for a base URL that is not https (or not loopback http when
    ///   `allowsPlainHTTP`), a malformed default version, or a non-positive timeout or size cap;
    ///   `HTTPClient.ClientError` when libcurl cannot start.
    public init(
        configuration: Configuration = Configuration(),
        httpClient: Client? = nil,
        logger: Logger = Logger(label: "fbsessiond.graph"),
        metrics: MetricsRegistry? = nil,
        servedVersions: (@Sendable (_ facebookAppID: String, _ requested: String, _ served: String) -> Void)? = nil,
        tracer: Tracer? = nil
    ) throws {
        try GraphClient.validate(configuration)
        self.tracer = tracer
        serverAddress = URLComponents(string: configuration.baseURL)?.host
        self.configuration = configuration
        self.servedVersions = servedVersions
        self.logger = logger
        self.metrics = metrics.map(GraphMetrics.init(registry:))
        let httpConfiguration = Client.Configuration(
            timeout: configuration.timeout,
            connectTimeout: min(configuration.timeout, .seconds(5)),
            maxResponseBytes: configuration.maxResponseBytes,
            followRedirects: false,
            allowedSchemes: configuration.allowsPlainHTTP ? ["https", "http"] : ["https"]
        )
        if let httpClient {
            http = httpClient
            ownsHTTPClient = false
        } else {
            http = try Client(configuration: httpConfiguration)
            ownsHTTPClient = true
        }
    }

    /// Stops the HTTP clients this client made (pending calls fail with `transient(.unavailable)`); a shared client
    /// is left alone. Idempotent.
    public func shutdown() {
        if ownsHTTPClient {
            http.shutdown()
        }
    }

    // MARK: GraphAPI

    /// `GET /debug_token` with the app token; see `GraphAPI.debugToken(inputToken:credentials:)`.
    public func debugToken(inputToken: String, credentials: GraphCredentials) async throws -> GraphTokenInfo {
        let endpoint = GraphEndpoint(
            "debug_token", path: "debug_token", query: [("input_token", inputToken)], authentication: .app,
            secrets: [inputToken]
        )
        return try await perform(endpoint, credentials, decoding: GraphWire.DebugTokenEnvelope.self) { wire, context in
            let data = wire.data
            let error = data.error.map { $0.detail(httpStatus: context.status, scrub: context.scrubber.scrub) }
            if let error, !data.isValid {
                // A throttled or failing debug_token says nothing about the token: report the call as failed.
                let classified = GraphError.classify(error, usage: context.usage)
                if classified.isRetryable {
                    return .failure(classified)
                }
            }
            var metadata: [String: String] = [:]
            for (key, value) in data.metadata ?? [:] {
                metadata[key] = value.value
            }
            return .success(
                GraphTokenInfo(
                    isValid: data.isValid, appID: data.appID?.value, userID: data.userID?.value, type: data.type,
                    application: data.application, expiresAt: GraphWire.Number.date(data.expiresAt),
                    dataAccessExpiresAt: GraphWire.Number.date(data.dataAccessExpiresAt),
                    issuedAt: GraphWire.Number.date(data.issuedAt), scopes: data.scopes ?? [],
                    granularScopes: (data.granularScopes ?? []).map {
                        GraphTokenInfo.GranularScope(scope: $0.scope, targetIDs: $0.targetIDs?.map(\.value))
                    },
                    profileID: data.profileID?.value, metadata: metadata, error: error
                )
            )
        }
    }

    /// `GET /me?fields=…`; see `GraphAPI.me(fields:accessToken:credentials:)`.
    public func me(fields: [String], accessToken: String, credentials: GraphCredentials) async throws
        -> GraphProfile
    {
        guard fields.allSatisfy({ !$0.isEmpty && !$0.contains(",") }) else {
            throw GraphError.other(GraphErrorDetail(code: 0, message: "empty field name or a comma in one"))
        }
        let query = fields.isEmpty ? [] : [("fields", fields.joined(separator: ","))]
        let endpoint = GraphEndpoint("me", path: "me", query: query, authentication: .user(accessToken: accessToken))
        return try await perform(endpoint, credentials, decoding: GraphWire.Profile.self) { wire, _ in
            .success(GraphProfile(wire.profile, picture: wire.picture.map { GraphClient.picture($0.data) }))
        }
    }

    /// `GET /me/permissions`; see `GraphAPI.permissions(accessToken:credentials:)`.
    public func permissions(accessToken: String, credentials: GraphCredentials) async throws -> GraphPermissions {
        let endpoint = GraphEndpoint(
            "permissions", path: "me/permissions", authentication: .user(accessToken: accessToken)
        )
        return try await perform(endpoint, credentials, decoding: GraphWire.Permissions.self) { wire, _ in
            var permissions = GraphPermissions()
            for entry in wire.data {
                switch entry.status {
                case "granted": permissions.granted.append(entry.permission)
                case "declined": permissions.declined.append(entry.permission)
                case "expired": permissions.expired.append(entry.permission)
                default: break
                }
            }
            return .success(permissions)
        }
    }

    /// `DELETE /me/permissions`; see `GraphAPI.revokePermissions(accessToken:credentials:)`. Accepts `true` and
    /// `{"success": true}`; `false` is `.other`.
    public func revokePermissions(accessToken: String, credentials: GraphCredentials) async throws {
        let endpoint = GraphEndpoint(
            "revoke_permissions", method: "DELETE", path: "me/permissions",
            authentication: .user(accessToken: accessToken), repetition: .singleUse
        )
        try await performRaw(endpoint, credentials) { response, context -> Result<Void, GraphError> in
            let decoder = JSONDecoder()
            let body = Data(response.body)
            let success =
                (try? decoder.decode(Bool.self, from: body))
                ?? (try? decoder.decode(GraphWire.Success.self, from: body))?.success
            guard let success else {
                return .failure(.transient(GraphTransientFailure(.malformedResponse, httpStatus: context.status)))
            }
            guard success else {
                let detail = GraphErrorDetail(
                    code: 0, message: "Graph did not confirm the revocation",
                    httpStatus: context.status)
                return .failure(.other(detail))
            }
            return .success(())
        }
    }

    /// `GET /oauth/access_token` with a code; see `GraphAPI.exchangeCode(code:redirectURI:credentials:)`.
    public func exchangeCode(code: String, redirectURI: String, credentials: GraphCredentials) async throws
        -> GraphTokenGrant
    {
        let endpoint = GraphEndpoint(
            "oauth_code", path: "oauth/access_token",
            query: [
                ("client_id", credentials.appID), ("redirect_uri", redirectURI),
                ("client_secret", credentials.appSecret), ("code", code),
            ],
            authentication: .none, repetition: .singleUse, secrets: [code], isOAuth: true
        )
        return try await performRaw(endpoint, credentials, GraphClient.tokenGrant)
    }

    /// `GET /oauth/access_token?grant_type=fb_exchange_token`; see
    /// `GraphAPI.exchangeForLongLivedToken(accessToken:credentials:)`.
    public func exchangeForLongLivedToken(accessToken: String, credentials: GraphCredentials) async throws
        -> GraphTokenGrant
    {
        let endpoint = GraphEndpoint(
            "oauth_exchange", path: "oauth/access_token",
            query: [
                ("grant_type", "fb_exchange_token"), ("client_id", credentials.appID),
                ("client_secret", credentials.appSecret), ("fb_exchange_token", accessToken),
            ],
            authentication: .none, secrets: [accessToken], isOAuth: true
        )
        return try await performRaw(endpoint, credentials, GraphClient.tokenGrant)
    }

    /// `GET /me/picture?redirect=false`; see `GraphAPI.pictureURL(size:accessToken:credentials:)`.
    public func pictureURL(size: GraphPictureSize, accessToken: String, credentials: GraphCredentials)
        async throws -> GraphPicture
    {
        var query = [("redirect", "false")]
        if let kind = size.kind {
            query.append(("type", kind.rawValue))
        }
        for (name, value) in [("width", size.width), ("height", size.height)] {
            guard let value else { continue }
            guard (1...10_000).contains(value) else {
                throw GraphError.other(GraphErrorDetail(code: 0, message: "picture \(name) must be 1...10000"))
            }
            query.append((name, String(value)))
        }
        let endpoint = GraphEndpoint(
            "picture", path: "me/picture", query: query, authentication: .user(accessToken: accessToken)
        )
        return try await perform(endpoint, credentials, decoding: GraphWire.PictureEnvelope.self) { wire, _ in
            .success(GraphClient.picture(wire.data))
        }
    }

    /// A generic `GET`; see `GraphAPI.get(path:query:authentication:credentials:)`.
    public func get(
        path: String, query: [(name: String, value: String)], authentication: GraphAuthentication,
        credentials: GraphCredentials
    ) async throws -> [UInt8] {
        let endpoint = GraphEndpoint(
            "get", path: path, query: query.map { ($0.name, $0.value) }, authentication: authentication
        )
        return try await performRaw(endpoint, credentials) { response, context in
            guard (try? JSONSerialization.jsonObject(with: Data(response.body), options: .fragmentsAllowed)) != nil
            else {
                return .failure(.transient(GraphTransientFailure(.malformedResponse, httpStatus: context.status)))
            }
            return .success(response.body)
        }
    }
}
