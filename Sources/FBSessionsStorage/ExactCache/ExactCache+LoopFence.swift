import Dispatch
import FBSessionsCore
import Foundation
import Postgres
import Support
import Synchronization

extension ExactCache {
    /// The fences of one event loop, on a listening connection of its own that the loop watches beside its sockets
    /// (docs/caching.md, "A fence connection per event loop").
    ///
    /// A request parked on the loop's thread (``ExactCache/wait(_:)``) joins this loop's ``FenceQueue``. After the
    /// loop's turn, the fence it needs goes out as a bare Sync; when the Sync comes back, the notifications that came
    /// before it have been handed to the cache, and the requests are woken on the same thread: no lock but the
    /// cache's, no other thread, no wake-up across threads. The rules that keep this exact with several listening
    /// connections:
    /// - every connection's announcements go into the one cache and its ``InvalidationLog``;
    /// - a connection becoming current (its first fence back) and a connection lost each empty the cache and break
    ///   the log's stream;
    /// - a loop answers from the cache only after a fence on its own connection, and only while that connection is
    ///   current. Otherwise its requests take the event listener's fence, as requests on any other thread do.
    ///
    /// The connection is made and remade off the loop (a connect blocks), with a pause that doubles after each failure;
    /// a fence out longer than the cache's fence timeout ends it like a lost connection.
    ///
    /// Thread safety: ``join(_:)``, ``readable()``, ``afterTurn()`` and ``watched`` are called on the loop's thread
    /// only; the hand-over of a new connection goes through a lock; ``stop()`` is called once the loop has ended.
    /// Sendable: its mutable state belongs to its loop's thread (the server calls it there and nowhere else), but
    /// for the hand-over, which is under a lock.
    public final class LoopFence: @unchecked Sendable {
        /// How a loop fence connects: blocking, off the loop.
        public typealias Connect = @Sendable () throws -> PostgresFenceConnection

        let cache: ExactCache
        /// This connection's number in the cache's ``InvalidationLog``.
        let number: Int
        private let connect: Connect
        private var connection: PostgresFenceConnection?
        /// Counts the connections installed, so that the loop knows the descriptor it watches is another one.
        private var serial: UInt64 = 0
        /// Whether a fence came back on the current connection (mirrors the log; read without the cache's lock).
        private var current = false
        private var fences = FenceQueue()
        private var waiters: [UInt64: @Sendable (Bool) -> Void] = [:]
        private var lastWaiterID: UInt64 = 0
        /// When the fence out was sent (`DispatchTime` nanoseconds).
        private var sentAt: UInt64 = 0
        /// When to try to connect next, and the pause after the next failure.
        private var nextAttemptAt: UInt64 = 0
        private var reconnectDelay = LoopFence.firstReconnectDelay
        private let handover = Handover()
        /// The last API key this loop found live in the cache, and the cache's count of live-key removals then
        /// (``ExactCache/isLiveKey(_:)``). The loop's thread only.
        var lastLiveKey: (keyID: String, removals: UInt64)?
        /// The pictures this loop read from the cache lately, by their key's hash (``ExactCache/picture(_:)``): a
        /// few avatars are asked for again and again. Taken only while not withdrawn. The loop's thread only.
        var recentPictures = [HeldPicture?](repeating: nil, count: LoopFence.recentPictureSlots)
        /// Places in ``recentPictures``, a power of two.
        static let recentPictureSlots = 64

        private static let firstReconnectDelay: UInt64 = 50_000_000
        private static let maxReconnectDelay: UInt64 = 2_000_000_000

        /// Where an attempt to connect, off the loop, leaves its outcome for the loop.
        ///
        /// Sendable: its state is under its lock; the connection in it (not itself `Sendable`) is used by one thread
        /// at a time, made off the loop and then owned by the loop.
        private final class Handover: @unchecked Sendable {
            struct State {
                var connecting = false
                var made: PostgresFenceConnection?
                var failed = false
                var stopped = false
            }
            let state = Locked(State())
            /// Set when an attempt finished, so that the loop takes the lock only then.
            let finished = Atomic<Bool>(false)
        }

