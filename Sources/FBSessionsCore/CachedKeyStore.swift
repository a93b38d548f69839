import Crypto
import Foundation

/// A ``KeyStore`` that remembers successful authentications for a few seconds, so that a busy backend's requests
/// cost no database round trip for the key check. A revoked key stops working within `ttl` seconds (on every
/// instance); unknown or wrong keys are never cached, so they always reach the database.
///
/// Entries are keyed by the SHA-256 of the presented key, never the key itself. The cache is bounded: when
/// full, it is emptied (a burst of distinct valid keys only costs round trips, never memory).
public final class CachedKeyStore: KeyStore, @unchecked Sendable {
    private let base: any KeyStore
    private let ttl: Double
    private let capacity: Int
    private let lock = NSLock()
    private var entries: [[UInt8]: (principal: Principal, expires: Date)] = [:]

    /// Wraps a store.
    public init(_ base: any KeyStore, ttl: Double = 5, capacity: Int = 10_000) {
        self.base = base
        self.ttl = ttl
        self.capacity = capacity
    }

    public func authenticate(_ presented: String) async throws -> Principal? {
        let digest = SHA256.hash(presented)
        let now = Date()
        if let hit = lock.withLock({ entries[digest] }), hit.expires > now {
            return hit.principal
        }
        guard let principal = try await base.authenticate(presented) else {
            lock.withLock { entries[digest] = nil }
            return nil
        }
        lock.withLock {
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[digest] = (principal, now.addingTimeInterval(ttl))
        }
        return principal
    }

    public func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        try await base.addKey(appID: appID, scopes: scopes)
    }

    public func keys(appID: String?) async throws -> [APIKey] {
        try await base.keys(appID: appID)
    }

    /// Revokes at the store and forgets this process's cached entries for the key at once.
    public func revokeKey(id: String) async throws -> Bool {
        lock.withLock { entries = entries.filter { $0.value.principal.key.id != id } }
        return try await base.revokeKey(id: id)
    }
}
