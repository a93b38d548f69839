import Dispatch
import FBSessionsCore
import HTTPServer
import Support

/// The rate limits of API keys (docs/api-contract.md, "Rate limits"): a token bucket per limited key, in this
/// process only. A key of limit N requests per second has a bucket of 2 × N tokens, full at first, that refills at N
/// tokens a second; a request takes one token, and a request that finds less than one is refused with 429
/// `rate_limited`.
///
/// One limiter serves the whole process, and every answer to a keyed request passes it once: the router's
/// ``RateLimitCheck`` (after ``KeyCheck``) and the answers given before the router, which call ``admit(_:)`` once
/// they have their response. A key without a limit costs a nil check: nothing is counted, locked or added.
///
/// Per instance: N instances together let a key make N times its limit; an operator who wants a cluster-wide limit
/// divides it by the number of instances.
///
/// Memory: one small bucket per limited key that made a request; past `capacity` buckets, the full ones (which a
/// new bucket would equal) are dropped, and if none is full, all of them.
/// Thread safety: one lock, held for the arithmetic of one bucket.
public final class RateLimiter: Sendable {
    /// A key's bucket: the tokens it held at `updated` (seconds of ``clock``), and the `RateLimit-Policy` field of
    /// the limit it was last used with, made once per limit rather than once per answer.
    struct Bucket {
        var tokens: Double
        var updated: Double
        var limit: Int
        var policyField: String

        init(limit: Int, now: Double) {
            tokens = Double(2 * limit)
            updated = now
            self.limit = limit
            policyField = RateLimitVerdict.policyField(limit: limit)
        }
    }

    private let buckets = Locked<[String: Bucket]>([:])
    private let clock: @Sendable () -> Double
    private let capacity: Int

    /// Seconds of a monotonic clock (the system's uptime): wall-clock steps never fill or empty a bucket.
    public static let monotonicSeconds: @Sendable () -> Double = {
        Double(DispatchTime.now().uptimeNanoseconds) / 1_000_000_000
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
        let now = clock()
        return buckets.withLock { buckets in
            if buckets.count >= capacity, buckets[keyID] == nil { prune(&buckets, now: now) }
            // One lookup: the bucket is changed in place (a new key's starts full).
            return Self.take(from: &buckets[keyID, default: Bucket(limit: limit, now: now)], now: now, limit: limit)
        }
    }

    private static func take(from bucket: inout Bucket, now: Double, limit: Int) -> RateLimitVerdict {
        if bucket.limit != limit {
            bucket.limit = limit
            bucket.policyField = RateLimitVerdict.policyField(limit: limit)
        }
        let rate = Double(limit)
        // A limit lowered since the bucket was filled caps it at the new burst at once.
        bucket.tokens = min(2 * rate, bucket.tokens + max(0, now - bucket.updated) * rate)
        // `now` was read before the lock: a thread that read it earlier must not move the bucket back in time.
        bucket.updated = max(bucket.updated, now)
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        return RateLimitVerdict(limit: limit, allowed: allowed, tokens: bucket.tokens, policyField: bucket.policyField)
    }

    private func prune(_ buckets: inout [String: Bucket], now: Double) {
        let before = buckets.count
        buckets = buckets.filter { _, bucket in now - bucket.updated < 2 }
        if buckets.count == before { buckets.removeAll(keepingCapacity: true) }
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

    init(limit: Int, allowed: Bool, tokens: Double, policyField: String? = nil) {
        self.limit = limit
        self.allowed = allowed
        self.tokens = tokens
        self.policyField = policyField ?? Self.policyField(limit: limit)
    }

    /// The `RateLimit-Policy` field of a limit of `limit` requests per second.
    static func policyField(limit: Int) -> String { "\"default\";q=\(2 * limit);w=2" }

    /// The bucket's size: 2 × the limit.
    public var burst: Int { 2 * limit }

    /// Whole requests left now.
    public var remaining: Int { max(0, Int(tokens.rounded(.down))) }

    /// Whole seconds until the bucket is full again (the draft's "reset": all of the quota available).
    public var reset: Int { max(0, Int(((Double(burst) - tokens) / Double(limit)).rounded(.up))) }

    /// Whole seconds until the next request is allowed, at least 1: `Retry-After` of a 429.
    public var retryAfter: Int {
        max(1, Int(((1 - tokens) / Double(limit)).rounded(.up)))
    }

    /// `RateLimit`: the requests left now and the seconds until the bucket is full, `"default";r=R;t=T`. Written
    /// byte by byte into the string's one allocation: it is made for every answer to a limited key, and string
    /// interpolation cost several times as much (docs/performance.md, "Rate limits").
    public var stateField: String {
        String(unsafeUninitializedCapacity: 48) { bytes in
            var count = 0
            func append(_ text: StaticString) {
                text.withUTF8Buffer { for byte in $0 { bytes[count] = byte; count += 1 } }
            }
            func append(_ number: Int) {
                let start = count
                var rest = number
                repeat {
                    bytes[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                    count += 1
                    rest /= 10
                } while rest > 0
                bytes[start..<count].reverse()
            }
            append("\"default\";r=")
            append(remaining)
            append(";t=")
            append(reset)
            return count
        }
    }

    /// Adds `RateLimit-Policy` and `RateLimit`.
    public func addFields(to headers: inout HTTPHeaders) {
        headers.add("RateLimit-Policy", policyField)
        headers.add("RateLimit", stateField)
    }

    /// The error of a refused request: 429 `rate_limited` with `Retry-After` and both fields.
    public var refusal: APIError {
        var error = APIError(
            429, .rateLimited,
            "This API key may make \(limit) requests per second on this instance (bursts of \(burst)); "
                + "retry after Retry-After seconds.")
        error.headers.add("Retry-After", String(retryAfter))
        addFields(to: &error.headers)
        return error
    }
}
