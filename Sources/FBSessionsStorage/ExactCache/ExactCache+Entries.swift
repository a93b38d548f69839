import FBSessionsCore
import Support
import Synchronization

/// A session held by the exact cache, shared by every read of it rather than copied: a copy of a `Session` retains
/// each of its strings and arrays, and over thousands of cached sessions each of those touches memory the processor
/// has not cached (docs/performance.md, "Shared entries").
///
/// The cache withdraws it (``withdraw()``) whenever it stops holding it as the entry for its session, whether
/// announced, evicted, replaced or emptied, always before the fence that follows can pass. So a reader after a
/// fence that finds it not withdrawn holds the very entry a search of the cache would find, and needs neither the
/// cache's lock nor a search (``CacheHint``).
public final class HeldSession: Sendable {
    /// The session as stored.
    public let session: Session
    /// The body last rendered from this session (``ExactCache/keepRendered(_:from:)``); a body kept later comes in
    /// a new `HeldSession`, which replaces this one in the cache.
    public let rendered: RenderedBody?
    private let withdrawn = Atomic<Bool>(false)

    public init(_ session: Session, rendered: RenderedBody? = nil) {
        self.session = session
        self.rendered = rendered
    }

    /// Whether the cache that held this entry has stopped holding it. Once true, it stays true.
    public var isWithdrawn: Bool { withdrawn.load(ordering: .acquiring) }

    /// Called by the cache that holds the entry, under its lock, when it stops holding it.
    func withdraw() {
        withdrawn.store(true, ordering: .releasing)
    }
}

/// A response body rendered from a stored session as shown in some state, kept beside it in the exact cache so that
/// an unchanged session is not rendered again. How a session is shown differs from how it is stored only in its
/// state, so the state it was shown in is all a kept body needs beside the stored session: it is reused only for
/// that very session shown in that state, and so never says anything the session does not.
public struct RenderedBody: Sendable {
    /// The state the session was shown in.
    public let shownState: SessionState
    /// The body rendered.
    public let body: [UInt8]

    public init(shownState: SessionState, body: [UInt8]) {
        self.shownState = shownState
        self.body = body
    }
}

/// A picture's description as the exact cache holds it, withdrawn as it leaves the cache (announced, replaced,
/// evicted or emptied), like a ``HeldSession``: an event loop's table of recent pictures and the fast path's memo of
/// its last 304 keep these, and take one only while it is not withdrawn.
public final class HeldPicture: Sendable {
    /// The picture's key.
    public let key: PictureKey
    /// The description, without bytes.
    public let picture: CachedPicture
    private let withdrawn = Atomic<Bool>(false)
    /// Read from a loop's table since the cache's hand last passed: a use the cache did not see.
    private let used = Atomic<Bool>(false)

    public init(key: PictureKey, picture: CachedPicture) {
        self.key = key
        self.picture = picture
    }

    /// Whether the cache that held this entry has stopped holding it. Once true, it stays true.
    public var isWithdrawn: Bool { withdrawn.load(ordering: .acquiring) }

    /// Under the cache's lock, as the entry leaves.
    func withdraw() {
        withdrawn.store(true, ordering: .releasing)
    }

    /// A use without the cache's lock (written only when not already marked, so a hot entry's line stays shared).
    func markUsed() {
        if !used.load(ordering: .relaxed) { used.store(true, ordering: .relaxed) }
    }

    /// Whether it was used without the lock since last asked; the cache's hand asks, under the lock.
    func takeUse() -> Bool {
        used.exchange(false, ordering: .relaxed)
    }
}

/// Where the exact cache held an entry when a request looked before its fence (``ExactCache/sessionHint(_:)``):
/// a hint, never an answer by itself.
///
/// - A session's hint carries the entry itself (``held``). The read after the fence takes it only if the cache has
///   not withdrawn it since (``HeldSession/isWithdrawn``): then it is the entry the cache holds now, found with no
///   lock and no search.
/// - An owner list's hint carries the entry's place (``position``). The read after the fence looks there first and
///   takes what it finds only if it is the entry for the same key, held now.
///
/// Anything else (an entry dropped, moved or replaced meanwhile) is searched for as usual.
public struct CacheHint: Sendable {
    /// The entry's place in the cache; nil: not known, search.
    public let position: Int?
    /// The session's entry as it was held when the hint was taken.
    public let held: HeldSession?

    public init(position: Int?, held: HeldSession? = nil) {
        self.position = position
        self.held = held
    }

    /// No hint: the read searches.
    public static let unknown = CacheHint(position: nil)
}
