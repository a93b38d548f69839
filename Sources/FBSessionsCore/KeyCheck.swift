import Foundation

/// A pending confirmation that the API key of the current request is still live (exists and is not revoked),
/// carried in a task-local so that the first database statement of the request can confirm it in the same round
/// trip as its data (docs/caching.md).
///
/// The router sets one when the key's app and scopes came from ``CachedKeyStore`` without a database check, for
/// the read-only routes that fold the check into their query. A store that folds the check calls ``confirm()``
/// when its statement saw the key live and throws ``ServiceError/keyRevoked`` when it did not. If nothing
/// confirmed it by the time the handler returns (the handler answered without touching the database, or a
/// statement that does not fold ran first), the router confirms with one query before it answers.
///
/// Thread safety: the flag is guarded by a lock; the task-local is read by async store methods before they hand
/// work to a pool thread.
public final class KeyCheck: @unchecked Sendable {
    /// The key to confirm.
    public let keyID: String
    private let lock = NSLock()
    private var done = false

    /// Creates an unconfirmed check.
    public init(keyID: String) {
        self.keyID = keyID
    }

    /// Whether a statement saw the key live.
    public var isConfirmed: Bool { lock.withLock { done } }

    /// Records that a statement of this request saw the key live.
    public func confirm() {
        lock.withLock { done = true }
    }

    /// The current request's pending check, if its key still needs confirming.
    @TaskLocal public static var current: KeyCheck?

    /// The key id a statement should confirm now: the current check's, unless already confirmed.
    public static var pendingKeyID: String? {
        guard let check = current, !check.isConfirmed else { return nil }
        return check.keyID
    }
}

/// The result of looking up a presented API key.
public struct KeyLookup: Sendable {
    /// The key and its app.
    public let principal: Principal
    /// True when the lookup itself read the key from the database as live; false when it came from a cache and
    /// the request must still confirm the key (``KeyCheck``) before it is served.
    public let isConfirmed: Bool

    /// Creates a result.
    public init(principal: Principal, isConfirmed: Bool) {
        self.principal = principal
        self.isConfirmed = isConfirmed
    }
}
