/// A fence of an exact cache (docs/caching.md, "Exact caches across instances"): something a request can wait for
/// without a task, after which the cache's entries are known to reflect every change that committed before the
/// wait began.
///
/// The request path uses it to answer from memory with one wait: the router waits once, then confirms the key and
/// reads the session under the same ``FencePass``. A pass is explicit, not carried in a task-local, and is only
/// honoured by the cache that issued it.
public protocol RequestFence: AnyObject, Sendable {
    /// Calls `resume` exactly once, on any thread and possibly before returning: with a pass once a fence sent
    /// after this call came back, or with nil when the cache cannot vouch for itself in time (its listener is not
    /// current, its connection was lost, or the fence timed out). `resume` must be quick: it may run on the
    /// listener's thread, once for every request a fence answers.
    func wait(_ resume: @escaping @Sendable (FencePass?) -> Void)
}

/// Proof that a fence of one cache passed after a request arrived: what that cache holds may answer the request.
public struct FencePass: Sendable, Equatable {
    /// The cache whose fence passed.
    public let issuer: ObjectIdentifier

    /// A pass for the fence `issuer`. Only a ``RequestFence`` makes these, when its fence came back.
    public init(issuer: some RequestFence) {
        self.issuer = ObjectIdentifier(issuer)
    }

    /// Whether this pass was issued by `cache`.
    public func covers(_ cache: some RequestFence) -> Bool {
        issuer == ObjectIdentifier(cache)
    }
}

/// Where the exact cache held an entry when a request was looked at, before its fence (``SessionStore/sessionHint(id:)``):
/// a hint, never an answer by itself.
///
/// - A session's hint carries the entry itself (``held``). The read after the fence takes it only if the cache has
///   not withdrawn it since (``HeldSession/isWithdrawn``): then it is the entry the cache holds now, found with no
///   lock and no search.
/// - An owner list's hint carries the entry's place (``position``). The read after the fence looks there first and
///   takes what it finds only if it is the entry for the same key, held now.
///
/// Anything else (an entry dropped, moved or replaced meanwhile) is searched for as usual. Over a large cache this
/// spares each request its second search through memory the processor has not cached.
public struct CacheHint: Sendable, Equatable {
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

    public static func == (lhs: CacheHint, rhs: CacheHint) -> Bool {
        lhs.position == rhs.position && lhs.held === rhs.held
    }
}
