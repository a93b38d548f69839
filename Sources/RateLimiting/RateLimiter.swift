#if canImport(Glibc)
import Glibc
#endif
import FBSessionsCore
import HTTPServer
import Support
import Synchronization

/// The rate limits of API keys (docs/api-contract.md, "Rate limits"): a token bucket per limited key, in this
/// process only. A key of limit N requests per second has a bucket of 2 × N tokens, full at first, that refills at N
/// tokens a second; a request takes one token, and a request that finds less than one is refused with 429
/// `rate_limited`.
///
/// One limiter serves the whole process, and every answer to a keyed request passes it once: the router's
/// `RateLimitCheck` (FBSessionsAPI, after `KeyCheck`) and the fast path's answers, which call ``admit(_:)`` once
/// they have their response. A module of its own: its per-thread memo is a speed measure the API and the domain do
/// not need to know of (docs/architecture.md). A key without a limit costs a nil check: nothing is counted, locked
/// or added.
///
/// Per instance: N instances together let a key make N times its limit; an operator who wants a cluster-wide limit
/// divides it by the number of instances.
///
/// How a bucket is kept (docs/performance.md, "Rate limits"): as one number, the moment it will be full again (the
/// "theoretical arrival time" of the generic cell rate algorithm, which is this token bucket written differently),
/// changed by one compare-and-swap. Every event loop takes from the same bucket, and a lock and a dictionary shared
/// by two cores cost a limited request more than the arithmetic: so each thread finds a key's bucket in a memo of
/// its own (``Memo``), and the shared map, under its lock, is read only when the memo does not have the key.
///
/// Memory: one small bucket per limited key that made a request; past `capacity` buckets, the full ones (which a
/// new bucket would equal) are dropped, and if none is full, all of them; the memos follow (``generation``).
/// Thread safety: the map under one lock; a bucket's moment is atomic; a memo is its thread's alone.
public final class RateLimiter: Sendable {
    /// A key's bucket, shared by every thread: the limit it counts, and the moment (nanoseconds of ``clock``) at which
    /// it is full again; at or before `now`, it is full. It holds 2 × limit − (fullAt − now) / interval tokens.
    final class Bucket: Sendable {
        let limit: Int
        /// Nanoseconds per token: 1 s / limit.
        let interval: UInt64
        /// The `RateLimit-Policy` field of the limit, made once per bucket rather than once per answer.
        let policyField: String
        let fullAt: Atomic<UInt64>

        /// A bucket holding `tokens` at `now` (capped at the burst): full, for a new key.
        init(limit: Int, holding tokens: Double, at now: UInt64) {
            self.limit = limit
            interval = 1_000_000_000 / UInt64(limit)
            policyField = RateLimitVerdict.policyField(limit: limit)
            let missing = Double(2 * limit) - min(Double(2 * limit), tokens)
            fullAt = Atomic(now + UInt64((missing * Double(interval)).rounded(.up)))
        }

        /// Nanoseconds from empty to full: 2 × limit tokens.
        var window: UInt64 { 2 * UInt64(limit) * interval }

        /// The tokens held at `now`, when the bucket is full at `fullAt`.
        func tokens(at now: UInt64, fullAt: UInt64) -> Double {
            Double(2 * limit) - Double(fullAt > now ? fullAt - now : 0) / Double(interval)
        }

        /// Takes a token if there is one: whether it did, and the tokens left. A refused request changes nothing.
        func take(at now: UInt64) -> (allowed: Bool, tokens: Double) {
            var current = fullAt.load(ordering: .relaxed)
            while true {
                let ahead = current > now ? current - now : 0
                guard ahead + interval <= window else { return (false, tokens(at: now, fullAt: current)) }
                let next = max(current, now) + interval
                let (exchanged, found) = fullAt.compareExchange(
                    expected: current, desired: next, ordering: .relaxed)
                if exchanged { return (true, tokens(at: now, fullAt: next)) }
                current = found
            }
        }
    }

    /// A thread's buckets of one limiter, found without the lock: the key it asked for last, then the others by id.
    final class Memo {
        @exclusivity(unchecked) var limiter: UInt64 = 0
        @exclusivity(unchecked) var generation: UInt64 = 0
        @exclusivity(unchecked) var last: Entry?
        @exclusivity(unchecked) var entries: [String: Entry] = [:]
    }

