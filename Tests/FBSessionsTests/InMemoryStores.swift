import FBSessionsCore
import FBSessionsService
import Foundation
import Support
import TestSupport

/// In-memory ports for route-level tests. The PostgreSQL stores are tested against a real database elsewhere.
final class InMemoryKeyStore: KeyStore, Sendable {
    private struct State {
        var stored: [String: (key: APIKey, hash: [UInt8])] = [:]
        var available = true
    }

    private let state = Locked(State())
    let app = App(
        id: "app_test", name: "test", facebookAppID: "1", redirectURIs: [], requiredPermissions: [], createdAt: Date())
    /// Whether the store answers; false makes `authenticate` fail as an unreachable database does.
    var available: Bool {
        get { state.withLock { $0.available } }
        set { state.withLock { $0.available = newValue } }
    }

    func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        let made = APIKeyText.generate()
        let key = APIKey(id: made.id, appID: appID, scopes: scopes, createdAt: Date(), revokedAt: nil)
        state.withLock { $0.stored[made.id] = (key, made.hash) }
        return (key, SecretsTranscript.noted("api key", made.key))
    }

    func keys(appID: String?) async throws -> [APIKey] {
        state.withLock { $0.stored.values.map(\.key).filter { appID == nil || $0.appID == appID } }
    }

    func revokeKey(id: String) async throws -> Bool {
        state.withLock { state in
            guard let entry = state.stored[id] else { return false }
            state.stored[id] = (APIKey(id: id, appID: entry.key.appID, scopes: entry.key.scopes, createdAt: entry.key.createdAt, revokedAt: Date()), entry.hash)
            return true
        }
    }

    func authenticate(_ presented: String) async throws -> Principal? {
        guard available else { throw ServiceError.databaseUnavailable }
        return principal(presented)
    }

    /// The key's principal if it is stored, unrevoked and matches, with no waiting.
    func principal(_ presented: String) -> Principal? {
        guard let id = APIKeyText.id(in: presented), let entry = state.withLock({ $0.stored[id] }), entry.key.revokedAt == nil,
            APIKeyText.matches(presented, hash: entry.hash)
        else { return nil }
        return Principal(key: entry.key, app: app)
    }
}

struct FixedReadiness: ReadinessProbe {
    var state = Readiness(databaseReachable: true, migrationsCurrent: true)
    func readiness() async -> Readiness { state }
}

struct UnusedAppStore: AppStore {
    func addApp(_ draft: AppDraft) async throws -> App { throw ServiceError.databaseUnavailable }
    func apps() async throws -> [App] { [] }
    func app(named name: String) async throws -> App? { nil }
    func secret(ofApp appID: String) async throws -> String { throw ServiceError.unknownApp(appID) }
    func setGraphVersion(_ version: String?, ofAppNamed name: String) async throws -> App {
        throw ServiceError.databaseUnavailable
    }
    func recordServedGraphVersion(_ served: ServedGraphVersion, facebookAppID: String) async throws {}
    /// No version of its own and nothing served: `GET /v1/app` shows the default.
    func graphVersions(ofApp appID: String) async throws -> (requested: String?, served: ServedGraphVersion?) {
        (nil, nil)
    }
}

/// A session store for route-level tests of routes that never reach it.
struct UnusedSessionStore: SessionStore {
    func storeLogin(_ login: LoginRecord) async throws -> StoredLogin { throw ServiceError.databaseUnavailable }
    func storeRefresh(_ refresh: RefreshRecord) async throws -> Session { throw ServiceError.databaseUnavailable }
    func session(id: String, appID: String) async throws -> Session? { throw ServiceError.databaseUnavailable }
    func sessions(owner: String, appID: String) async throws -> [Session] { throw ServiceError.databaseUnavailable }
    func sessionWithToken(id: String, appID: String) async throws -> (session: Session, token: String)? {
        throw ServiceError.databaseUnavailable
    }
    func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool) async throws
        -> (session: Session, closedNow: Bool)?
    { throw ServiceError.databaseUnavailable }
    func completeRevocation(sessionID: String, appID: String, confirmed: Bool) async throws {
        throw ServiceError.databaseUnavailable
    }
    func revocation(sessionID: String, appID: String) async throws -> SessionService.Revocation {
        throw ServiceError.databaseUnavailable
    }
    func closeAll(owner: String, appID: String, reason: ClosedReason) async throws -> [Session] {
        throw ServiceError.databaseUnavailable
    }
    func activate(sessionID: String, owner: String, appID: String) async throws -> Session {
        throw ServiceError.databaseUnavailable
    }
    func claimValidation(id: String, appID: String, staleAfter: Double, lease: Double) async throws -> ValidationClaim {
        throw ServiceError.databaseUnavailable
    }
    func finishValidation(id: String, appID: String, result: ValidationResult) async throws -> Session? {
        throw ServiceError.databaseUnavailable
    }
}

/// A Graph API for route-level tests of routes that never reach it.
struct UnusedGraph: GraphAPI {
    func debugToken(inputToken: String, credentials: GraphCredentials) async throws -> GraphTokenInfo {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func me(fields: [String], accessToken: String, credentials: GraphCredentials) async throws -> GraphProfile {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func permissions(accessToken: String, credentials: GraphCredentials) async throws -> GraphPermissions {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func revokePermissions(accessToken: String, credentials: GraphCredentials) async throws {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func exchangeCode(code: String, redirectURI: String, credentials: GraphCredentials) async throws -> GraphTokenGrant {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func exchangeForLongLivedToken(accessToken: String, credentials: GraphCredentials) async throws -> GraphTokenGrant {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func pictureURL(size: GraphPictureSize, accessToken: String, credentials: GraphCredentials) async throws -> GraphPicture {
        throw GraphError.transient(GraphTransientFailure(.unavailable))
    }
    func get(path: String, query: [(name: String, value: String)], authentication: GraphAuthentication,
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
    static func inMemory(
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
    static func unused() -> SessionService {
        SessionService(
            store: UnusedSessionStore(), graph: UnusedGraph(), apps: UnusedAppStore(),
            policy: .init(validateTTL: 300, refreshAfter: 86_400, maxSlots: 8, graphVersion: nil, graphTimeout: 10))
    }
}
