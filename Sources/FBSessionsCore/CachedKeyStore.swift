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
/// revocation committed, on every instance. What is cached never changes for a key's
/// lifetime (a key's app and scopes are fixed; apps are never edited), so there is nothing else to go stale;
/// `ttl` only bounds how long an unused entry stays.
///
/// Entries are keyed by the SHA-256 of the presented key, never the key itself. Unknown or wrong keys are never
/// cached. Each thread's ``Memo`` holds the text of the last key that thread found, in memory only (as the
/// connection's own buffers hold the request), until another key replaces it or the thread ends. The cache is
/// bounded: when full, it is emptied (a burst of distinct valid keys only costs lookups).
public final class CachedKeyStore: KeyStore, @unchecked Sendable {
    private let base: any KeyStore
    private let ttl: Double
    private let capacity: Int
    private let lock = NSLock()
    private var entries: [[UInt8]: (principal: Principal, expires: Date)] = [:]
    /// Counts the changes to `entries` (under the lock): a thread's ``Memo`` is good only while it has not moved.
    private let changes = Atomic<UInt64>(0)
    /// Tells this store's memos from another store's on the same thread.
    private let serial = CachedKeyStore.lastSerial.add(1, ordering: .relaxed).newValue
    private static let lastSerial = Atomic<UInt64>(0)

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
            change { entries[digest] = nil }
            return nil
        }
        if ttl > 0 {
            change {
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

    public func cachedPrincipal(_ presented: String) -> Principal? {
        let now = Date()
        let memo = Memo.onThisThread
        // Read before the search: a change after this reading leaves the memo made below already out of date.
        let changes = self.changes.load(ordering: .acquiring)
        if memo.store == serial, memo.changes == changes, memo.expires > now, memo.presented == presented {
            return memo.principal
        }
        let digest = SHA256.hash(presented)
        guard let hit = lock.withLock({ entries[digest] }), hit.expires > now else { return nil }
        memo.remember(presented, hit.principal, expires: hit.expires, store: serial, changes: changes)
        return hit.principal
    }

    /// Changes `entries` under the lock, and counts the change so that every thread's ``Memo`` is dropped.
    private func change(_ body: () -> Void) {
        lock.withLock {
            body()
            changes.add(1, ordering: .releasing)
        }
    }

    /// The key the calling thread last found a principal for, and that principal: a keep-alive connection presents
    /// the same key on every request, and an event loop serves its connections in turn, so most requests present
    /// the key their thread saw last. Comparing the text costs less than digesting it and searching under the
    /// lock (`perf`: a tenth of a cached status's routing work). It holds what the entry held (app and scopes,
    /// fixed for a key's life) and is good only while its store's entries have not changed since: a revocation
    /// forgets the key's entry, which drops every thread's memo. Liveness is never taken from it (the router
    /// confirms it after the fence, as for any cached principal).
    private final class Memo {
        var store: UInt64 = 0
        var changes: UInt64 = 0
        var presented = ""
        var principal: Principal?
        var expires = Date.distantPast

        func remember(_ presented: String, _ principal: Principal, expires: Date, store: UInt64, changes: UInt64) {
            self.presented = presented
            self.principal = principal
            self.expires = expires
            self.store = store
            self.changes = changes
        }

        /// The calling thread's memo, made on first use and released when the thread ends.
        static var onThisThread: Memo { memos.value }

        private static let memos = PerThread { Memo() }
    }

    public var fence: (any RequestFence)? { base.fence }

    public func knownLive(keyID: String, pass: FencePass) -> Bool {
        base.knownLive(keyID: keyID, pass: pass)
    }

    public func isLive(keyID: String) async throws -> Bool {
        let live = try await base.isLive(keyID: keyID)
        if !live { forget(keyID: keyID) }
        return live
    }

    public func forget(keyID: String) {
        change { entries = entries.filter { $0.value.principal.key.id != keyID } }
    }

    public func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        try await base.addKey(appID: appID, scopes: scopes)
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
