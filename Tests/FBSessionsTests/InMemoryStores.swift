import FBSessionsCore
import Foundation

/// In-memory ports for route-level tests. The PostgreSQL stores are tested against a real database elsewhere.
final class InMemoryKeyStore: KeyStore, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String: (key: APIKey, hash: [UInt8])] = [:]
    let app = App(
        id: "app_test", name: "test", facebookAppID: "1", redirectURIs: [], requiredPermissions: [], createdAt: Date())
    var available = true

    func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        let made = APIKeyText.generate()
        let key = APIKey(id: made.id, appID: appID, scopes: scopes, createdAt: Date(), revokedAt: nil)
        lock.withLock { stored[made.id] = (key, made.hash) }
        return (key, made.key)
    }

    func keys(appID: String?) async throws -> [APIKey] {
        lock.withLock { stored.values.map(\.key).filter { appID == nil || $0.appID == appID } }
    }

    func revokeKey(id: String) async throws -> Bool {
        lock.withLock {
            guard let entry = stored[id] else { return false }
            stored[id] = (APIKey(id: id, appID: entry.key.appID, scopes: entry.key.scopes, createdAt: entry.key.createdAt, revokedAt: Date()), entry.hash)
            return true
        }
    }

    func authenticate(_ presented: String) async throws -> Principal? {
        guard lock.withLock({ available }) else { throw ServiceError.databaseUnavailable }
        guard let id = APIKeyText.id(in: presented), let entry = lock.withLock({ stored[id] }), entry.key.revokedAt == nil,
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
}
