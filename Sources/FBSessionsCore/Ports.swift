import Foundation

/// Storage for apps. Implemented over PostgreSQL in FBSessionsStorage and in memory for unit tests.
public protocol AppStore: Sendable {
    /// Adds an app; its secret is encrypted with the key ring before it is stored.
    /// - Throws: ``ServiceError/appExists(_:)`` when the name is taken.
    func addApp(_ draft: AppDraft) async throws -> App
    /// Every app, by name.
    func apps() async throws -> [App]
    /// The app with this name, if any.
    func app(named name: String) async throws -> App?
    /// The decrypted app secret.
    func secret(ofApp appID: String) async throws -> String
    /// Sets (or, with nil, clears) the app's Graph API version; returns the app as it now is.
    /// - Throws: ``ServiceError/unknownApp(_:)`` when no app has this name.
    func setGraphVersion(_ version: String?, ofAppNamed name: String) async throws -> App
    /// Remembers what Facebook's latest answer to the app with this Facebook app id named in its
    /// `facebook-api-version` header; an answer older than the one stored is ignored.
    func recordServedGraphVersion(_ served: ServedGraphVersion, facebookAppID: String) async throws
    /// The app's own Graph version (nil: the service default) and the latest served version recorded, read now.
    func graphVersions(ofApp appID: String) async throws -> (requested: String?, served: ServedGraphVersion?)
}

/// What one of Facebook's answers to an app said about the version: the version asked for, the one named in
/// the answer's `facebook-api-version` header, and when.
public struct ServedGraphVersion: Sendable, Equatable {
    /// The version in the call's path.
    public var requested: String
    /// The version that answered.
    public var served: String
    /// When the answer came.
    public var at: Date

    /// Creates a record.
    public init(requested: String, served: String, at: Date) {
        self.requested = requested
        self.served = served
        self.at = at
    }
}

/// What an operator gives to add an app.
public struct AppDraft: Sendable {
    /// The unique name.
    public var name: String
    /// The Facebook app id.
    public var facebookAppID: String
    /// The Facebook app secret (encrypted at rest).
    public var secret: String
    /// Allowed redirect URIs.
    public var redirectURIs: [String]
    /// Required permissions.
    public var requiredPermissions: [String]
    /// The app's Graph API version; nil uses `FBS_GRAPH_VERSION`.
    public var graphVersion: String?

    /// Creates a draft.
    public init(
        name: String, facebookAppID: String, secret: String, redirectURIs: [String], requiredPermissions: [String],
        graphVersion: String? = nil
    ) {
        self.name = name
        self.facebookAppID = facebookAppID
        self.secret = secret
        self.redirectURIs = redirectURIs
        self.requiredPermissions = requiredPermissions
        self.graphVersion = graphVersion
    }
}

/// Storage for API keys.
public protocol KeyStore: Sendable {
    /// Makes a key for the app; returns it with its text, which is never stored and cannot be shown again.
    func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String)
    /// Every key, optionally of one app, without secrets.
    func keys(appID: String?) async throws -> [APIKey]
    /// Revokes a key; false when no such key exists.
    func revokeKey(id: String) async throws -> Bool
    /// Makes a key with a rate limit in requests per second (nil: none). Default: a key without a limit, then
    /// ``setRateLimit(_:keyID:)``.
    func addKey(appID: String, scopes: [Scope], rateLimit: Int?) async throws -> (key: APIKey, text: String)
    /// Sets or clears (nil) a key's rate limit; the key as it is now, or nil when no such key exists.
    func setRateLimit(_ rateLimit: Int?, keyID: String) async throws -> APIKey?
    /// The app and key a presented bearer key belongs to, or nil when it is unknown, revoked or wrong. Always
    /// checks the database.
    func authenticate(_ presented: String) async throws -> Principal?
    /// Like ``authenticate(_:)``, but may answer from a cache; then ``KeyLookup/isConfirmed`` is false and the
    /// caller must confirm the key's liveness before serving the request. Default: ``authenticate(_:)``.
    func lookup(_ presented: String) async throws -> KeyLookup?
    /// Whether the key exists and is not revoked, read from the database now.
    func isLive(keyID: String) async throws -> Bool
    /// Drops whatever is cached about a key found dead. Default: nothing.
    func forget(keyID: String)
    /// Counts the changes to what ``lookup(_:)`` answers from a cache: a lookup made before the count moved may
    /// have answered what is no longer cached (a key whose rate limit changed). Default: 0 (nothing cached).
    var generation: UInt64 { get }
}

extension KeyStore {
    public func addKey(appID: String, scopes: [Scope], rateLimit: Int?) async throws -> (key: APIKey, text: String) {
        let made = try await addKey(appID: appID, scopes: scopes)
        guard let rateLimit else { return made }
        guard let key = try await setRateLimit(rateLimit, keyID: made.key.id) else { return made }
        return (key, made.text)
    }

    public func lookup(_ presented: String) async throws -> KeyLookup? {
        try await authenticate(presented).map { KeyLookup(principal: $0, isConfirmed: true) }
    }

    public func isLive(keyID: String) async throws -> Bool {
        try await keys(appID: nil).contains { $0.id == keyID && $0.revokedAt == nil }
    }

    public func forget(keyID: String) {}

    public var generation: UInt64 { 0 }
}

/// Who is calling: an unrevoked key and its app.
///
/// A class: a principal travels with every request through several contexts, and a copy of a struct of the key and
/// the app retained each of their strings (measured on the cached routes' path); a class instance is one retain.
public final class Principal: Sendable, Equatable {
    /// The key used.
    public let key: APIKey
    /// Its app.
    public let app: App

    /// Creates a principal.
    public init(key: APIKey, app: App) {
        self.key = key
        self.app = app
    }

    /// Whether the key has `scope`.
    public func allows(_ scope: Scope) -> Bool { key.scopes.contains(scope) }

    public static func == (lhs: Principal, rhs: Principal) -> Bool {
        lhs.key == rhs.key && lhs.app == rhs.app
    }
}

/// Whether the service can serve: the database answers and its schema is current.
public protocol ReadinessProbe: Sendable {
    /// Checks now.
    func readiness() async -> Readiness
}

/// The result of a readiness check.
public struct Readiness: Sendable, Equatable {
    /// The database answered.
    public let databaseReachable: Bool
    /// Every migration the binary knows is applied, and no unknown one is.
    public let migrationsCurrent: Bool

    /// Creates a result.
    public init(databaseReachable: Bool, migrationsCurrent: Bool) {
        self.databaseReachable = databaseReachable
        self.migrationsCurrent = migrationsCurrent
    }

    /// Ready to serve.
    public var isReady: Bool { databaseReachable && migrationsCurrent }
}