        init(cache: ExactCache, number: Int, connect: @escaping Connect) {
            self.cache = cache
            self.number = number
            self.connect = connect
        }

        // MARK: The loop's thread

        /// The loop fence of the calling thread, if one was made on it (``ExactCache/makeLoopFence(connect:)``).
        static var onThisThread: LoopFence? {
            pthread_getspecific(threadKey).map { Unmanaged<LoopFence>.fromOpaque($0).takeUnretainedValue() }
        }

        private static let threadKey: pthread_key_t = {
            var key = pthread_key_t()
            pthread_key_create(&key, nil)
            return key
        }()

        /// Makes this the calling thread's loop fence (held by the loop, which outlives the registration).
        func registerOnThisThread() {
            pthread_setspecific(Self.threadKey, Unmanaged.passUnretained(self).toOpaque())
        }

        /// Parks `resume` until a fence sent after now comes back on this loop's connection. False when the
        /// connection is not current: the caller fences another way.
        func join(_ resume: @escaping @Sendable (Bool) -> Void) -> Bool {
            guard current, connection != nil else { return false }
            lastWaiterID += 1
            waiters[lastWaiterID] = resume
            _ = fences.join(lastWaiterID)  // Sent after the turn (``afterTurn()``), for every request of the turn.
            return true
        }

        /// The descriptor to watch for input and the number of the connection it belongs to; nil while there is none.
        public var watched: (descriptor: Int32, serial: UInt64)? {
            guard let connection else { return nil }
            return (connection.descriptor, serial)
        }

        /// Reads what the connection received: hands the notifications to the cache, then wakes the requests whose
        /// fence came back.
        public func readable() {
            guard let connection else { return }
            let input = connection.read()
            for notification in input.notifications where notification.channel == ExactCache.changeChannel {
                cache.invalidate(notification.payload)
            }
            if input.lost {
                lose()
                return
            }
            for _ in 0..<input.syncs {
                guard let token = fences.inFlight else { continue }
                let (expected, effects) = fences.returned(token)
                guard expected else { continue }
                if !current {
                    cache.loopFenceReturned(number)
                    current = true
                }
                resume(effects.passed, passed: true)
            }
        }

        /// After each turn of the loop: takes a new connection, sends the fence the turn's requests need (or one to
        /// become current), ends a fence out for too long. Returns the longest the loop may sleep before calling
        /// again, in nanoseconds; nil for no limit.
        public func afterTurn() -> UInt64? {
            let now = DispatchTime.now().uptimeNanoseconds
            if handover.finished.load(ordering: .acquiring) { takeAttempt(now: now) }
            guard let connection else {
                startAttemptIfDue(now: now)
                return nextAttemptAt > now ? nextAttemptAt - now : Self.firstReconnectDelay
            }
            if !current, fences.inFlight == nil { _ = fences.probe() }
            if let token = fences.inFlight, !fences.sent, fences.sending(token) {
                sentAt = now
                cache.countFenceSent()
                guard connection.sendSync() else {
                    lose()
                    return Self.firstReconnectDelay
                }
            }
            // `sent` stays set after the fence came back (until the next is scheduled): only one out counts.
            guard fences.inFlight != nil, fences.sent else { return nil }
            let out = now &- sentAt
            if out >= cache.fenceTimeout {
                lose()
                return Self.firstReconnectDelay
            }
            return cache.fenceTimeout - out
        }

        /// Ends the connection: the cache forgets what it may have missed, and the requests waiting for its fence
        /// read the database.
        private func lose() {
            connection?.close()
            connection = nil
            current = false
            cache.loopLost(number)
            let effects = fences.lost()
            resume(effects.failed, passed: false)
            nextAttemptAt = DispatchTime.now().uptimeNanoseconds + reconnectDelay
        }

