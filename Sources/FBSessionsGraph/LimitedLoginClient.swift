import FBSessionsCore
import Foundation
import HTTPClient
import Support
import Tracing

/// The production ``LimitedLoginAPI``: Limited Login's key set and uninstall endpoint over `HTTPClient.Client`
/// (libcurl's multi interface on one thread), so a slow Facebook holds no thread.
///
/// - The key set is one `GET` of `FBS_LIMITED_JWKS_URL`, bounded by the timeout and a 256 KiB body cap; only a 200
///   with a key set document counts, and its `Cache-Control: max-age` is passed on (``CacheControl``).
/// - The uninstall is one form `POST` of `id_token` and `app_id` to `FBS_LIMITED_UNINSTALL_URL`, on a fresh
///   connection (libcurl never re-sends it on its own), never retried here: a 2xx is done; a 4xx other than 408
///   and 429 means Facebook refused the token (``LimitedUninstallError/refused``); anything else may work later
///   (``LimitedUninstallError/unavailable``).
/// - No token reaches an error, a log record or a metric label.
///
/// Ownership: holds an `HTTPClient.Client`, its own (stopped by `shutdown()`) or a shared one (left running).
/// Thread safety: a value of `Sendable` parts; call from anywhere.
public struct LimitedLoginClient: LimitedLoginAPI {
    /// Settings; every property has a documented default.
    public struct Configuration: Sendable {
        /// The key set (`FBS_LIMITED_JWKS_URL`).
        public var jwksURL: String
        /// The uninstall endpoint (`FBS_LIMITED_UNINSTALL_URL`).
        public var uninstallURL: String
        /// Time per call (`FBS_GRAPH_TIMEOUT`). Default 10 s.
        public var timeout: Duration
        /// Largest answer read. Default 256 KiB (Facebook's key set is about 1 KiB).
        public var maxResponseBytes: Int
        /// Allows plain-http URLs on loopback hosts (tests and the built-in emulator). Default false.
        public var allowsPlainHTTP: Bool

        /// Creates a configuration.
        public init(
            jwksURL: String = Settings.defaultLimitedJWKSURL, uninstallURL: String = Settings.defaultLimitedUninstallURL,
            timeout: Duration = .seconds(10), maxResponseBytes: Int = 256 * 1024, allowsPlainHTTP: Bool = false
        ) {
            self.jwksURL = jwksURL
            self.uninstallURL = uninstallURL
            self.timeout = timeout
            self.maxResponseBytes = maxResponseBytes
            self.allowsPlainHTTP = allowsPlainHTTP
        }

        /// The configuration the settings describe; plain http only when both URLs are http on a loopback host.
        public init(settings: Settings) {
            self.init(
                jwksURL: settings.limitedJWKSURL, uninstallURL: settings.limitedUninstallURL,
                timeout: .milliseconds(Int((settings.graphTimeout * 1000).rounded())),
                allowsPlainHTTP: GraphURL.isLoopbackHTTP(settings.limitedJWKSURL)
                    && GraphURL.isLoopbackHTTP(settings.limitedUninstallURL))
        }
    }

    /// The settings this client was made with.
    public let configuration: Configuration
    let http: Client
    let logger: Logger
    let calls: Counter?
    private let ownsHTTPClient: Bool
    /// Makes a `jwks fetch` span when a traced request fetches the key set; nil when tracing is off.
    private let tracer: Tracer?

    /// Creates a client.
    /// - Parameters:
    ///   - configuration: the URLs, timeout and size cap.
    ///   - httpClient: a shared HTTP client; nil makes one (https only, or also http when allowed).
    ///   - logger: receives a `warning` when the key set cannot be had, `debug` records otherwise.
    ///   - metrics: when given, registers `fbs_limited_login_calls_total{endpoint,outcome}`.
    /// - Throws: ``GraphClient/ConfigurationError`` for a URL that is not https (or loopback http when allowed);
    ///   `HTTPClient.ClientError` when libcurl cannot start.
    public init(
        configuration: Configuration = Configuration(), httpClient: Client? = nil,
        logger: Logger = Logger(label: "fbsessiond.limited"), metrics: MetricsRegistry? = nil, tracer: Tracer? = nil
    ) throws {
        self.tracer = tracer
        for (name, url) in [
            ("FBS_LIMITED_JWKS_URL", configuration.jwksURL), ("FBS_LIMITED_UNINSTALL_URL", configuration.uninstallURL),
        ] {
            guard let (scheme, _) = GraphURL.schemeAndHost(of: url),
                scheme == "https" || (configuration.allowsPlainHTTP && GraphURL.isLoopbackHTTP(url))
            else {
                throw GraphClient.ConfigurationError(description: "\(name) must be an https URL")
            }
        }
        self.configuration = configuration
        self.logger = logger
        self.calls = metrics?.counter(
            "fbs_limited_login_calls_total", help: "Limited Login calls (key set, uninstall) by endpoint and outcome.")
        if let httpClient {
            http = httpClient
            ownsHTTPClient = false
        } else {
            http = try Client(
                configuration: .init(
                    timeout: configuration.timeout, connectTimeout: min(configuration.timeout, .seconds(5)),
                    maxResponseBytes: configuration.maxResponseBytes,
                    allowedSchemes: configuration.allowsPlainHTTP ? ["https", "http"] : ["https"]))
            ownsHTTPClient = true
        }
    }

