import FBSessionsCore
import Foundation
import Postgres

/// ``KeyStore`` over PostgreSQL: keys are stored as SHA-256 hashes; a presented key is found by the id inside it
/// (one primary-key lookup joined with its app) and its hash compared in constant time.
///
/// A key's liveness (``isLive(keyID:)``, asked by every request whose key's app and scopes came from
/// ``CachedKeyStore``) comes from the exact cache when it can answer, else from a statement batched with other
/// requests' checks.
public struct PostgresKeyStore: KeyStore {
    private let database: Database
    private let cache: ExactCache?
    private let liveness: ReadBatcher<String, Bool>

    /// Creates the store.
    ///
    /// - Parameter cache: The exact cache that remembers live keys (nil: every check reads the database).
    public init(database: Database, cache: ExactCache? = nil) {
        self.database = database
        self.cache = cache
        liveness = ReadBatcher(database: database, fetch: Self.fetchLiveness)
    }

    public func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        try await addKey(appID: appID, scopes: scopes, rateLimit: nil)
    }

    public func addKey(appID: String, scopes: [Scope], rateLimit: Int?) async throws -> (key: APIKey, text: String) {
        let made = APIKeyText.generate()
        let names = scopes.map(\.rawValue)
        let key = try await database.run { connection in
            let rows = try connection.query(
                """
                INSERT INTO api_keys (id, app_id, key_hash, scopes, rate_limit)
                VALUES (\(made.id), \(appID), \(made.hash), \(names), \(rateLimit))
                RETURNING id, app_id, scopes, created_at, revoked_at, rate_limit
                """)
            guard let row = rows.first else { throw ServiceError.unknownApp(appID) }
            return try Self.key(from: row)
        }
        return (key, made.key)
    }

    public func keys(appID: String?) async throws -> [APIKey] {
        try await database.run { connection in
            try connection.query(
                """
                SELECT id, app_id, scopes, created_at, revoked_at, rate_limit FROM api_keys
                WHERE \(appID)::text IS NULL OR app_id = \(appID) ORDER BY created_at, id
                """
            ).map(Self.key)
        }
    }

    public func revokeKey(id: String) async throws -> Bool {
        try await database.run { connection in
            try connection.execute(
                "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = \(id)") > 0
        }
    }

    /// One UPDATE: the trigger of migration 0008 announces it (`k<id>`), so every instance's exact cache, and the
    /// key cache wired to it, forgets the key before it answers a request that arrived after the commit.
    public func setRateLimit(_ rateLimit: Int?, keyID: String) async throws -> APIKey? {
        try await database.run { connection in
            try connection.query(
                """
                UPDATE api_keys SET rate_limit = \(rateLimit) WHERE id = \(keyID)
                RETURNING id, app_id, scopes, created_at, revoked_at, rate_limit
                """
            ).first.map(Self.key)
        }
    }

    public func authenticate(_ presented: String) async throws -> Principal? {
        guard let id = APIKeyText.id(in: presented) else { return nil }
        let found: (Principal, [UInt8])? = try await database.run { connection in
            let rows = try connection.query(
                """
                SELECT k.id AS key_id, k.key_hash, k.scopes, k.created_at AS key_created_at, k.rate_limit,
                    \(unsafeSQL: AppRow.columns)
                FROM api_keys k JOIN apps a ON a.id = k.app_id
                WHERE k.id = \(id) AND k.revoked_at IS NULL
                """)
            guard let row = rows.first else { return nil }
            let app = try AppRow.app(from: row)
            let key = APIKey(
                id: try row.decode("key_id"), appID: app.id, scopes: Self.scopes(try row.decode("scopes")),
                createdAt: try row.decode("key_created_at"), revokedAt: nil,
                rateLimit: try row.decode("rate_limit", as: Int?.self))
            return (Principal(key: key, app: app), try row.decode("key_hash", as: [UInt8].self))
        }
        guard let (principal, hash) = found, APIKeyText.matches(presented, hash: hash) else { return nil }
        return principal
    }

    /// - Throws: ``ServiceError/databaseUnavailable`` when the database fails, and also when the statement, which
    ///   always returns one row per key, returned none for this one: an answer the database did not give is never
    ///   read as "revoked".
    public func isLive(keyID: String) async throws -> Bool {
        guard let cache else { return try await liveness.load(keyID) }
        return try await cache.read(
            ExactCache.liveKeyKey(keyID), cached: { cache.isLiveKey(keyID) ? true : nil },
            load: { try await liveness.load(keyID) },
            fill: { live, mark in if live { cache.fillLiveKey(keyID, since: mark) } })
    }

    static func fetchLiveness(_ connection: PostgresConnection, _ keyIDs: [String]) throws -> [Result<Bool, any Error>] {
        let rows = try connection.query(
            """
            SELECT r.i AS batch_index, EXISTS (SELECT 1 FROM api_keys k WHERE k.id = r.key_id AND k.revoked_at IS NULL) AS live
            FROM unnest(\(keyIDs)::text[]) WITH ORDINALITY AS r(key_id, i)
            """)
        return BatchAnswers.byIndex(rows, count: keyIDs.count) { _, row in try row.decode("live", as: Bool.self) }
    }

    private static func key(from row: PostgresRow) throws -> APIKey {
        APIKey(
            id: try row.decode("id"), appID: try row.decode("app_id"), scopes: scopes(try row.decode("scopes")),
            createdAt: try row.decode("created_at"), revokedAt: try row.decode("revoked_at", as: Date?.self),
            rateLimit: try row.decode("rate_limit", as: Int?.self))
    }

    private static func scopes(_ names: [String]) -> [Scope] {
        names.compactMap(Scope.init(rawValue:))
    }
}
