import FBSessionsCore
import Foundation
import HTTPClient
import Support
import Tracing

/// What an interpreter of a successful answer may use.
struct ResponseContext {
    /// The HTTP status.
    let status: Int
    /// The `x-app-usage` header, parsed.
    let usage: GraphAppUsage?
    /// Removes this call's secrets from text.
    let scrubber: SecretScrubber
}

extension GraphClient {
    /// Builds, sends, retries and classifies one call; `convert` turns the decoded success body into the result.
    func perform<Wire: Decodable, Output>(
        _ endpoint: GraphEndpoint,
        _ credentials: GraphCredentials,
        decoding: Wire.Type,
        _ convert: (Wire, ResponseContext) -> Result<Output, GraphError>
    ) async throws -> Output {
        try await performRaw(endpoint, credentials) { response, context in
            guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(response.body)) else {
                return .failure(.transient(GraphTransientFailure(.malformedResponse, httpStatus: context.status)))
            }
            return convert(wire, context)
        }
    }

    /// Builds, sends, retries and classifies one call; `interpret` reads a 2xx answer that is not a Graph error.
    ///
    /// The retry rule: only `GraphError.transient` is retried, at most `retry.maxAttempts` attempts in all, with
    /// the policy's jittered backoff, and only while at least 50 ms of `timeout` would remain after the delay.
    /// A `singleUse` call is retried only after `connectFailed`. `responseTooLarge` and `unavailable` are never
    /// retried. Cancellation stops at once with `CancellationError`.
    ///
    /// For a traced request, the call (its retries included) is one CLIENT span `graph {endpoint}`, a child of the
    /// request's span, with the method, `server.address`, the last status, the endpoint and the version; ERROR with
    /// the failure's outcome when it fails. Never the URL's query, where the tokens and the proof are.
    func performRaw<Output>(
        _ endpoint: GraphEndpoint,
        _ credentials: GraphCredentials,
        _ interpret: (ClientResponse, ResponseContext) -> Result<Output, GraphError>
    ) async throws -> Output {
        guard let tracer, let span = tracer.child("graph " + endpoint.traceName) else {
            return try await performCall(endpoint, credentials, span: nil, interpret)
        }
        span.set("http.request.method", endpoint.method)
        span.set("fbs.graph.endpoint", endpoint.traceName)
        if let serverAddress { span.set("server.address", serverAddress) }
        defer { span.end() }
        do {
            return try await performCall(endpoint, credentials, span: span, interpret)
        } catch {
            span.setError((error as? GraphError)?.outcome ?? (error is CancellationError ? "cancelled" : "failed"))
            throw error
        }
    }

    private func performCall<Output>(
        _ endpoint: GraphEndpoint,
        _ credentials: GraphCredentials,
        span: Span?,
        _ interpret: (ClientResponse, ResponseContext) -> Result<Output, GraphError>
    ) async throws -> Output {
        let (request, scrubber, version) = try makeRequest(endpoint, credentials)
        span?.set("fbs.graph.version", version)
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + configuration.timeout
        var attempt = 0
        while true {
            attempt += 1
            try Task.checkCancellation()
            let outcome = try await attemptOnce(request, endpoint, scrubber, deadline, clock, interpret, span: span) { served in
                servedVersions?(credentials.appID, version, served)
            }
            switch outcome {
            case .success(let value):
                metrics?.record(endpoint.name, outcome: "ok", attempts: attempt, seconds: (clock.now - start).seconds)
                return value
            case .failure(let error):
                if let delay = retryDelay(after: error, attempt: attempt, endpoint, deadline, clock) {
                    logger.debug(
                        "graph call failed; retrying",
                        [
                            "endpoint": .string(endpoint.name), "attempt": .int(attempt), "error": .string("\(error)"),
                            "delay_ms": .int(Int(delay.seconds * 1000)),
                        ]
                    )
                    try await Task.sleep(for: delay)
                    continue
                }
                let final = GraphClient.settingAttempts(attempt, on: error)
                metrics?.record(
                    endpoint.name, outcome: final.outcome, attempts: attempt, seconds: (clock.now - start).seconds
                )
                log(final, endpoint)
                throw final
            }
        }
    }

    private func attemptOnce<Output>(
        _ request: ClientRequest,
        _ endpoint: GraphEndpoint,
        _ scrubber: SecretScrubber,
        _ deadline: ContinuousClock.Instant,
        _ clock: ContinuousClock,
        _ interpret: (ClientResponse, ResponseContext) -> Result<Output, GraphError>,
        span: Span?,
        served: (String) -> Void
    ) async throws -> Result<Output, GraphError> {
        let remaining = deadline - clock.now
        guard remaining > .zero else {
            return .failure(.transient(GraphTransientFailure(.timeout)))
        }
        var request = request
        request.timeout = min(remaining, configuration.attemptTimeout ?? remaining)
        let response: ClientResponse
        do {
            response = try await http.execute(request)
        } catch let error as ClientError {
            if error.code == .cancelled {
                throw CancellationError()
            }
            return .failure(GraphClient.transportFailure(error))
        }
        span?.set("http.response.status_code", response.status)
        if let version = response.header("facebook-api-version"), GraphURL.isVersion(version) {
            served(version)
        }
        return GraphClient.read(response, endpoint, scrubber, interpret)
    }

    /// Reads one answer: a Graph error body wins; then a bare 429 is a rate limit and any other non-2xx status is
    /// transient; then `interpret` reads the 2xx body.
    static func read<Output>(
        _ response: ClientResponse,
        _ endpoint: GraphEndpoint,
        _ scrubber: SecretScrubber,
        _ interpret: (ClientResponse, ResponseContext) -> Result<Output, GraphError>
    ) -> Result<Output, GraphError> {
        let usage = appUsage(response.header("x-app-usage"))
        let context = ResponseContext(status: response.status, usage: usage, scrubber: scrubber)
        let body = Data(response.body)
        if let envelope = try? JSONDecoder().decode(GraphWire.ErrorEnvelope.self, from: body) {
            let detail = envelope.error.detail(httpStatus: response.status, scrub: scrubber.scrub)
            return .failure(endpoint.classify(detail, usage: usage))
        }
        guard (200..<300).contains(response.status) else {
            if response.status == 429 {
                // Graph throttles with error bodies; a bare 429 comes from something in between. Still a limit.
                let detail = GraphErrorDetail(code: 0, message: "HTTP 429 without a Graph error", httpStatus: 429)
                return .failure(.rateLimited(usage, detail))
            }
            let kind: GraphTransientFailure.Kind = response.status >= 500 ? .serverError : .malformedResponse
            return .failure(.transient(GraphTransientFailure(kind, httpStatus: response.status)))
        }
        return interpret(response, context)
    }

    /// The delay before the next attempt, or `nil` when the failure must be returned now.
    private func retryDelay(
        after error: GraphError,
        attempt: Int,
        _ endpoint: GraphEndpoint,
        _ deadline: ContinuousClock.Instant,
        _ clock: ContinuousClock
    ) -> Duration? {
        guard case .transient(let failure) = error, attempt < configuration.retry.maxAttempts,
            failure.kind != .responseTooLarge, failure.kind != .unavailable,
            endpoint.repetition == .safe || !failure.mayHaveReachedGraph
        else {
            return nil
        }
        let delay = configuration.retry.delay(afterAttempt: attempt, random: Double.random(in: 0...1))
        guard deadline - (clock.now + delay) >= .milliseconds(50) else {
            return nil
        }
        return delay
    }

    /// The request for `endpoint` (no timeout yet), the scrubber for its secrets, and the version it asks for.
    private func makeRequest(
        _ endpoint: GraphEndpoint,
        _ credentials: GraphCredentials
    ) throws -> (ClientRequest, SecretScrubber, String) {
        let version = credentials.version ?? configuration.defaultVersion
        guard GraphURL.isVersion(version) else {
            throw GraphError.other(GraphErrorDetail(code: 0, message: "Graph version must look like v25.0"))
        }
        guard let segments = GraphURL.segments(of: endpoint.path) else {
            throw GraphError.other(GraphErrorDetail(code: 0, message: "malformed Graph path"))
        }
        let (query, scrubber) = endpoint.fullQuery(credentials: credentials)
        let url = GraphURL.make(base: configuration.baseURL, version: version, segments: segments, query: query)
        let headers = [("Accept", "application/json")]
        var request = ClientRequest(
            method: endpoint.method, url: url, headers: headers, maxResponseBytes: configuration.maxResponseBytes
        )
        // A single-use call never rides a pooled connection, so libcurl can never silently re-send it.
        request.freshConnection = endpoint.repetition == .singleUse
        return (request, scrubber, version)
    }

    private func log(_ error: GraphError, _ endpoint: GraphEndpoint) {
        var metadata: [String: Logger.Value] = ["endpoint": .string(endpoint.name), "error": .string("\(error)")]
        if case .rateLimited(let usage, _) = error {
            metadata["app_usage"] = .string(usage?.description ?? "")
            logger.warning("graph rate limit reached", metadata)
        } else {
            logger.debug("graph call failed", metadata)
        }
    }

    /// The transient failure for a transport error (the client never sends a malformed request, so anything but
    /// a timeout, refused connection, size cap or shutdown counts as a broken connection).
    static func transportFailure(_ error: ClientError) -> GraphError {
        let kind: GraphTransientFailure.Kind =
            switch error.code {
            case .timeout: .timeout
            case .connectFailed: .connectFailed
            case .responseTooLarge: .responseTooLarge
            case .shutdown: .unavailable
            default: .connectionLost
            }
        return .transient(GraphTransientFailure(kind))
    }

    /// `error` with `attempts` recorded, when it is transient.
    static func settingAttempts(_ attempts: Int, on error: GraphError) -> GraphError {
        guard case .transient(var failure) = error else {
            return error
        }
        failure.attempts = attempts
        return .transient(failure)
    }

    /// The `x-app-usage` header, parsed; `nil` when absent or not the expected JSON.
    static func appUsage(_ header: String?) -> GraphAppUsage? {
        guard let header, let wire = try? JSONDecoder().decode(GraphWire.AppUsage.self, from: Data(header.utf8))
        else {
            return nil
        }
        return GraphAppUsage(
            callCount: wire.callCount?.value, totalTime: wire.totalTime?.value, totalCPUTime: wire.totalCPUTime?.value
        )
    }

    /// Reads `oauth/access_token`'s answer: JSON, or the pre-v2.3 form encoding `access_token=…&expires=…`.
    static func tokenGrant(
        _ response: ClientResponse, _ context: ResponseContext
    ) -> Result<GraphTokenGrant, GraphError> {
        if let wire = try? JSONDecoder().decode(GraphWire.TokenGrant.self, from: Data(response.body)),
            !wire.accessToken.isEmpty
        {
            let grant = GraphTokenGrant(
                accessToken: wire.accessToken, tokenType: wire.tokenType,
                expiresIn: wire.expiresIn?.value ?? wire.expires?.value
            )
            return .success(grant)
        }
        var fields: [String: String] = [:]
        for pair in response.bodyText.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = String(parts[1]).removingPercentEncoding {
                fields[String(parts[0])] = value
            }
        }
        guard let token = fields["access_token"], !token.isEmpty,
            token.unicodeScalars.allSatisfy({ $0.isASCII && !CharacterSet.whitespacesAndNewlines.contains($0) })
        else {
            return .failure(.transient(GraphTransientFailure(.malformedResponse, httpStatus: context.status)))
        }
        let expires = (fields["expires_in"] ?? fields["expires"]).flatMap { Int($0) }
        return .success(GraphTokenGrant(accessToken: token, tokenType: fields["token_type"], expiresIn: expires))
    }

    /// The port's picture for a wire picture.
    static func picture(_ wire: GraphWire.Picture) -> GraphPicture {
        GraphPicture(
            url: wire.url, width: wire.width?.value, height: wire.height?.value,
            isSilhouette: wire.isSilhouette ?? false
        )
    }

    /// Checks a configuration; see `init`.
    static func validate(_ configuration: Configuration) throws {
        guard let (scheme, host) = GraphURL.schemeAndHost(of: configuration.baseURL),
            !configuration.baseURL.contains("?"), !configuration.baseURL.contains("#")
        else {
            throw ConfigurationError(description: "FBS_GRAPH_URL: expected an absolute https URL without query")
        }
        if scheme == "http" {
            guard configuration.allowsPlainHTTP, GraphURL.isLoopback(host) else {
                throw ConfigurationError(
                    description: "FBS_GRAPH_URL: plain http is allowed only for loopback hosts in tests")
            }
        }
        guard GraphURL.isVersion(configuration.defaultVersion) else {
            throw ConfigurationError(description: "FBS_GRAPH_VERSION: expected vMAJOR.MINOR, e.g. v25.0")
        }
        guard configuration.timeout > .zero, (configuration.attemptTimeout ?? .seconds(1)) > .zero else {
            throw ConfigurationError(description: "FBS_GRAPH_TIMEOUT: must be positive")
        }
        guard configuration.maxResponseBytes > 0 else {
            throw ConfigurationError(description: "maxResponseBytes: must be positive")
        }
    }
}
