import Crypto
import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
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
/// Its parts, one file each, all under the one lock and the one fence mechanism: the fences
/// (ExactCache+Fences.swift) and each event loop's own fence connection (ExactCache+LoopFence.swift); the
/// announcements and their tokens (ExactCache+Announcements.swift); and what it caches: sessions
/// (ExactCache+Sessions.swift), owners' lists (ExactCache+OwnerLists.swift), live API keys
/// (ExactCache+LiveKeys.swift) and pictures' descriptions (ExactCache+Pictures.swift). This file holds the state,
/// the read-through the stores use (``read(_:cached:load:fill:)``) and the fills' rule.
///
/// Thread safety: one lock (``guarded``) guards the entries, the log and the fences; waiters are resumed outside
/// it. The listener's callback (``handle(_:)``) runs on the listener's thread.
/// Sendable: its mutable state is under its locks and atomics; the Dispatch timer it owns is set once in `init`.
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
    let watchdog: any DispatchSourceTimer
    /// How the watchdog reaches the cache (``WatchdogTarget``).
    let watchdogTarget = WatchdogTarget()
    /// The least time between two fences, in nanoseconds.
    let fenceSpacing: UInt64
    /// Everything the one lock guards: the entries and the live keys, the announcements' log, the fences and
    /// their waiters, the counters, and the listener's way to send a fence.
    struct State {
        var entries: ClockCache<String, Entry>
        /// The tokens (``liveKeyKey(_:)``) of the API keys known to be live. Apart from ``entries``: keys are few
        /// and small, and every request checks one, so they are never evicted to make room for sessions (at most
        /// ``liveKeyCapacity``; past that the set empties).
        var liveKeys: Set<String> = []
        var log = InvalidationLog()
        var fences = FenceQueue()
        var waiters: [UInt64: Waiter] = [:]
        var lastWaiterID: UInt64 = 0
        var statistics = Statistics()
        /// The number the last event loop's fence connection got (``LoopFence``); the listener's is
        /// ``listenerConnection``.
        var lastLoopNumber = 0
        /// How to send a fence on the listener's connection; nil while no listener is attached.
        var sendFence: (@Sendable (String) -> Void)?
        /// When the last fence was sent (`DispatchTime` nanoseconds).
        var lastSentAt: UInt64 = 0
    }

    /// The one lock, and what it guards.
    let guarded: Locked<State>
    /// Counts the removals from the live keys, each made under the lock before the fence that follows it can pass:
    /// an event loop's memo of the last key it found live holds while this has not moved (``isLiveKey(_:)``).
    let liveKeyRemovals = Atomic<UInt64>(0)
    /// Hits answered without the lock (a session's hint, a loop's memo of its last live key).
    let unlockedHits = Atomic<Int>(0)
    /// The most live keys held.
    static let liveKeyCapacity = 4096
    /// Who is told of announced API keys (``observeKeyAnnouncements(_:)``), under their own lock.
    let keyObservers = Locked<[@Sendable (String?) -> Void]>([])
    /// Owner and picture tokens by what they hash (``hashedToken(_:)``), under their own lock.
    let hashedTokens = Locked<[TokenInput: String]>([:])

    /// What an owner's or a picture's token hashes, as its parts: looking a token up hashes the parts in place,
    /// with no string joined per request.
    enum TokenInput: Hashable {
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
    /// The app ids of the sessions kept (``sharedAppID(_:)``), under their own lock.
    let appIDs = Locked<[String: String]>([:])

    /// Who waits for a fence: a task (``fence()``), or a request parked without one (``wait(_:)``).
    enum Waiter {
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
        guarded = Locked(State(entries: ClockCache(
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
            })))
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
    ///
    /// Sendable: the unretained reference is reached only under the lock, and only while the cache lives.
    final class WatchdogTarget: @unchecked Sendable {
        private let cache = Locked<Unmanaged<ExactCache>?>(nil)

        func set(_ cache: ExactCache) {
            self.cache.withLock { $0 = Unmanaged.passUnretained(cache) }
        }

        func clear() {
            cache.withLock { $0 = nil }
        }

        func tick() {
            cache.withLock { $0?._withUnsafeGuaranteedRef { $0.failLateFence() } }
        }
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(clamping: max(0, seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000))
    }

    /// Connects the cache to the listener that sends its fences (``PostgresListener/sendFence(_:)``).
    public func attach(sendFence: @escaping @Sendable (String) -> Void) {
        let effects = guarded.withLock { state in
            state.sendFence = sendFence
            return state.fences.probe()
        }
        apply(effects)
    }

    /// Disconnects the cache from its listener for good (the listener stopped): it serves nothing from now on, the
    /// requests waiting for a fence read the database, and the cache no longer holds the listener (which holds the
    /// cache through its callback), so both can be freed.
    public func detach() {
        let effects = guarded.withLock { state -> FenceQueue.Effects in
            state.sendFence = nil
            connectionLost(Self.listenerConnection, &state)
            return state.fences.lost()
        }
        apply(effects)
    }

    /// Whether a fence has come back on the listener's current connection and none has failed since: requests fenced
    /// by the listener are served from the cache only then.
    public var isCurrent: Bool {
        guarded.withLock { state in state.log.isCurrent(Self.listenerConnection) }
    }

    /// Sends a fence unless one is in flight, so that the cache becomes current without waiting for a request.
    public func probe() {
        let effects = guarded.withLock { state in state.sendFence == nil ? FenceQueue.Effects() : state.fences.probe() }
        apply(effects)
    }

    public var currentStatistics: Statistics {
        guarded.withLock { state in
            var copy = state.statistics
            copy.hits += unlockedHits.load(ordering: .relaxed)
            copy.entries = state.entries.count + state.liveKeys.count
            copy.bytes = state.entries.bytes
            return copy
        }
    }

    // MARK: The request's side

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
    func holds(_ key: String) -> Bool {
        guarded.withLock { state in
            if state.entries.contains(key) || state.liveKeys.contains(key) { return true }
            state.statistics.misses += 1
            return false
        }
    }

    /// Where a read from the database begins; pass it to the fills of what it read.
    func mark() -> InvalidationLog.Mark {
        guarded.withLock { state in state.log.mark() }
    }

    /// Under the lock: empties the cache, live keys included.
    func removeAll(_ state: inout State) {
        state.entries.removeAll()
        removeAllLiveKeys(&state)
    }

    /// Stores an entry read from the database, unless its key was announced since `mark` (``InvalidationLog``).
    func keep(
        _ entry: Entry, for key: String, announcedAs token: String? = nil, bytes: Int, since mark: InvalidationLog.Mark
    ) {
        guarded.withLock { state in
            guard mayFill(token ?? key, since: mark, &state) else { return }
            if !state.entries.set(entry, for: key, bytes: bytes) { state.statistics.notAdmitted += 1 }
        }
    }

    /// Under the lock: whether a value read from the database since `mark` may be kept under `key`, that is, nothing
    /// about the key was announced since (``InvalidationLog``). A refusal is counted.
    func mayFill(_ key: String, since mark: InvalidationLog.Mark, _ state: inout State) -> Bool {
        guard state.log.mayFill(key, since: mark) else {
            state.statistics.refusedFills += 1
            return false
        }
        return true
    }

    /// This cache's fence connection on the calling thread's event loop, if the thread is one and has one.
    var loopOnThisThread: LoopFence? {
        LoopFence.onThisThread.flatMap { $0.cache === self ? $0 : nil }
    }
}
