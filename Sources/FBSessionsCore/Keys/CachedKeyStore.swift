import Crypto
import Foundation
import Support
import Synchronization

/// A ``KeyStore`` that remembers which app and scopes a presented key belongs to, so that a busy backend's
/// requests skip the key lookup (a join of `api_keys` and `apps` and a hash comparison), but never whether the key
/// is still live (docs/caching.md, "API keys").
///
/// ``lookup(_:)`` answers from the cache with ``KeyLookup/isConfirmed`` false; the router then asks the base
/// store's ``KeyStore/isLive(keyID:)`` before the handler runs, which the exact cache answers when it can (a
/// revocation committed anywhere is announced and drops its entry) and a batched statement otherwise. So a key
/// revoked on any instance, or with the CLI, is refused by the very next request that starts after the
/// revocation committed, on every instance. A key's app and scopes are fixed; its rate limit is not
/// (`key update --rate`): a change through this store forgets the key here, and the announcement of any change
/// makes every instance with an exact cache forget it too (``forget(keyID:)``, called by the service's wiring);
/// without an exact cache, another instance keeps the old limit for at most `ttl` (docs/api-contract.md, "Rate
/// limits"). An app's Graph version likewise reaches instances within `ttl`.
///
/// Entries are keyed by the SHA-256 of the presented key, never the key itself. Unknown or wrong keys are never
/// cached. The cache is bounded: when full, it is emptied (a burst of distinct valid keys only costs lookups).
public final class CachedKeyStore: KeyStore, Sendable {
    /// What is cached, by the SHA-256 of the presented key.
    private typealias Entries = [[UInt8]: (principal: Principal, expires: Date)]

    private let base: any KeyStore
    private let ttl: Double
    private let capacity: Int
    private let entries = Locked<Entries>([:])
    /// Counts the changes to `entries`, each counted under the lock after it was made: ``generation``. An atomic
    /// beside the lock rather than in it: the fast path reads ``generation`` on every request, without the lock.
    private let changes = Atomic<UInt64>(0)

    /// Wraps a store. `ttl` is how long an entry is kept after it was last filled (`FBS_KEY_CACHE_TTL`); 0 turns
    /// the cache off.
    public init(_ base: any KeyStore, ttl: Double = 300, capacity: Int = 10_000) {
        self.base = base
        self.ttl = ttl
        self.capacity = capacity
    }

    /// Always the full database check; fills the cache.
    public func authenticate(_ presented: String) async throws -> Principal? {
        let digest = SHA256.hash(presented)
        guard let principal = try await base.authenticate(presented) else {
            change { $0[digest] = nil }
            return nil
        }
        if ttl > 0 {
            change { entries in
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
                entries[digest] = (principal, Date().addingTimeInterval(ttl))
            }
        }
        return principal
    }

    /// The cached principal, unconfirmed, or else the full check (confirmed).
    public func lookup(_ presented: String) async throws -> KeyLookup? {
        if let principal = cachedPrincipal(presented) { return KeyLookup(principal: principal, isConfirmed: false) }
        return try await authenticate(presented).map { KeyLookup(principal: $0, isConfirmed: true) }
    }

    /// The cached principal of a presented key, unconfirmed, with no I/O; nil when not cached.
    public func cachedPrincipal(_ presented: String) -> Principal? {
        cached(presented)?.principal
    }

    /// The cached principal of a presented key and when its entry expires, with no I/O; nil when not cached.
    public func cached(_ presented: String) -> (principal: Principal, expires: Date)? {
        let digest = SHA256.hash(presented)
        guard let hit = entries.withLock({ $0[digest] }), hit.expires > Date() else { return nil }
        return hit
    }

    /// Counts the changes to the entries: what a caller remembered from ``cached(_:)`` holds while this has not
    /// moved since (an entry that was there is still there, with the same principal and expiry).
    public var generation: UInt64 { changes.load(ordering: .acquiring) }

    /// Changes `entries` under the lock, and counts the change (``generation``) before the lock is let go.
    private func change(_ body: (inout Entries) -> Void) {
        entries.withLock { entries in
            body(&entries)
            changes.add(1, ordering: .releasing)
        }
    }

    public func isLive(keyID: String) async throws -> Bool {
        let live = try await base.isLive(keyID: keyID)
        if !live { forget(keyID: keyID) }
        return live
    }

    public func forget(keyID: String) {
        change { entries in entries = entries.filter { $0.value.principal.key.id != keyID } }
    }

    /// Forgets every cached entry (what was announced is not known: every key may have changed).
    public func forgetAll() {
        change { entries in entries.removeAll() }
    }

    public func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        try await base.addKey(appID: appID, scopes: scopes)
    }

    public func addKey(appID: String, scopes: [Scope], rateLimit: Int?) async throws -> (key: APIKey, text: String) {
        try await base.addKey(appID: appID, scopes: scopes, rateLimit: rateLimit)
    }

    /// Changes the limit at the store and forgets this process's cached entries for the key, so that its next
    /// request reads the new limit.
    public func setRateLimit(_ rateLimit: Int?, keyID: String) async throws -> APIKey? {
        defer { forget(keyID: keyID) }
        return try await base.setRateLimit(rateLimit, keyID: keyID)
    }

    public func keys(appID: String?) async throws -> [APIKey] {
        try await base.keys(appID: appID)
    }

    /// Revokes at the store and forgets this process's cached entries for the key.
    public func revokeKey(id: String) async throws -> Bool {
        forget(keyID: id)
        return try await base.revokeKey(id: id)
    }
}
