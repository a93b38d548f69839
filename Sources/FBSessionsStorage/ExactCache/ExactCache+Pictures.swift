import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

/// Pictures' descriptions (never their bytes), with each event loop's table of the pictures it read lately.
extension ExactCache {
    /// The description of a cached picture, without its bytes, if any (call after ``fence()`` returned true).
    ///
    /// On an event loop with a fence connection of this cache, the loop's table of the pictures it read lately
    /// (``LoopFence/recentPictures``) is looked at first: an entry there that the cache has not withdrawn since is the
    /// entry the cache holds now, as for a session's hint (``HeldSession``), and costs no lock and no search.
    public func picture(_ key: PictureKey) -> HeldPicture? {
        let loop = loopOnThisThread
        let slot = loop == nil ? 0 : key.hashValue & (LoopFence.recentPictureSlots - 1)
        if let loop, let held = loop.recentPictures[slot], !held.isWithdrawn, held.key == key {
            unlockedHits.add(1, ordering: .relaxed)
            held.markUsed()
            return held
        }
        let token = pictureKey(key)
        let found = guarded.withLock { state -> HeldPicture? in
            guard case .picture(let held) = state.entries.value(for: token), held.key == key else {
                state.statistics.misses += 1
                return nil
            }
            state.statistics.hits += 1
            return held
        }
        if let found, let loop { loop.recentPictures[slot] = found }
        return found
    }

    /// Keeps a picture's description read from the database (its bytes are dropped), unless its row was announced
    /// since `mark`.
    func fill(_ picture: CachedPicture, for key: PictureKey, since mark: InvalidationLog.Mark) {
        var described = picture
        described.body = nil
        let bytes = 512 + key.appID.utf8.count + key.facebookUserID.utf8.count + key.sizeKey.utf8.count
            + picture.etag.utf8.count + picture.url.utf8.count
        keep(.picture(HeldPicture(key: key, picture: described)), for: pictureKey(key), bytes: bytes, since: mark)
    }
}
