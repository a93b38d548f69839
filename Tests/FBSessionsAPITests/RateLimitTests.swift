@testable import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import Foundation
import HTTPServer
@testable import RateLimiting
import Support
import Testing
import TestSupport

/// The rate limits of API keys (docs/api-contract.md, "Rate limits"): the token bucket on a clock moved by hand,
/// and the router's answers to limited and unlimited keys.
@Suite struct RateLimitTests {
    private static let app = App(
        id: "app_test", name: "test", facebookAppID: "1", redirectURIs: [], requiredPermissions: [], createdAt: Date())

    private static func caller(_ id: String = "k0000000000a", limit: Int?) -> Principal {
        Principal(
            key: APIKey(
                id: id, appID: app.id, scopes: [.sessions], createdAt: Date(), revokedAt: nil, rateLimit: limit),
            app: app)
    }

    private static func limiter(_ clock: ManualClock, capacity: Int = 100_000) -> RateLimiter {
        RateLimiter(clock: { clock.now.timeIntervalSinceReferenceDate }, capacity: capacity)
    }

    // MARK: The bucket

    @Test func aKeyWithoutALimitIsNeitherCountedNorAnswered() {
        let limiter = Self.limiter(ManualClock())
        for _ in 0..<1000 { #expect(limiter.admit(Self.caller(limit: nil)) == nil) }
    }

    @Test func aFullBucketTakesABurstOfTwiceTheLimitThenRefuses() throws {
        let clock = ManualClock()
        let limiter = Self.limiter(clock)
        let caller = Self.caller(limit: 5)
        for expected in (0..<10).reversed() {
            let verdict = try #require(limiter.admit(caller))
            #expect(verdict.allowed && verdict.remaining == expected)
            #expect(verdict.policyField == #""default";q=10;w=2"#)
            // The field this thread made last is reused only while it says the same.
            let taken = 10 - expected
            #expect(verdict.stateField == "\"default\";r=\(expected);t=\((taken + 4) / 5)")
        }
        let refused = try #require(limiter.admit(caller))
        #expect(!refused.allowed && refused.remaining == 0)
        #expect(refused.retryAfter == 1)
        #expect(refused.stateField == #""default";r=0;t=2"#)
        // Refused requests take nothing: still refused, still empty.
        #expect(limiter.admit(caller)?.allowed == false)
    }

    @Test func theBucketRefillsAtTheLimitUpToTheBurst() throws {
        // Steps of binary fractions of a second: the manual clock's dates add them exactly.
        let clock = ManualClock()
        let limiter = Self.limiter(clock)
        let caller = Self.caller(limit: 4)
        for _ in 0..<8 { #expect(limiter.admit(caller)?.allowed == true) }
        #expect(limiter.admit(caller)?.allowed == false)
        clock.advance(0.125)  // half a token
        let half = try #require(limiter.admit(caller))
        #expect(!half.allowed && half.retryAfter == 1)
        clock.advance(0.125)  // one token
        let one = try #require(limiter.admit(caller))
        #expect(one.allowed && one.remaining == 0)
        #expect(limiter.admit(caller)?.allowed == false)
        clock.advance(1)  // four tokens
        for _ in 0..<4 { #expect(limiter.admit(caller)?.allowed == true) }
        #expect(limiter.admit(caller)?.allowed == false)
        clock.advance(3600)  // never more than the burst
        let full = try #require(limiter.admit(caller))
        #expect(full.allowed && full.remaining == 7)
        #expect(full.stateField == #""default";r=7;t=1"#)
    }

    @Test func theFieldsAreWrittenDigitByDigitForEveryNumberOfDigits() {
        // The RateLimit field is written byte by byte: numbers of one digit, of several, with zeros inside, and the
        // largest a limit allows, each as decimal text.
        let limiter = RateLimiter(clock: { 0 })
        for (limit, remaining) in [(1, 1), (5, 9), (50, 99), (1_000_000, 1_999_999), (10_000, 19_999)] {
            let verdict = limiter.take(keyID: "key_\(limit)", limit: limit)
            #expect(verdict.stateField == "\"default\";r=\(remaining);t=1")
            #expect(verdict.policyField == "\"default\";q=\(2 * limit);w=2")
        }
        let zero = RateLimitVerdict(limit: 3, allowed: false, tokens: 0.25)
        #expect(zero.stateField == #""default";r=0;t=2"#)
        let wide = RateLimitVerdict(limit: 1, allowed: true, tokens: 1_000_000_007)
        #expect(wide.stateField == #""default";r=1000000007;t=0"#)
    }

    @Test func theFieldsSayWhatIsLeftAndWhenTheBucketIsFull() throws {
        let clock = ManualClock()
        let limiter = Self.limiter(clock)
        let caller = Self.caller(limit: 1)
        let first = try #require(limiter.admit(caller))
        #expect(first.allowed && first.burst == 2 && first.limit == 1)
        #expect(first.policyField == #""default";q=2;w=2"#)
        #expect(first.stateField == #""default";r=1;t=1"#)
        let second = try #require(limiter.admit(caller))
        #expect(second.stateField == #""default";r=0;t=2"#)
        var headers = HTTPHeaders()
        second.addFields(to: &headers)
        #expect(headers["RateLimit-Policy"] == #""default";q=2;w=2"#)
        #expect(headers["RateLimit"] == #""default";r=0;t=2"#)
        let refused = try #require(limiter.admit(caller))
        let error = refused.refusal
        #expect(error.status == 429 && error.code == .rateLimited)
        #expect(error.headers["Retry-After"] == "1")
        #expect(error.headers["RateLimit"] == #""default";r=0;t=2"#)
        #expect(error.headers["RateLimit-Policy"] == #""default";q=2;w=2"#)
        clock.advance(0.5)
        #expect(limiter.admit(caller)?.stateField == #""default";r=0;t=2"#)  // 0.5 of a token: 1.5 s to full
    }

    @Test func retryAfterIsWholeSecondsAndAtLeastOne() throws {
        let clock = ManualClock()
        let limiter = Self.limiter(clock)
        let caller = Self.caller(limit: 1000)
        for _ in 0..<2000 { #expect(limiter.admit(caller)?.allowed == true) }
        let refused = try #require(limiter.admit(caller))
        #expect(!refused.allowed && refused.retryAfter == 1)
        clock.advance(0.0005)
        #expect(limiter.admit(caller)?.retryAfter == 1)
    }

    @Test func eachKeyHasItsOwnBucketAndALoweredLimitCapsIt() throws {
        let clock = ManualClock()
        let limiter = Self.limiter(clock)
        let one = Self.caller("k0000000000a", limit: 1)
        let other = Self.caller("k0000000000b", limit: 1)
        for _ in 0..<2 { #expect(limiter.admit(one)?.allowed == true) }
        #expect(limiter.admit(one)?.allowed == false)
        #expect(limiter.admit(other)?.allowed == true)
        // A key at 10 per second (a bucket of 20), lowered to 1: at most 2 left at once.
        let fast = Self.caller("k0000000000c", limit: 10)
        #expect(limiter.admit(fast)?.remaining == 19)
        let slowed = Self.caller("k0000000000c", limit: 1)
        #expect(limiter.admit(slowed)?.remaining == 1)
        #expect(limiter.admit(slowed)?.remaining == 0)
        #expect(limiter.admit(slowed)?.allowed == false)
    }

    @Test func pastItsCapacityTheLimiterDropsFullBuckets() {
        let clock = ManualClock()
        let limiter = Self.limiter(clock, capacity: 2)
        #expect(limiter.admit(Self.caller("k0000000000a", limit: 1))?.allowed == true)
        #expect(limiter.admit(Self.caller("k0000000000b", limit: 1))?.allowed == true)
        clock.advance(2)  // both full again
        #expect(limiter.admit(Self.caller("k0000000000c", limit: 1))?.allowed == true)
        // The full ones are gone; a fresh bucket is what they were.
        #expect(limiter.admit(Self.caller("k0000000000a", limit: 1))?.remaining == 1)
    }


    @Test func threadsTakingFromOneBucketAtOnceGetExactlyTheBurst() {
        // The clock stands still: the bucket of 2,000 never refills, so however the threads interleave (each with its
        // own memo of the shared bucket), exactly 2,000 of the 8,000 requests are allowed.
        let limiter = RateLimiter(clock: { 1_000 })
        let caller = Self.caller(limit: 1_000)
        let allowed = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var mine = 0
            for _ in 0..<1_000 where limiter.admit(caller)?.allowed == true { mine += 1 }
            allowed.withLock { $0 += mine }
        }
        #expect(allowed.withLock { $0 } == 2_000)
        #expect(limiter.admit(caller)?.remaining == 0)
    }

    @Test func aBucketDroppedFromTheMapIsNotTakenFromAnyMore() throws {
        // This thread's memo holds k…a's bucket, half empty, when the map drops it (past a capacity of one, with
        // no full bucket to drop, all of them go): the next request of k…a starts a fresh bucket (1 left after it),
        // where the dropped one would have had none left.
        let limiter = Self.limiter(ManualClock(), capacity: 1)
        let a = Self.caller("k0000000000a", limit: 1)
        #expect(limiter.admit(a)?.remaining == 1)
        #expect(limiter.admit(Self.caller("k0000000000b", limit: 1))?.allowed == true)
        #expect(limiter.bucketCount == 1)
        #expect(limiter.admit(a)?.remaining == 1)
        #expect(limiter.admit(a)?.remaining == 0)
    }

    // MARK: The router

    private static func router(keys: InMemoryKeyStore, clock: ManualClock) throws -> Router {
        let probe = Route("GET", "/v1/probe/{what}", operationID: "probe", scope: .sessions, handler: .waiting { context in
            switch context.parameters["what"] ?? "" {
            case "missing": throw APIError(404, .sessionNotFound, "No such session.")
            case "unchanged": return Response(status: 304)
            default: return try JSONResponse.make(200, ["ok": true])
            }
        })
        return try ServiceRoutes.inMemory(keys: keys) { parts in
            parts.extraRoutes = [probe]
            parts.rateLimitClock = { clock.now.timeIntervalSinceReferenceDate }
        }.router
    }

    private static func get(_ router: Router, _ path: String, key: String) async -> Response {
        await RouteCaller.call(router, "GET", path, headers: ["Authorization": "Bearer \(key)"])
    }

    private static func errorCode(_ response: Response) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    @Test func aLimitedKeysEveryAnswerCarriesTheFieldsAndTheBurstEndsInA429() async throws {
        let keys = InMemoryKeyStore()
        let clock = ManualClock()
        let router = try Self.router(keys: keys, clock: clock)
        let key = try await keys.addKey(appID: "app_test", scopes: [.sessions], rateLimit: 2).text

        let ok = await Self.get(router, "/v1/probe/ok", key: key)
        #expect(ok.status == 200)
        #expect(ok.headers["RateLimit-Policy"] == #""default";q=4;w=2"#)
        #expect(ok.headers["RateLimit"] == #""default";r=3;t=1"#)
        let missing = await Self.get(router, "/v1/probe/missing", key: key)
        #expect(missing.status == 404 && Self.errorCode(missing) == "session_not_found")
        #expect(missing.headers["RateLimit"] == #""default";r=2;t=1"#)
        #expect(missing.headers["RateLimit-Policy"] == #""default";q=4;w=2"#)
        let unchanged = await Self.get(router, "/v1/probe/unchanged", key: key)
        #expect(unchanged.status == 304 && unchanged.headers["RateLimit"] == #""default";r=1;t=2"#)
        let last = await Self.get(router, "/v1/probe/ok", key: key)
        #expect(last.status == 200 && last.headers["RateLimit"] == #""default";r=0;t=2"#)

        let refused = await Self.get(router, "/v1/probe/ok", key: key)
        #expect(refused.status == 429 && Self.errorCode(refused) == "rate_limited")
        #expect(refused.headers["Retry-After"] == "1")
        #expect(refused.headers["RateLimit-Policy"] == #""default";q=4;w=2"#)
        #expect(refused.headers["RateLimit"] == #""default";r=0;t=2"#)
        #expect(refused.text.contains("request_id"))

        clock.advance(0.5)  // one token
        let again = await Self.get(router, "/v1/probe/ok", key: key)
        #expect(again.status == 200 && again.headers["RateLimit"] == #""default";r=0;t=2"#)
        #expect(await Self.get(router, "/v1/probe/ok", key: key).status == 429)
    }

    @Test func anUnlimitedKeyGetsNoFieldsAndIsNeverRefused() async throws {
        let keys = InMemoryKeyStore()
        let router = try Self.router(keys: keys, clock: ManualClock())
        let key = try await keys.addKey(appID: "app_test", scopes: [.sessions]).text
        for path in ["/v1/probe/ok", "/v1/probe/missing", "/v1/probe/unchanged"] {
            for _ in 0..<20 {
                let response = await Self.get(router, path, key: key)
                #expect([200, 304, 404].contains(response.status))
                #expect(response.headers["RateLimit"] == nil && response.headers["RateLimit-Policy"] == nil)
            }
        }
    }

    @Test func aKeyWithoutTheScopeIsCountedAndToldItsLimit() async throws {
        let keys = InMemoryKeyStore()
        let router = try Self.router(keys: keys, clock: ManualClock())
        let eventsOnly = try await keys.addKey(appID: "app_test", scopes: [.events], rateLimit: 1).text
        // A burst of 2: two 403s with the fields, then the limit's 429.
        for _ in 0..<2 {
            let forbidden = await Self.get(router, "/v1/probe/ok", key: eventsOnly)
            #expect(forbidden.status == 403 && forbidden.headers["RateLimit-Policy"] != nil)
            #expect(forbidden.headers["RateLimit"] != nil)
        }
        #expect(await Self.get(router, "/v1/probe/ok", key: eventsOnly).status == 429)
        // An unknown key is no limited key: 401, no fields.
        let unknown = await Self.get(router, "/v1/probe/ok", key: "fbs_knothing_xxxxxxxxxxxxxxxxxxxxxxxx")
        #expect(unknown.status == 401 && unknown.headers["RateLimit"] == nil)
        let limited = try await keys.addKey(appID: "app_test", scopes: [.sessions], rateLimit: 1)
        #expect(await Self.get(router, "/v1/probe/ok", key: limited.text).status == 200)
        // A limit changed at the store is what the next request uses (this store caches nothing).
        #expect(try await keys.setRateLimit(nil, keyID: limited.key.id)?.rateLimit == nil)
        for _ in 0..<5 {
            let free = await Self.get(router, "/v1/probe/ok", key: limited.text)
            #expect(free.status == 200 && free.headers["RateLimit"] == nil)
        }
    }

    // MARK: The operator's text

    @Test func rateTextsAreWholePositiveNumbersUpToAMillionOrNone() {
        func parsed(_ text: String) -> Int?? {
            if case .success(let rate) = APIKey.parseRateLimit(text) { return .some(rate) }
            return .none
        }
        #expect(parsed("1") == .some(1))
        #expect(parsed("1000000") == .some(1_000_000))
        #expect(parsed("none") == .some(nil))
        for bad in ["0", "-1", "1.5", "", "ten", "+5", "1000001", "99999999999999999999999", " 5", "1e3"] {
            #expect(parsed(bad) == .none, "\(bad)")
        }
    }
}