    /// Stops the HTTP client this client made; a shared one is left alone. Idempotent.
    public func shutdown() {
        if ownsHTTPClient { http.shutdown() }
    }

    /// For a traced request, one CLIENT span `jwks fetch` with the key set's host and the status.
    public func signingKeys() async throws -> SigningKeyFetch {
        guard let tracer, let span = tracer.child("jwks fetch") else { return try await fetchSigningKeys(span: nil) }
        span.set("http.request.method", "GET")
        if let host = URLComponents(string: configuration.jwksURL)?.host { span.set("server.address", host) }
        defer { span.end() }
        do {
            return try await fetchSigningKeys(span: span)
        } catch {
            span.setError("key set fetch failed")
            throw error
        }
    }

    private func fetchSigningKeys(span: Span?) async throws -> SigningKeyFetch {
        let request = ClientRequest(
            url: configuration.jwksURL, headers: [("Accept", "application/json")], timeout: configuration.timeout,
            maxResponseBytes: configuration.maxResponseBytes)
        let response: ClientResponse
        do {
            response = try await http.execute(request)
        } catch let error as ClientError {
            if error.code == .cancelled { throw CancellationError() }
            record("jwks", "unreachable")
            logger.warning("limited login key set unreachable", ["error": .string(error.description)])
            throw LimitedLoginClientError.unreachable
        }
        span?.set("http.response.status_code", response.status)
        guard response.status == 200 else {
            record("jwks", "status")
            logger.warning("limited login key set refused", ["status": .int(response.status)])
            throw LimitedLoginClientError.status(response.status)
        }
        let keys: JSONWebKeySet
        do {
            keys = try JSONWebKeySet(parsing: response.body)
        } catch {
            record("jwks", "malformed")
            logger.warning("limited login key set malformed", ["bytes": .int(response.body.count)])
            throw LimitedLoginClientError.malformed
        }
        record("jwks", "ok")
        logger.debug(
            "limited login key set fetched", ["keys": .int(keys.keys.count), "entries": .int(keys.entryCount)])
        return SigningKeyFetch(keys: keys, maxAge: CacheControl.maxAge(response.headers(named: "cache-control")))
    }

    public func uninstall(authenticationToken: String, facebookAppID: String) async throws {
        let form = "id_token=" + GraphURL.percentEncoded(authenticationToken) + "&app_id="
            + GraphURL.percentEncoded(facebookAppID)
        var request = ClientRequest(
            method: "POST", url: configuration.uninstallURL,
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8),
            timeout: configuration.timeout, maxResponseBytes: 64 * 1024)
        request.freshConnection = true
        let response: ClientResponse
        do {
            response = try await http.execute(request)
        } catch let error as ClientError {
            if error.code == .cancelled { throw CancellationError() }
            record("uninstall", "unreachable")
            throw LimitedUninstallError.unavailable
        }
        switch response.status {
        case 200..<300 where !Self.saysNoSuccess(response.body):
            record("uninstall", "ok")
        case 400..<500 where response.status != 408 && response.status != 429 && !Self.isTransient(response.body):
            record("uninstall", "refused")
            logger.debug("limited login uninstall refused", ["status": .int(response.status)])
            throw LimitedUninstallError.refused
        default:
            record("uninstall", "failed")
            logger.debug("limited login uninstall failed", ["status": .int(response.status)])
            throw LimitedUninstallError.unavailable
        }
    }

    /// A 2xx whose body is `false` or `{"success": false}`.
    static func saysNoSuccess(_ body: [UInt8]) -> Bool {
        let decoder = JSONDecoder()
        let data = Data(body)
        if let flag = try? decoder.decode(Bool.self, from: data) { return !flag }
        if let wire = try? decoder.decode(GraphWire.Success.self, from: data) { return !wire.success }
        return false
    }

    /// A Graph error body that says to try again (codes 1 and 2, or `is_transient`).
    static func isTransient(_ body: [UInt8]) -> Bool {
        guard let envelope = try? JSONDecoder().decode(GraphWire.ErrorEnvelope.self, from: Data(body)) else {
            return false
        }
        let detail = envelope.error.detail(httpStatus: 400, scrub: { $0 })
        return detail.code == 1 || detail.code == 2 || detail.isTransient
    }

    private func record(_ endpoint: String, _ outcome: String) {
        calls?.increment([("endpoint", endpoint), ("outcome", outcome)])
    }
}

/// Why the key set could not be had (thrown to ``SigningKeyCache``, which keeps what it knew).
public enum LimitedLoginClientError: Error, Sendable, Equatable {
    /// No answer: connection failure, timeout, an answer over the size cap.
    case unreachable
    /// An answer other than 200.
    case status(Int)
    /// A 200 that is not a key set document.
    case malformed
}
