import FBSessionsCore
import FBSessionsGraph
import Foundation
import Support
import TestSupport

/// Credentials and secrets shared by the tests.
enum Fixture {
    static let appID = "1234567890"
    static let appSecret = "app-secret-42"
    static let userToken = "EAAGm0PX4ZCpsBAUserToken123"
    /// HMAC-SHA256(key "app-secret-42", "EAAGm0PX4ZCpsBAUserToken123"), computed independently with
    /// `printf %s TOKEN | openssl dgst -sha256 -hmac SECRET`.
    static let userTokenProof = "6daf07bdeff281fe383a618c8ca864961a5112b084714043a99a57e12bf38d54"
    static let code = "AQDcodeSingleUse987"
    static let credentials = GraphCredentials(appID: appID, appSecret: appSecret, version: "v21.0")
    /// Every secret a test call carries; none may appear in an error or a log line.
    static let secrets = [
        userToken, appSecret, userTokenProof, code, "\(appID)|\(appSecret)", "\(appID)%7C\(appSecret)",
    ]

    /// Fast retries so tests do not wait.
    static let fastRetry = GraphClient.RetryPolicy(
        maxAttempts: 3, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20), jitter: 0.5
    )
}

/// Runs `body` with a `ScriptedPeer` and a `GraphClient` pointed at it; stops both afterwards.
func withGraphPeer<Result>(
    retry: GraphClient.RetryPolicy = Fixture.fastRetry,
    timeout: Duration = .seconds(5),
    attemptTimeout: Duration? = nil,
    maxResponseBytes: Int = 1 << 20,
    logger: Logger = SecretsTranscript.logger("test.graph", level: .error),
    servedVersions: (@Sendable (String, String, String) -> Void)? = nil,
    _ script: @escaping @Sendable (PeerRequest) -> PeerAction,
    _ body: (ScriptedPeer, GraphClient) async throws -> Result
) async throws -> Result {
    let peer = try ScriptedPeer(script)
    defer { peer.stop() }
    let client = try GraphClient(
        configuration: GraphClient.Configuration(
            baseURL: peer.baseURL, defaultVersion: "v21.0", timeout: timeout, attemptTimeout: attemptTimeout,
            maxResponseBytes: maxResponseBytes, retry: retry, allowsPlainHTTP: true
        ),
        logger: logger, servedVersions: servedVersions
    )
    defer { client.shutdown() }
    return try await body(peer, client)
}

/// A JSON answer, with Graph's content type and optional extra headers.
func json(_ status: Int, _ body: String, headers: [(String, String)] = []) -> PeerAction {
    .respond(
        status: status, headers: [("Content-Type", "application/json; charset=UTF-8")] + headers,
        body: Array(body.utf8)
    )
}

/// Plays `actions` in order, one per request, then repeats the last one; remembers every request.
final class PeerScript: Sendable {
    private let actions: [PeerAction]
    private let seen = Locked<[PeerRequest]>([])

    init(_ actions: [PeerAction]) {
        precondition(!actions.isEmpty, "a script needs at least one action")
        self.actions = actions
    }

    /// The action for the next request.
    func next(_ request: PeerRequest) -> PeerAction {
        seen.withLock { seen in
            seen.append(request)
            return actions[min(seen.count - 1, actions.count - 1)]
        }
    }

    /// Every request so far.
    var requests: [PeerRequest] { seen.withLock { $0 } }
}

extension PeerRequest {
    /// The path without its query.
    var route: String {
        String(path.prefix { $0 != "?" })
    }

    /// The query parameters, percent-decoded (the last value wins).
    var query: [String: String] {
        guard let mark = path.firstIndex(of: "?") else {
            return [:]
        }
        var items: [String: String] = [:]
        for pair in path[path.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]).removingPercentEncoding ?? String(parts[0])
            let value = parts.count > 1 ? (String(parts[1]).removingPercentEncoding ?? String(parts[1])) : ""
            items[name] = value
        }
        return items
    }
}

/// Every rendering of `value` a log line or error page could use.
func renderings(of value: Any) -> [String] {
    var dumped = ""
    dump(value, to: &dumped)
    var texts = [String(describing: value), String(reflecting: value), dumped]
    if let error = value as? any Error {
        texts.append(error.localizedDescription)
    }
    return texts
}

/// The first secret of `Fixture.secrets` (or `extra`) that appears in any rendering of `value`.
func leakedSecret(in value: Any, extra: [String] = []) -> String? {
    for text in renderings(of: value) {
        for secret in Fixture.secrets + extra where text.contains(secret) {
            return secret
        }
    }
    return nil
}

/// A coarse label for a `GraphError`, for table-driven tests.
enum ErrorClass: Sendable, Equatable, CustomStringConvertible {
    case invalidToken(ClosedReason)
    case dataAccessExpired
    case permissionMissing
    case rateLimited
    case transient(GraphTransientFailure.Kind)
    case other

    init(_ error: GraphError) {
        switch error {
        case .invalidToken(let reason, _): self = .invalidToken(reason)
        case .dataAccessExpired: self = .dataAccessExpired
        case .permissionMissing: self = .permissionMissing
        case .rateLimited: self = .rateLimited
        case .transient(let failure): self = .transient(failure.kind)
        case .other: self = .other
        }
    }

    var description: String {
        switch self {
        case .invalidToken(let reason): "invalidToken(\(reason.rawValue))"
        case .dataAccessExpired: "dataAccessExpired"
        case .permissionMissing: "permissionMissing"
        case .rateLimited: "rateLimited"
        case .transient(let kind): "transient(\(kind.rawValue))"
        case .other: "other"
        }
    }
}

/// Runs `call` and returns the `GraphError` it throws (or `nil` when it succeeds or throws something else).
func graphError<T>(_ call: () async throws -> T) async -> GraphError? {
    do {
        _ = try await call()
        return nil
    } catch let error as GraphError {
        return error
    } catch {
        return nil
    }
}