    /// A key's bucket as one thread holds it. Reaching the bucket through `bucket` counts no reference on it (the
    /// entry's `owner` keeps it alive), and the `policyField` is the thread's own copy: an answer then touches no
    /// reference count that the other threads touch too, only the bucket's moment.
    final class Entry {
        let keyID: String
        let owner: Bucket
        unowned(unsafe) let bucket: Bucket
        let policyField: String
        /// The last `RateLimit` field made for the key on this thread, and what it says. A key under its limit keeps
        /// a full bucket, so the field is the same answer after answer, and making the string was most of the
        /// fields' cost.
        @exclusivity(unchecked) var stateField = ""
        @exclusivity(unchecked) var stateSays = (remaining: -1, reset: -1)

        init(keyID: String, bucket: Bucket) {
            self.keyID = keyID
            owner = bucket
            self.bucket = bucket
            policyField = String(decoding: Array(bucket.policyField.utf8), as: UTF8.self)
        }
    }

    private static let memos = PerThread { Memo() }
    private static let serials = Atomic<UInt64>(0)

    /// Which limiter a memo belongs to (tests make many).
    private let serial = RateLimiter.serials.add(1, ordering: .relaxed).newValue
    /// Moves on each time the map drops buckets: a memo of an older generation may hold a dropped one, and is emptied.
    private let generation = Atomic<UInt64>(0)
    private let buckets = Locked<[String: Bucket]>([:])
    private let clock: @Sendable () -> Double
    private let capacity: Int

    /// Seconds of a monotonic clock: wall-clock steps never fill or empty a bucket. Read with `clock_gettime`
    /// directly, at half the cost of `DispatchTime.now()`; not the coarse clock, which is cheaper still but a few
    /// milliseconds behind, so that every request of a tick found its bucket less full than it was and the `RateLimit`
    /// field changed from one answer to the next.
    public static let monotonicSeconds: @Sendable () -> Double = {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// A limiter.
    ///
    /// - Parameters:
    ///   - clock: Seconds of a monotonic clock; tests pass a manual one.
    ///   - capacity: How many buckets it keeps before it drops the full ones.
    public init(clock: @escaping @Sendable () -> Double = RateLimiter.monotonicSeconds, capacity: Int = 100_000) {
        self.clock = clock
        self.capacity = max(1, capacity)
    }

    /// Counts one request of the caller: nil when its key has no limit (then the answer carries no rate-limit
    /// fields), else whether it may go on, with the fields every answer to it carries.
    public func admit(_ caller: Principal) -> RateLimitVerdict? {
        // Read in place: a copy of the whole key would retain each of its strings.
        guard let limit = caller.key.rateLimit else { return nil }
        return take(keyID: caller.key.id, limit: limit)
    }

    /// Takes a token from the bucket of a key of `limit` requests per second.
    func take(keyID: String, limit: Int) -> RateLimitVerdict {
        let now = UInt64(max(0, clock() * 1_000_000_000))
        let entry = memoEntry(keyID: keyID, limit: limit, now: now)
        let (allowed, tokens) = entry.bucket.take(at: now)
        let says = (remaining: RateLimitVerdict.remaining(tokens), reset: RateLimitVerdict.reset(tokens, limit: limit))
        if says != entry.stateSays {
            entry.stateField = RateLimitVerdict.stateField(remaining: says.remaining, reset: says.reset)
            entry.stateSays = says
        }
        return RateLimitVerdict(
            limit: limit, allowed: allowed, tokens: tokens,
            policyField: entry.policyField, stateField: entry.stateField)
    }

    /// This thread's entry for the key, from its memo, or from the shared map (then remembered).
    private func memoEntry(keyID: String, limit: Int, now: UInt64) -> Entry {
        let memo = Self.memos.value
        let generation = generation.load(ordering: .acquiring)
        if memo.limiter != serial || memo.generation != generation {
            memo.limiter = serial
            memo.generation = generation
            memo.last = nil
            memo.entries.removeAll()
        }
        if let last = memo.last, last.keyID == keyID, last.bucket.limit == limit { return last }
        if let known = memo.entries[keyID], known.bucket.limit == limit {
            memo.last = known
            return known
        }
        let entry = Entry(keyID: keyID, bucket: shared(keyID: keyID, limit: limit, now: now))
        memo.entries[keyID] = entry
        memo.last = entry
        return entry
    }

    /// The key's bucket from the shared map, made full for a new key. A key whose limit changed gets a new bucket
    /// holding what the old one held, capped at the new burst.
    private func shared(keyID: String, limit: Int, now: UInt64) -> Bucket {
        buckets.withLock { buckets in
            if let bucket = buckets[keyID], bucket.limit == limit { return bucket }
            var held = Double(2 * limit)
            if let old = buckets[keyID] {
                held = old.tokens(at: now, fullAt: old.fullAt.load(ordering: .relaxed))
            } else if buckets.count >= capacity {
                prune(&buckets, now: now)
            }
            let bucket = Bucket(limit: limit, holding: held, at: now)
            buckets[keyID] = bucket
            return bucket
        }
    }

    private func prune(_ buckets: inout [String: Bucket], now: UInt64) {
        let before = buckets.count
        buckets = buckets.filter { _, bucket in bucket.fullAt.load(ordering: .relaxed) > now }
        if buckets.count == before { buckets.removeAll(keepingCapacity: true) }
        generation.add(1, ordering: .releasing)
    }

    /// The number of buckets kept (tests).
    var bucketCount: Int { buckets.withLock { $0.count } }
}

/// What the limiter said of one request of a limited key, and the fields of draft-ietf-httpapi-ratelimit-headers-10
/// that every answer to it carries.
public struct RateLimitVerdict: Sendable, Equatable {
    /// The key's limit, requests per second.
    public let limit: Int
    /// Whether the request may go on.
    public let allowed: Bool
    /// The tokens left in the bucket after this request (fractions included).
    let tokens: Double

