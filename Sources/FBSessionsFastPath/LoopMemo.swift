import FBSessionsCore
import FBSessionsStorage
import Foundation
import HTTPServer
import Support
import Synchronization

/// What a server thread remembers of the last request it answered on the fast path, read and written by that thread
/// alone, with no lock: a keep-alive connection repeats its key and its question, and an event loop serves its
/// connections in turn, so most requests ask what their thread was asked last (docs/performance.md, "Memos").
///
/// Each memo is exact: it holds only while what it was made from has not changed (the key cache's generation, the
/// cache's entries not withdrawn).
final class LoopMemo {
    /// The calling thread's memo, made on its first use and released when the thread ends.
    static var onThisThread: LoopMemo { memos.value }
    private static let memos = PerThread { LoopMemo() }

    /// A number for each fast path, so that one's memo is never taken for another's on the same thread.
    static func newOwner() -> UInt64 { owners.add(1, ordering: .relaxed).newValue }
    private static let owners = Atomic<UInt64>(0)

    // MARK: The last key

    private var keyOwner: UInt64 = 0
    private var keyGeneration: UInt64 = 0
    private var presented = ""
    private var principal: Principal?
    private var expires = Date.distantPast

    /// The principal of the key this thread found last, if `presented` is that key and the key cache has not
    /// changed since (``CachedKeyStore/generation``). Liveness is never taken from it: the fast path confirms it
    /// after the fence.
    func principal(for presented: String, owner: UInt64, generation: UInt64) -> Principal? {
        guard keyOwner == owner, keyGeneration == generation, expires > Date(), self.presented == presented else {
            return nil
        }
        return principal
    }

    /// Remembers a key's principal, read from the key cache at `generation` (read before the cache was asked).
    func remember(_ presented: String, _ principal: Principal, expires: Date, owner: UInt64, generation: UInt64) {
        self.presented = presented
        self.principal = principal
        self.expires = expires
        keyOwner = owner
        keyGeneration = generation
    }

    // MARK: The last 304

    /// The last 304 this thread answered from the exact cache, and what it answered it for.
    let notModified = NotModified()

    /// Exact: the session's entry is the very one the cache held then, so the app, the Facebook user and the kind
    /// of login, which make the picture's key with the size, are the same; the picture's entry is not withdrawn, so
    /// the cache still holds it under that key; the `If-None-Match` text is the same, so it still names its ETag.
    /// Freshness is checked again, and the response is made again when its `Age` moved.
    final class NotModified {
        private var session: HeldSession?
        private var size = GraphPictureSize()
        private var ifNoneMatch = ""
        private var entry: HeldPicture?
        private var response = Response(status: 304)
        private var age = -1

        /// The 304 to answer, if the memo holds for this request.
        func response(_ session: HeldSession, _ size: GraphPictureSize, _ ifNoneMatch: String, now: Date) -> Response? {
            guard session === self.session, size == self.size, let entry, !entry.isWithdrawn,
                entry.picture.isFresh(at: now), ifNoneMatch == self.ifNoneMatch,
                max(0, Int(now.timeIntervalSince(entry.picture.fetchedAt))) == age
            else { return nil }
            return response
        }

        func remember(
            _ session: HeldSession, _ size: GraphPictureSize, _ ifNoneMatch: String, entry: HeldPicture,
            response: Response, age: Int
        ) {
            self.session = session
            self.size = size
            self.ifNoneMatch = ifNoneMatch
            self.entry = entry
            self.response = response
            self.age = age
        }
    }
}