        private func resume(_ ids: [UInt64], passed: Bool) {
            if !passed { cache.countBypassed(ids.count) }
            for id in ids {
                waiters.removeValue(forKey: id)?(passed)
            }
        }

        private func startAttemptIfDue(now: UInt64) {
            guard now >= nextAttemptAt else { return }
            let handover = handover
            let start = handover.state.withLock { attempt -> Bool in
                guard !attempt.connecting, !attempt.stopped else { return false }
                attempt.connecting = true
                return true
            }
            guard start else { return }
            let connect = connect
            Thread.detachNewThread {
                let made = try? connect()
                let unwanted = handover.state.withLock { attempt -> PostgresFenceConnection? in
                    attempt.connecting = false
                    if attempt.stopped { return made }
                    attempt.made = made
                    attempt.failed = made == nil
                    return nil
                }
                unwanted?.close()
                handover.finished.store(true, ordering: .releasing)
            }
        }

        private func takeAttempt(now: UInt64) {
            handover.finished.store(false, ordering: .relaxed)
            let (made, failed) = handover.state.withLock { attempt -> (PostgresFenceConnection?, Bool) in
                defer {
                    attempt.made = nil
                    attempt.failed = false
                }
                return (attempt.made, attempt.failed)
            }
            if let made {
                connection = made
                serial &+= 1
                reconnectDelay = Self.firstReconnectDelay
            } else if failed {
                nextAttemptAt = now + reconnectDelay
                reconnectDelay = min(reconnectDelay * 2, Self.maxReconnectDelay)
            }
        }

        // MARK: Stopping

        /// Closes the connection for good, once the loop has ended (any thread). Requests still waiting read the
        /// database; an attempt to connect under way closes what it makes.
        public func stop() {
            let made = handover.state.withLock { attempt -> PostgresFenceConnection? in
                attempt.stopped = true
                defer { attempt.made = nil }
                return attempt.made
            }
            made?.close()
            connection?.close()
            connection = nil
            if current {
                current = false
                cache.loopEnded(number)
            }
            resume(fences.lost().failed, passed: false)
        }
    }

    /// A fence for the event loop running on the calling thread, registered for that thread: requests parked on it
    /// (``wait(_:)``) fence on the loop's own connection once it is current.
    ///
    /// - Parameter connect: Makes the loop's connection (blocking; called off the loop): a
    ///   `PostgresFenceConnection` listening on ``changeChannel``, past any pooler.
    public func makeLoopFence(connect: @escaping LoopFence.Connect) -> LoopFence {
        let number = guarded.withLock { state in
            state.lastLoopNumber += 1
            return state.lastLoopNumber
        }
        let loop = LoopFence(cache: self, number: number, connect: connect)
        loop.registerOnThisThread()
        return loop
    }

    /// How many loop fences are current (tests, and the server's start).
    public var currentLoopFences: Int {
        guarded.withLock { state in (1...max(1, state.lastLoopNumber)).filter { state.log.isCurrent($0) }.count }
    }

    /// Waits until `count` loop fences are current, or `limit` passed.
    public func waitForLoopFences(_ count: Int, upTo limit: Duration) {
        let deadline = ContinuousClock.now + limit
        while currentLoopFences < count, ContinuousClock.now < deadline {
            usleep(2_000)
        }
    }

    func loopFenceReturned(_ number: Int) {
        guarded.withLock { state in fenceReturned(on: number, &state) }
    }

    func loopLost(_ number: Int) {
        guarded.withLock { state in
            connectionLost(number, &state)
            state.statistics.loopConnectionsLost += 1
        }
    }

    func loopEnded(_ number: Int) {
        guarded.withLock { state in state.log.fenceTimedOut(on: number) }
    }

    func countFenceSent() {
        guarded.withLock { state in
            state.statistics.fencesSent += 1
            state.statistics.loopFencesSent += 1
        }
    }

    func countBypassed(_ count: Int) {
        guard count > 0 else { return }
        guarded.withLock { state in state.statistics.bypassed += count }
    }
}
