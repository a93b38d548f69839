import Foundation
import Support

/// Coalesces concurrent calls with the same key into one: the first caller runs the work, the others await its
/// result. Process-local; across instances the store's lease does the same job.
public final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let running = Locked<[Key: Task<Value, any Error>]>([:])

    /// Creates an empty group.
    public init() {}

    /// Runs `work` unless a call with `key` is in flight, in which case it awaits that call's result.
    public func run(key: Key, _ work: @escaping @Sendable () async throws -> Value) async throws -> Value {
        let task: Task<Value, any Error> = running.withLock { running in
            if let existing = running[key] { return existing }
            let task = Task { try await work() }
            running[key] = task
            return task
        }
        defer {
            running.withLock { running in
                if running[key] == task { running[key] = nil }
            }
        }
        return try await task.value
    }
}

/// App credentials for Graph, with the secret decrypted once per app and kept in memory. The version is the app's
/// own (`app add|update --graph-version`), else `version` (`FBS_GRAPH_VERSION`; nil leaves it to the client).
final class CredentialCache: Sendable {
    private let apps: any AppStore
    private let version: String?
    private let secrets = Locked<[String: String]>([:])

    init(apps: any AppStore, version: String?) {
        self.apps = apps
        self.version = version
    }

    func credentials(for app: App) async throws -> GraphCredentials {
        if let secret = secrets.withLock({ $0[app.id] }) {
            return GraphCredentials(appID: app.facebookAppID, appSecret: secret, version: app.graphVersion ?? version)
        }
        let secret = try await apps.secret(ofApp: app.id)
        secrets.withLock { $0[app.id] = secret }
        return GraphCredentials(appID: app.facebookAppID, appSecret: secret, version: app.graphVersion ?? version)
    }
}
