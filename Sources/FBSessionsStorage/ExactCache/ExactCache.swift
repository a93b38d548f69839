import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Synchronization

/// Sessions, owners' lists, API-key liveness and pictures' descriptions kept in memory, exact across instances
/// (docs/caching.md, "Exact caches across instances"): no answer from it is ever made false by a change that
/// committed before the request arrived, on any instance, whatever writes it (the service, the CLI, an operator's
/// SQL).
///
/// - **Invalidation.** Triggers announce every change to `sessions`, `owners`, `api_keys` and `picture_cache` on
///   `fbs_changes`, in the transaction that makes it (migrations 0008 and 0009). The event listener's connection
///   (past any pooler) hands each announcement to ``handle(_:)``, which drops the entries it names.
/// - **The fence.** Before answering, a request waits for a fence sent on the listener's connection after the
///   request arrived: a plain query, which a listening PostgreSQL 15 backend answers only after handing out the
///   notifications of every commit acknowledged before it (a `NOTIFY` on this instance's own channel on older
///   servers, which comes back in commit order). So when the fence comes back every announcement of a change
///   committed before the request arrived has been handled. One fence answers every request waiting when it was
///   sent (``FenceQueue``).
/// - **Fills.** A read from the database fills the cache only if no announcement of that entry was handled since
///   the read began and the listener was current and stayed connected (``InvalidationLog``).
/// - **Not current, nothing served.** Until a fence has come back on the listener's connection, after the
///   connection is lost, and after a fence times out, every request reads the database; a lost connection also
///   empties the cache.
///
/// Memory: the entries' estimated bytes stay within the capacity (`FBS_CACHE_BYTES`), evicted by CLOCK
/// (``ClockCache``).
///
/// Thread safety: one lock guards the entries, the log and the fences; waiters are resumed outside it. The
/// listener's callback (``handle(_:)``) runs on the listener's thread.
public final class ExactCache: @unchecked Sendable {
    /// Counters, for `/metrics` and tests.
    public struct Statistics: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        /// Reads from the database whose answer was not kept because an announcement came in meanwhile (or the
        /// listener was not current).
        public var refusedFills = 0
        /// Reads from the database not kept because the cache was full and their key was new (``ClockCache``'s
        /// doorkeeper: a key gets in on its second try).
        public var notAdmitted = 0
        public var fencesSent = 0
        /// Of ``fencesSent``, those sent on an event loop's own connection (``LoopFence``).
        public var loopFencesSent = 0
        /// Event loops' fence connections lost or ended for a late fence (each empties the cache).
        public var loopConnectionsLost = 0
        /// Requests answered without the cache because their fence was lost or timed out, or the listener was
        /// not current.
        public var bypassed = 0
        public var invalidations = 0
        public var entries = 0
        public var bytes = 0
    }

    /// The channel the triggers announce changes on.
    public static let changeChannel = "fbs_changes"

    /// The event listener's connection, in the ``InvalidationLog``'s numbering (loops' connections count from 1).
    static let listenerConnection = 0

    /// This instance's fence channel (random, so that other instances never receive its fences), used when the
    /// listener fences by `NOTIFY` (a server before PostgreSQL 15; `PostgresListener.FenceMethod`).
    public let fenceChannel: String
    /// How long a sent fence may take, in nanoseconds.
    let fenceTimeout: UInt64
    /// Fails a fence out for longer than `fenceTimeout`: one repeating timer, not one per fence (a timer per fence
    /// was a tenth of the service's CPU on the hot path, in Dispatch's timer thread).
    private let watchdog: any DispatchSourceTimer
    /// How the watchdog reaches the cache (``WatchdogTarget``).
    private let watchdogTarget = WatchdogTarget()
    /// The least time between two fences, in nanoseconds.
    private let fenceSpacing: UInt64
    /// When the last fence was sent (`DispatchTime` nanoseconds).
    private var lastSentAt: UInt64 = 0
    let lock = NSLock()
    var entries: ClockCache<String, Entry>
    /// The tokens (``liveKeyKey(_:)``) of the API keys known to be live. Apart from ``entries``: keys are few and
    /// small, and every request checks one, so they are never evicted to make room for sessions (at most
    /// ``liveKeyCapacity``; past that the set empties). Under the lock.
    private var liveKeys: Set<String> = []
    /// Counts the removals from ``liveKeys``, each made under the lock before the fence that follows it can pass: an
    /// event loop's memo of the last key it found live holds while this has not moved (``isLiveKey(_:)``).
    private let liveKeyRemovals = Atomic<UInt64>(0)
    /// Hits answered without the lock (a session's hint, a loop's memo of its last live key).
    let unlockedHits = Atomic<Int>(0)
    /// The most live keys held.
    static let liveKeyCapacity = 4096
    var log = InvalidationLog()
    private var fences = FenceQueue()
    private var waiters: [UInt64: Waiter] = [:]
    private var lastWaiterID: UInt64 = 0
    var statistics = Statistics()
    /// The number the last event loop's fence connection got (``LoopFence``); the listener's is
    /// ``listenerConnection``.
    var lastLoopNumber = 0
    private var sendFence: (@Sendable (String) -> Void)?
    /// Owner and picture tokens by what they hash (``hashedToken(_:)``), under their own lock.
    private var hashedTokens: [TokenInput: String] = [:]

    /// What an owner's or a picture's token hashes, as its parts: looking a token up hashes the parts in place,
    /// with no string joined per request.
    private enum TokenInput: Hashable {
        case owner(appID: String, owner: String)
        case picture(PictureKey)

        /// The token's prefix and the text whose digest follows it (migrations 0008 and 0009).
        var prefixAndText: (prefix: String, text: String) {
            switch self {
            case .owner(let appID, let owner): ("o", appID + ":" + owner)
            case .picture(let key): ("p", key.appID + ":" + key.facebookUserID + ":" + key.sizeKey)
            }
        }
    }
    private let tokenLock = NSLock()
    /// The app ids of the sessions kept (``sharedAppID(_:)``), under their own lock.
    private var appIDs: [String: String] = [:]
    private let appIDLock = NSLock()

    /// Who waits for a fence: a task (``fence()``), or a request parked without one (``wait(_:)``).
    private enum Waiter {
        case task(CheckedContinuation<Bool, Never>)
        case callback(@Sendable (Bool) -> Void)
    }

    enum Entry {
        /// A session, with the body last rendered from it (``keepRendered(_:from:)``); withdrawn as it leaves.
        case session(HeldSession)
        /// An owner's live sessions, by slot; the app and owner are kept since the key is a hash of them.
        case ownerList(appID: String, owner: String, [Session])
        /// A cached picture's description, without its bytes; the key is kept since the entry's key is a hash.
        /// Withdrawn as it leaves.
        case picture(HeldPicture)
    }

    /// Creates an empty cache; it serves nothing until ``attach(sendFence:)`` and a fence that came back.
    ///
    /// - Parameters:
    ///   - capacity: The most bytes its entries may take (estimated), more than 0.
    ///   - fenceTimeout: How long a fence may take before the requests waiting for it read the database instead.
    ///   - fenceSpacing: The least time between two fences; none by default. Under load a fence is due again as
    ///     soon as the last one came back; holding it back lets more requests ride on it (fewer `NOTIFY`s for
    ///     PostgreSQL and the listener), for at most this much added wait, which the p99 pays (docs/performance.md,
    ///     "Figures behind the code").
    public init(capacity: Int, fenceTimeout: Duration = .milliseconds(500), fenceSpacing: Duration = .zero) {
        // A session leaving the cache, for whatever reason, is withdrawn at once, under the lock: a request holding
        // it as its hint then searches instead (``session(id:appID:hint:)``).
        // A picture read from a loop's table of recent pictures is used without the lock: the hand asks it.
        entries = ClockCache(
            capacity: capacity,
            removed: { entry in
                switch entry {
                case .session(let held): held.withdraw()
                case .picture(let held): held.withdraw()
                case .ownerList: break
                }
            },
            takeUse: { entry in
                guard case .picture(let held) = entry else { return false }
                return held.takeUse()
            })
        self.fenceTimeout = max(1, Self.nanoseconds(fenceTimeout))
        self.fenceSpacing = Self.nanoseconds(fenceSpacing)
        fenceChannel = "fbs_fence_" + Hex.encode(SecureRandom.bytes(8))
        // Checked four times a timeout: a late fence fails between one and one and a quarter timeouts after it was sent.
        let interval = DispatchTimeInterval.nanoseconds(Int(clamping: max(1_000_000, self.fenceTimeout / 4)))
        watchdog = DispatchSource.makeTimerSource(queue: .global())
        watchdog.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(5))
        let target = watchdogTarget
        target.set(self)
        watchdog.setEventHandler { target.tick() }
        watchdog.resume()
    }

    deinit {
        watchdogTarget.clear()
        watchdog.cancel()
    }

    /// The cache as its watchdog sees it: not through a weak reference, which would move the cache's reference count
    /// to a side table for its whole life and send every retain and release of it on the hot path down the slow path.
    /// The target holds the cache unretained (the cache owns the timer,
    /// so a strong hold would keep both alive for good) and a lock: a tick runs under it, and the cache's `deinit`
    /// clears the target under it first, so a tick never reaches a cache that is gone.
    private final class WatchdogTarget: @unchecked Sendable {
        private let lock = NSLock()
        private var cache: Unmanaged<ExactCache>?

        func set(_ cache: ExactCache) {
            lock.withLock { self.cache = Unmanaged.passUnretained(cache) }
        }

        func clear() {
            lock.withLock { cache = nil }
        }

        func tick() {
            lock.withLock { cache?._withUnsafeGuaranteedRef { $0.failLateFence() } }
        }
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(clamping: max(0, seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000))
    }

    /// Connects the cache to the listener that sends its fences (``PostgresListener/sendFence(_:)``).
    public func attach(sendFence: @escaping @Sendable (String) -> Void) {
        let effects = lock.withLock {
            self.sendFence = sendFence
            return fences.probe()
        }
        apply(effects)
    }

    /// Disconnects the cache from its listener for good (the listener stopped): it serves nothing from now on, the
    /// requests waiting for a fence read the database, and the cache no longer holds the listener (which holds the
    /// cache through its callback), so both can be freed.
    public func detach() {
        let effects = lock.withLock { () -> FenceQueue.Effects in
            sendFence = nil
            connectionLost(Self.listenerConnection)
            return fences.lost()
        }
        apply(effects)
    }

    /// Whether a fence has come back on the listener's current connection and none has failed since: requests fenced
    /// by the listener are served from the cache only then.
    public var isCurrent: Bool {
        lock.withLock { log.isCurrent(Self.listenerConnection) }
    }

    /// Sends a fence unless one is in flight, so that the cache becomes current without waiting for a request.
    public func probe() {
        let effects = lock.withLock { sendFence == nil ? FenceQueue.Effects() : fences.probe() }
        apply(effects)
    }

    public var currentStatistics: Statistics {
        lock.withLock {
            var copy = statistics
            copy.hits += unlockedHits.load(ordering: .relaxed)
            copy.entries = entries.count + liveKeys.count
            copy.bytes = entries.bytes
            return copy
        }
    }

    // MARK: The listener's side

    /// Handles a signal of the listener whose channels include ``changeChannel`` and whose fence channel is
    /// ``fenceChannel``.
    public func handle(_ signal: PostgresListener.Signal) {
        switch signal {
        case .notification(let channel, let payload) where channel == Self.changeChannel:
            invalidate(payload)
        case .fence(let payload):
            guard let token = UInt64(payload) else { return }
            let effects = lock.withLock { () -> FenceQueue.Effects in
                let (expected, effects) = fences.returned(token)
                if expected { fenceReturned(on: Self.listenerConnection) }
                return effects
            }
            apply(effects)
        case .notification:
            return
        case .disconnected:
            let effects = lock.withLock { () -> FenceQueue.Effects in
                connectionLost(Self.listenerConnection)
                return fences.lost()
            }
            apply(effects)
        case .reconnected:
            let effects = lock.withLock { fences.probe() }
            apply(effects)
        }
    }

    /// Under the lock: a fence came back on `connection` (the listener's or a loop's). When that makes it current the
    /// log's stream breaks and the cache empties (docs/caching.md, "A fence connection per event loop", rule 2).
    func fenceReturned(on connection: Int) {
        if log.fenceReturned(on: connection) { removeAll() }
    }

    /// Under the lock: `connection` was lost; its announcements may have gone unheard, so the cache empties (rule 2).
    func connectionLost(_ connection: Int) {
        log.connectionLost(connection)
        removeAll()
    }

    /// Drops what an announcement names (`*`: everything).
    func invalidate(_ payload: String) {
        lock.withLock {
            statistics.invalidations += 1
            for token in payload.split(separator: ",") {
                if token == "*" {
                    log.breakStream()
                    removeAll()
                    return
                }
                let key = String(token)
                log.announce(key)
                entries.remove(Self.entryKey(announcedAs: key))
                if liveKeys.remove(key) != nil { liveKeyRemovals.add(1, ordering: .releasing) }
            }
        }
    }

    // MARK: The request's side

    /// Waits until every change committed before this call has been handled. False when that cannot be known
    /// in time (the listener is not current, its connection was lost, or the fence timed out): the caller must
    /// then read the database.
    public func fence() async -> Bool {
        await withCheckedContinuation { join(.task($0)) }
    }

    /// ``fence()`` without a task: calls `resume` exactly once, with true once a fence sent after this call came
    /// back, or false when the cache cannot vouch for itself in time (its listener is not current, its connection was
    /// lost, or the fence timed out). It is called on the listener's or the loop's thread when the fence comes back,
    /// and on the calling thread, before this returns, when the cache is not current; it must be quick.
    public func wait(_ resume: @escaping @Sendable (Bool) -> Void) {
        if let loop = loopOnThisThread, loop.join(resume) { return }
        join(.callback(resume))
    }

    private func join(_ waiter: Waiter) {
        enum Start {
            case bypass(FenceQueue.Effects)
            case wait(FenceQueue.Effects)
        }
        let start = lock.withLock { () -> Start in
            guard sendFence != nil else {
                statistics.bypassed += 1
                return .bypass(FenceQueue.Effects())
            }
            guard log.isCurrent(Self.listenerConnection) else {
                statistics.bypassed += 1
                return .bypass(fences.probe())  // To become current; nobody waits for it.
            }
            lastWaiterID += 1
            waiters[lastWaiterID] = waiter
            return .wait(fences.join(lastWaiterID))
        }
        switch start {
        case .bypass(let effects):
            resume([(waiter, false)])
            apply(effects)
        case .wait(let effects):
            apply(effects)
        }
    }

    /// Reads `key` through the cache: from it, after a fence, when it holds the key; else with `load`, and keeps
    /// the answer with `fill` (which the ``InvalidationLog`` may refuse). An entry the cache does not hold costs
    /// no fence: the database's answer is current whatever the listener has seen.
    func read<Value>(
        _ key: String, cached: () -> Value?, load: () async throws -> Value,
        fill: (Value, InvalidationLog.Mark) -> Void
    ) async throws -> Value {
        if holds(key), await fence(), let hit = cached() { return hit }
        let mark = mark()
        let value = try await load()
        fill(value, mark)
        return value
    }

    /// Whether an entry is held (not counted as a use for eviction); a miss is counted when it is not.
    private func holds(_ key: String) -> Bool {
        lock.withLock {
            if entries.contains(key) || liveKeys.contains(key) { return true }
            statistics.misses += 1
            return false
        }
    }

    /// Where the session is held, and its entry, without a fence and without counting a hit or a miss; nil when it is
    /// not held. A hint for the request path (a request that would miss need not wait for a fence first, and one that
    /// waits takes the entry after the fence without searching again), never an answer by itself. It counts as a use
    /// of the entry for eviction, since the read after the fence may take no lock.
    public func sessionHint(_ id: String) -> CacheHint? {
        lock.withLock {
            guard let (position, entry) = entries.entry(for: id), case .session(let held) = entry else { return nil }
            return CacheHint(position: position, held: held)
        }
    }

    /// Where the owner's list is held, like ``sessionHint(_:)``.
    public func sessionsHint(owner: String, appID: String) -> CacheHint? {
        hint(for: ownerKey(appID: appID, owner: owner))
    }

    private func hint(for key: String) -> CacheHint? {
        lock.withLock { entries.position(of: key) }.map { CacheHint(position: $0) }
    }

    /// Where a read from the database begins; pass it to the fills of what it read.
    func mark() -> InvalidationLog.Mark {
        lock.withLock { log.mark() }
    }

    /// The cached session, if any (call after ``fence()`` returned true).
    public func session(id: String, appID: String) -> Session? {
        session(id: id, appID: appID, hint: .unknown)?.session
    }

    /// The cached session, shared, and the body last rendered from it, if any (call after ``fence()`` returned
    /// true): the hint's entry when it has not been withdrawn since (``HeldSession``), with no lock and no search;
    /// else looked for first where `hint` says (``sessionHint(_:)``).
    public func session(id: String, appID: String, hint: CacheHint) -> HeldSession? {
        if let held = hint.held, !held.isWithdrawn, held.session.id == id, held.session.appID == appID {
            unlockedHits.add(1, ordering: .relaxed)
            return held
        }
        return lock.withLock {
            guard case .session(let held) = entries.value(for: id, near: hint.position), held.session.appID == appID
            else {
                statistics.misses += 1
                return nil
            }
            statistics.hits += 1
            return held
        }
    }

    /// Keeps a body rendered from `held` beside it, counted in the cache's bytes, if the cache still holds that very
    /// entry: an entry changed or dropped meanwhile keeps nothing. The session and the body replace `held` (which is
    /// withdrawn) in a new entry; the body replaces any kept before.
    public func keepRendered(_ rendered: RenderedBody, from held: HeldSession) {
        lock.withLock {
            let size = Self.estimatedBytes(of: held.session) + Self.renderedOverhead + rendered.body.count
            _ = entries.update(held.session.id, bytes: size) { entry in
                guard case .session(let current) = entry, current === held else { return false }
                entry = .session(HeldSession(held.session, rendered: rendered))
                return true
            }
        }
    }

    /// What a kept body takes beside its bytes: the array's header and the allocator's overhead.
    static let renderedOverhead = 64

    /// The owner's cached list of live sessions, if any (call after ``fence()`` returned true); looked for first
    /// where `hint` says (``sessionsHint(owner:appID:)``).
    public func sessions(owner: String, appID: String, hint: CacheHint = .unknown) -> [Session]? {
        let key = ownerKey(appID: appID, owner: owner)
        return lock.withLock {
            guard case .ownerList(appID, owner, let list) = entries.value(for: key, near: hint.position)
            else {
                statistics.misses += 1
                return nil
            }
            statistics.hits += 1
            return list
        }
    }

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
        let live = lock.withLock {
            guard liveKeys.contains(Self.liveKeyKey(keyID)) else {
                statistics.misses += 1
                return false
            }
            statistics.hits += 1
            return true
        }
        if live, let loop { loop.lastLiveKey = (keyID, removals) }
        return live
    }

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
        let found = lock.withLock { () -> HeldPicture? in
            guard case .picture(let held) = entries.value(for: token), held.key == key else {
                statistics.misses += 1
                return nil
            }
            statistics.hits += 1
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

    /// Keeps a session read from the database, unless something about it was announced since `mark`.
    func fill(_ session: Session, since mark: InvalidationLog.Mark) {
        var kept = session
        kept.appID = sharedAppID(session.appID)
        keep(
            .session(HeldSession(kept)), for: session.id, announcedAs: Self.sessionKey(session.id),
            bytes: Self.estimatedBytes(of: session), since: mark)
    }

    /// One string per app id for every session kept: a hit compares the session's app id with the caller's, and an
    /// id longer than 15 bytes lives in a buffer of its own, which for each of thousands of sessions would be a load
    /// from memory the processor has not cached. Shared, it is one buffer read on every hit. Bounded: apps are few,
    /// and the table empties past 1,024 ids.
    private func sharedAppID(_ appID: String) -> String {
        appIDLock.withLock {
            if let shared = appIDs[appID] { return shared }
            if appIDs.count >= 1024 { appIDs.removeAll() }
            appIDs[appID] = appID
            return appID
        }
    }

    /// Keeps an owner's list read from the database, unless something about the owner was announced since `mark`
    /// (every change to one of its sessions announces the owner too).
    func fill(_ list: [Session], owner: String, appID: String, since mark: InvalidationLog.Mark) {
        let bytes = list.reduce(96 + owner.utf8.count + appID.utf8.count) { $0 + Self.estimatedBytes(of: $1) }
        keep(.ownerList(appID: appID, owner: owner, list), for: ownerKey(appID: appID, owner: owner), bytes: bytes, since: mark)
    }

    /// The token that announces a session (`s` and its id).
    static func sessionKey(_ id: String) -> String { "s" + id }

    /// The key of the entry an announced token names. A session is kept under its bare id, not its token: the lookups
    /// on the hot path then build no string. The id (`ses_...`) never equals another entry's key (`o` or `p` and 16
    /// hex digits), and even if an operator's id did, a token would only drop one entry too many: every lookup checks
    /// the entry's kind and id.
    static func entryKey(announcedAs token: String) -> String {
        token.utf8.first == UInt8(ascii: "s") ? String(token.dropFirst()) : token
    }

    /// The token that announces an API key (`k` and its id).
    static func liveKeyKey(_ id: String) -> String { "k" + id }

    /// The token that announces an owner (`fbs_owner_token` in migration 0008): `o` and the first 16 hex digits
    /// of SHA-256 of `app:owner`. Two owners whose tokens collide only drop each other's entries.
    func ownerKey(appID: String, owner: String) -> String {
        hashedToken(.owner(appID: appID, owner: owner))
    }

    /// The token that announces a cached picture (`fbs_picture_token` in migration 0009): `p` and the first 16 hex
    /// digits of SHA-256 of `app:facebook user:size`.
    func pictureKey(_ key: PictureKey) -> String {
        hashedToken(.picture(key))
    }

    /// The prefix and the first 16 hex digits of SHA-256 of the text (``TokenInput/prefixAndText``), remembered for
    /// the last few thousand inputs: a hot owner or picture then costs a dictionary lookup per request, not a digest.
    private func hashedToken(_ parts: TokenInput) -> String {
        if let token = tokenLock.withLock({ hashedTokens[parts] }) { return token }
        let (prefix, text) = parts.prefixAndText
        let token = prefix + Hex.encode(SHA256.hash(text).prefix(8))
        tokenLock.withLock {
            if hashedTokens.count >= 4096 { hashedTokens.removeAll(keepingCapacity: true) }
            hashedTokens[parts] = token
        }
        return token
    }

    /// Remembers that the database found the key live, unless something about it was announced since `mark`.
    func fillLiveKey(_ keyID: String, since mark: InvalidationLog.Mark) {
        let key = Self.liveKeyKey(keyID)
        lock.withLock {
            guard mayFill(key, since: mark) else { return }
            if liveKeys.count >= Self.liveKeyCapacity, !liveKeys.contains(key) { removeAllLiveKeys() }
            liveKeys.insert(key)
        }
    }

    /// Under the lock: empties the cache, live keys included.
    private func removeAll() {
        entries.removeAll()
        removeAllLiveKeys()
    }

    /// Under the lock: forgets every live key, and so every loop's memo of one.
    private func removeAllLiveKeys() {
        liveKeys.removeAll()
        liveKeyRemovals.add(1, ordering: .releasing)
    }

    /// Stores an entry read from the database, unless its key was announced since `mark` (``InvalidationLog``).
    private func keep(
        _ entry: Entry, for key: String, announcedAs token: String? = nil, bytes: Int, since mark: InvalidationLog.Mark
    ) {
        lock.withLock {
            guard mayFill(token ?? key, since: mark) else { return }
            if !entries.set(entry, for: key, bytes: bytes) { statistics.notAdmitted += 1 }
        }
    }

    /// Under the lock: whether a value read from the database since `mark` may be kept under `key`, that is, nothing
    /// about the key was announced since (``InvalidationLog``). A refusal is counted.
    private func mayFill(_ key: String, since mark: InvalidationLog.Mark) -> Bool {
        guard log.mayFill(key, since: mark) else {
            statistics.refusedFills += 1
            return false
        }
        return true
    }

    /// This cache's fence connection on the calling thread's event loop, if the thread is one and has one.
    private var loopOnThisThread: LoopFence? {
        LoopFence.onThisThread.flatMap { $0.cache === self ? $0 : nil }
    }

    // MARK: Fences

    private func apply(_ effects: FenceQueue.Effects) {
        // Most joins ride on a fence already scheduled or sent: nothing to do, and no second turn of the lock.
        guard effects.send != nil || !effects.passed.isEmpty || !effects.failed.isEmpty else { return }
        var resumed: [(Waiter, Bool)] = []
        var delay: UInt64 = 0
        lock.withLock {
            for id in effects.passed {
                if let waiter = waiters.removeValue(forKey: id) { resumed.append((waiter, true)) }
            }
            for id in effects.failed {
                if let waiter = waiters.removeValue(forKey: id) { resumed.append((waiter, false)) }
            }
            statistics.bypassed += effects.failed.count
            if effects.send != nil {
                let since = DispatchTime.now().uptimeNanoseconds &- lastSentAt
                delay = since < fenceSpacing ? fenceSpacing - since : 0
            }
        }
        if let token = effects.send {
            if delay == 0 {
                send(token)
            } else {
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in send(token) }
            }
        }
        resume(resumed)
    }

    /// Sends a scheduled fence, unless it was lost meanwhile.
    private func send(_ token: UInt64) {
        let sender = lock.withLock { () -> (@Sendable (String) -> Void)? in
            guard let sendFence, fences.sending(token) else { return nil }
            statistics.fencesSent += 1
            lastSentAt = DispatchTime.now().uptimeNanoseconds
            return sendFence
        }
        guard let sender else { return }
        sender(String(token))
    }

    /// Resumes waiters. A parked request's callback runs here (it only hands its connection back to the HTTP
    /// server's thread). Tasks are resumed off the calling thread, spread over the processors: a request's task
    /// prefers the server's inline executor, so it goes on on whatever thread resumes it, and resumed on the
    /// listener's thread every request of a fence would run the rest of its handler there, one after another,
    /// while the listener waits to read the next notification and to send the next fence.
    private func resume(_ waiters: [(Waiter, Bool)]) {
        guard !waiters.isEmpty else { return }
        var waitingTasks: [(CheckedContinuation<Bool, Never>, Bool)] = []
        for (waiter, passed) in waiters {
            switch waiter {
            case .callback(let resume): resume(passed)
            case .task(let continuation): waitingTasks.append((continuation, passed))
            }
        }
        let tasks = waitingTasks
        guard !tasks.isEmpty else { return }
        let lanes = min(tasks.count, Self.resumerLanes)
        for lane in 0..<lanes {
            DispatchQueue.global().async {
                for index in stride(from: lane, to: tasks.count, by: lanes) {
                    tasks[index].0.resume(returning: tasks[index].1)
                }
            }
        }
    }

    private static let resumerLanes = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Fails the fence in flight if it was sent more than `fenceTimeout` ago (the watchdog's tick).
    private func failLateFence() {
        let effects = lock.withLock { () -> FenceQueue.Effects in
            // Read under the lock: a fence sent after an earlier reading would look sent in the future.
            let now = DispatchTime.now().uptimeNanoseconds
            guard let token = fences.inFlight, fences.sent, now - lastSentAt >= fenceTimeout else {
                return FenceQueue.Effects()
            }
            log.fenceTimedOut(on: Self.listenerConnection)
            return fences.lost(token)
        }
        apply(effects)
    }

    /// An estimate of what a session takes in memory: its strings and arrays, and a fixed part for the rest (the
    /// struct, the dictionary slot, the key, allocator overhead). The fixed part is calibrated on the bench's
    /// sessions: 27,578 of them counted 1.2 KB each with a 640-byte fixed part, while the process grew by 2.1 KB
    /// per entry (`bench/run`, "resident memory, idle after the status rows"), so it is 1,536 bytes.
    static func estimatedBytes(of session: Session) -> Int {
        var bytes = 1536 + session.id.utf8.count * 2 + session.appID.utf8.count + session.owner.utf8.count
            + session.facebookUserID.utf8.count
        for list in [session.permissions, session.declinedPermissions, session.expiredPermissions] {
            bytes += list.reduce(list.count * 24) { $0 + $1.utf8.count }
        }
        for scope in session.granularScopes {
            bytes += 40 + scope.scope.utf8.count + (scope.targetIDs ?? []).reduce(0) { $0 + 24 + $1.utf8.count }
        }
        if let profile = session.profile {
            for field in Profile.Field.allCases {
                bytes += 16 + (profile[field]?.utf8.count ?? 0)
            }
        }
        return bytes
    }
}

