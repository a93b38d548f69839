import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

/// Owners' lists of live sessions, under the owner's announced token.
extension ExactCache {
    /// Where the owner's list is held, like ``sessionHint(_:)``.
    public func sessionsHint(owner: String, appID: String) -> CacheHint? {
        hint(for: ownerKey(appID: appID, owner: owner))
    }

    func hint(for key: String) -> CacheHint? {
        guarded.withLock { state in state.entries.position(of: key) }.map { CacheHint(position: $0) }
    }

    /// The owner's cached list of live sessions, if any (call after ``fence()`` returned true); looked for first
    /// where `hint` says (``sessionsHint(owner:appID:)``).
    public func sessions(owner: String, appID: String, hint: CacheHint = .unknown) -> [Session]? {
        let key = ownerKey(appID: appID, owner: owner)
        return guarded.withLock { state in
            guard case .ownerList(appID, owner, let list) = state.entries.value(for: key, near: hint.position)
            else {
                state.statistics.misses += 1
                return nil
            }
            state.statistics.hits += 1
            return list
        }
    }

    /// Keeps an owner's list read from the database, unless something about the owner was announced since `mark`
    /// (every change to one of its sessions announces the owner too).
    func fill(_ list: [Session], owner: String, appID: String, since mark: InvalidationLog.Mark) {
        let bytes = list.reduce(96 + owner.utf8.count + appID.utf8.count) { $0 + Self.estimatedBytes(of: $1) }
        keep(.ownerList(appID: appID, owner: owner, list), for: ownerKey(appID: appID, owner: owner), bytes: bytes, since: mark)
    }
}
