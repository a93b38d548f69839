import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

/// API keys known to be live: apart from the entries (few, small, checked by every request, never evicted for
/// sessions), with each event loop's memo of the last key it found live.
extension ExactCache {
    /// Whether the key is known to be live (call after ``fence()`` returned true).
    ///
    /// On an event loop with a fence connection of this cache, the loop remembers the last key it found live here
    /// and the count of removals from the live keys then (``LoopFence/lastLiveKey``): while that count has not
    /// moved, no live key has been dropped since, so the key is still held, and the answer costs no lock and no
    /// search. The count is read after the fence passed, so it includes every removal the fence vouches for.
    public func isLiveKey(_ keyID: String) -> Bool {
        let loop = loopOnThisThread
        let removals = liveKeyRemovals.load(ordering: .acquiring)
        if let loop, loop.lastLiveKey?.removals == removals, loop.lastLiveKey?.keyID == keyID {
            unlockedHits.add(1, ordering: .relaxed)
            return true
        }
        // `removals` was read before the search: a removal after it leaves the memo made below already out of date.
        let live = guarded.withLock { state in
            guard state.liveKeys.contains(Self.liveKeyKey(keyID)) else {
                state.statistics.misses += 1
                return false
            }
            state.statistics.hits += 1
            return true
        }
        if live, let loop { loop.lastLiveKey = (keyID, removals) }
        return live
    }

    /// Remembers that the database found the key live, unless something about it was announced since `mark`.
    func fillLiveKey(_ keyID: String, since mark: InvalidationLog.Mark) {
        let key = Self.liveKeyKey(keyID)
        guarded.withLock { state in
            guard mayFill(key, since: mark, &state) else { return }
            if state.liveKeys.count >= Self.liveKeyCapacity, !state.liveKeys.contains(key) { removeAllLiveKeys(&state) }
            state.liveKeys.insert(key)
        }
    }

    /// Under the lock: forgets every live key, and so every loop's memo of one.
    func removeAllLiveKeys(_ state: inout State) {
        state.liveKeys.removeAll()
        liveKeyRemovals.add(1, ordering: .releasing)
    }
}
