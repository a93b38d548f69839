import FBSessionsCore
import FBSessionsService
import Foundation
import Support

/// In-memory ports for route-level tests (the domain's and the routes' tests). The PostgreSQL stores are tested
/// against a real database elsewhere.
public final class InMemoryKeyStore: KeyStore, Sendable {
    private struct State {
        var stored: [String: (key: APIKey, hash: [UInt8])] = [:]
        var available = true
    }

    private let state = Locked(State())
    /// The app every key belongs to.
    public let app = App(
        id: "app_test", name: "test", facebookAppID: "1", redirectURIs: [], requiredPermissions: [], createdAt: Date())

    public init() {}

    /// Whether the store answers; false throws `databaseUnavailable` from ``authenticate(_:)``.
    public var available: Bool {
        get { state.withLock { $0.available } }
        set { state.withLock { $0.available = newValue } }
    }

    public func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        let made = APIKeyText.generate()
        let key = APIKey(id: made.id, appID: appID, scopes: scopes, createdAt: Date(), revokedAt: nil)
        state.withLock { $0.stored[made.id] = (key, made.hash) }
        return (key, SecretsTranscript.noted("api key", made.key))
    }

    public func addKey(appID: String, scopes: [Scope], rateLimit: Int?) async throws -> (key: APIKey, text: String) {
        let made = APIKeyText.generate()
        let key = APIKey(
            id: made.id, appID: appID, scopes: scopes, createdAt: Date(), revokedAt: nil, rateLimit: rateLimit)
        state.withLock { $0.stored[made.id] = (key, made.hash) }
        return (key, SecretsTranscript.noted("api key", made.key))
    }

    public func keys(appID: String?) async throws -> [APIKey] {
        state.withLock { $0.stored.values.map(\.key).filter { appID == nil || $0.appID == appID } }
    }

    public func setRateLimit(_ rateLimit: Int?, keyID: String) async throws -> APIKey? {
        state.withLock { state in
            guard let entry = state.stored[keyID] else { return nil }
            let key = entry.key
            let changed = APIKey(
                id: key.id, appID: key.appID, scopes: key.scopes, createdAt: key.createdAt, revokedAt: key.revokedAt,
                rateLimit: rateLimit)
            state.stored[keyID] = (changed, entry.hash)
            return changed
        }
    }

    public func revokeKey(id: String) async throws -> Bool {
        state.withLock { state in
            guard let entry = state.stored[id] else { return false }
            let key = entry.key
            state.stored[id] = (
                APIKey(
                    id: id, appID: key.appID, scopes: key.scopes, createdAt: key.createdAt, revokedAt: Date(),
                    rateLimit: key.rateLimit),
                entry.hash
            )
            return true
        }
    }

    public func authenticate(_ presented: String) async throws -> Principal? {
        guard available else { throw ServiceError.databaseUnavailable }
        return principal(presented)
    }

    /// The key's principal if it is stored, unrevoked and matches, with no waiting.
    public func principal(_ presented: String) -> Principal? {
        guard let id = APIKeyText.id(in: presented), let entry = state.withLock({ $0.stored[id] }), entry.key.revokedAt == nil,
            APIKeyText.matches(presented, hash: entry.hash)
        else { return nil }
        return Principal(key: entry.key, app: app)
    }
}

public struct FixedReadiness: ReadinessProbe {
    public var state = Readiness(databaseReachable: true, migrationsCurrent: true)
    public init() {}
    public func readiness() async -> Readiness { state }
}

public struct UnusedAppStore: AppStore {
    public init() {}
    public func addApp(_ draft: AppDraft) async throws -> App { throw ServiceError.databaseUnavailable }
    public func apps() async throws -> [App] { [] }
    public func app(named name: String) async throws -> App? { nil }
    public func secret(ofApp appID: String) async throws -> String { throw ServiceError.unknownApp(appID) }
    public func setGraphVersion(_ version: String?, ofAppNamed name: String) async throws -> App {
        throw ServiceError.databaseUnavailable
    }
    public func recordServedGraphVersion(_ served: ServedGraphVersion, facebookAppID: String) async throws {}
    /// No version of its own and nothing served: `GET /v1/app` shows the default.
    public func graphVersions(ofApp appID: String) async throws -> (requested: String?, served: ServedGraphVersion?) {
        (nil, nil)
    }
}