    /// `RateLimit-Policy`: the quota of a full bucket over the time it takes to fill an empty one (2 × N requests
    /// in 2 seconds). The limiter keeps it with the bucket: it changes only with the limit.
    public let policyField: String

    /// `RateLimit`: the requests left now and the seconds until the bucket is full, `"default";r=R;t=T`.
    public let stateField: String

    init(limit: Int, allowed: Bool, tokens: Double, policyField: String? = nil, stateField: String? = nil) {
        self.limit = limit
        self.allowed = allowed
        self.tokens = tokens
        self.policyField = policyField ?? Self.policyField(limit: limit)
        self.stateField =
            stateField ?? Self.stateField(remaining: Self.remaining(tokens), reset: Self.reset(tokens, limit: limit))
    }

    /// The `RateLimit-Policy` field of a limit of `limit` requests per second.
    static func policyField(limit: Int) -> String { "\"default\";q=\(2 * limit);w=2" }

    /// The bucket's size: 2 × the limit.
    public var burst: Int { 2 * limit }

    /// Whole requests left now.
    public var remaining: Int { Self.remaining(tokens) }

    /// Whole seconds until the bucket is full again (the draft's "reset": all of the quota available).
    public var reset: Int { Self.reset(tokens, limit: limit) }

    /// Whole seconds until the next request is allowed, at least 1: `Retry-After` of a 429.
    public var retryAfter: Int {
        max(1, Int(((1 - tokens) / Double(limit)).rounded(.up)))
    }

    static func remaining(_ tokens: Double) -> Int { max(0, Int(tokens.rounded(.down))) }

    static func reset(_ tokens: Double, limit: Int) -> Int {
        max(0, Int(((Double(2 * limit) - tokens) / Double(limit)).rounded(.up)))
    }

    /// The `RateLimit` field saying `remaining` and `reset`. Written byte by byte into the string's one allocation:
    /// string interpolation cost several times as much (docs/performance.md, "Rate limits").
    static func stateField(remaining: Int, reset: Int) -> String {
        String(unsafeUninitializedCapacity: 64) { bytes in
            var count = write(#""default";r="#, into: bytes, at: 0)
            count = write(remaining, into: bytes, at: count)
            count = write(";t=", into: bytes, at: count)
            return write(reset, into: bytes, at: count)
        }
    }

    /// Copies `text` into `bytes` from `start`; returns where it ended.
    private static func write(
        _ text: StaticString, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int
    ) -> Int {
        let count = text.utf8CodeUnitCount
        UnsafeMutableRawPointer(bytes.baseAddress! + start).copyMemory(from: text.utf8Start, byteCount: count)
        return start + count
    }

    /// Writes `number` (not negative) in decimal into `bytes` from `start`; returns where it ended.
    private static func write(_ number: Int, into bytes: UnsafeMutableBufferPointer<UInt8>, at start: Int) -> Int {
        var digits = 1
        var scale = 10
        while digits < 19, number >= scale {
            digits += 1
            scale &*= 10
        }
        var rest = number
        var at = start + digits
        repeat {
            at -= 1
            bytes[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while at > start
        return start + digits
    }

    /// Adds `RateLimit-Policy` and `RateLimit`.
    public func addFields(to headers: inout HTTPHeaders) {
        headers.add("RateLimit-Policy", policyField)
        headers.add("RateLimit", stateField)
    }

}