/// A session store for route-level tests of routes that never reach it.
public struct UnusedSessionStore: SessionStore {
    public init() {}
    public func storeLogin(_ login: LoginRecord) async throws -> StoredLogin { throw ServiceError.databaseUnavailable }
    public func storeRefresh(_ refresh: RefreshRecord) async throws -> Session { throw ServiceError.databaseUnavailable }
    public func session(id: String, appID: String) async throws -> Session? { throw ServiceError.databaseUnavailable }
    public func sessions(owner: String, appID: String) async throws -> [Session] { throw ServiceError.databaseUnavailable }
    public func sessionWithToken(id: String, appID: String) async throws -> (session: Session, token: String)? {
        throw ServiceError.databaseUnavailable
    }
    public func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool) async throws
        -> (session: Session, closedNow: Bool)?
    { throw ServiceError.databaseUnavailable }
    public func completeRevocation(sessionID: String, appID: String, confirmed: Bool) async throws {
        throw ServiceError.databaseUnavailable
    }
    public func revocation(sessionID: String, appID: String) async throws -> SessionService.Revocation {
        throw ServiceError.databaseUnavailable
    }
    public func closeAll(owner: String, appID: String, reason: ClosedReason) async throws -> [Session] {
        throw ServiceError.databaseUnavailable
    }
    public func activate(sessionID: String, owner: String, appID: String) async throws -> Session {
        throw ServiceError.databaseUnavailable
    }
    public func claimValidation(id: String, appID: String, staleAfter: Double, lease: Double) async throws -> ValidationClaim {
        throw ServiceError.databaseUnavailable
    }
    public func finishValidation(id: String, appID: String, result: ValidationResult) async throws -> Session? {
        throw ServiceError.databaseUnavailable
    }
}

/// A Graph API for route-level tests of routes that never reach it.
public struct UnusedGraph: GraphAPI {
    public init() {}
    public func debugToken(inputToken: String, credentials: GraphCredentials) async throws -> GraphTokenInfo {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func me(fields: [String], accessToken: String, credentials: GraphCredentials) async throws -> GraphProfile {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func permissions(accessToken: String, credentials: GraphCredentials) async throws -> GraphPermissions {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func revokePermissions(accessToken: String, credentials: GraphCredentials) async throws {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func exchangeCode(code: String, redirectURI: String, credentials: GraphCredentials) async throws -> GraphTokenGrant {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func exchangeForLongLivedToken(accessToken: String, credentials: GraphCredentials) async throws -> GraphTokenGrant {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func pictureURL(size: GraphPictureSize, accessToken: String, credentials: GraphCredentials) async throws -> GraphPicture {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    public func get(path: String, query: [(name: String, value: String)], authentication: GraphAuthentication,
             credentials: GraphCredentials) async throws -> [UInt8] {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
}

extension ServiceRoutes {
    /// The routes on in-memory ports, for route tests: `keys` authenticate, and no route reaches a store (those that
    /// would answer 503, see ``Services``).
    ///
    /// - Parameters:
    ///   - keys: The API keys.
    ///   - metrics: Where the routes count.
    ///   - configure: Swaps parts (the served documents, extra routes, the loggers).
    public static func inMemory(
        keys: InMemoryKeyStore = InMemoryKeyStore(), metrics: MetricsRegistry = MetricsRegistry(),
        configure: (inout ServiceParts) -> Void = { _ in }
    ) throws -> ServiceRoutes {
        var parts = try ServiceParts.test()
        configure(&parts)
        let ports = ServicePorts(
            apps: UnusedAppStore(), keys: keys, readiness: FixedReadiness(), sessionStore: UnusedSessionStore(),
            graph: UnusedGraph())
        return ServiceRoutes(parts, ports: ports, metrics: metrics)
    }
}

extension SessionService {
    /// A service for unit tests that never reach sessions.
    public static func unused() -> SessionService {
        SessionService(
            store: UnusedSessionStore(), graph: UnusedGraph(), apps: UnusedAppStore(),
            policy: .init(validateTTL: 300, refreshAfter: 86_400, maxSlots: 8, graphVersion: nil, graphTimeout: 10))
    }
}
