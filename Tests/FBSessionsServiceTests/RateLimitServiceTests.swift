import FBSessionsCore
import FBSessionsStorage
import Foundation
import Postgres
import Support
import Testing
import TestSupport

/// Rate limits per key over a real service (docs/api-contract.md, "Rate limits"): the answers of the fast path count
/// against the same bucket as the router's and carry the same fields, and a limit changed through one instance is
/// what the other uses from its next request. Real PostgreSQL, real sockets.
@Suite(.enabled(if: TestDatabase.isEnabled), .serialized) struct RateLimitServiceTests {
    /// `RateLimit`'s value for a bucket of `limit` per second holding `remaining` whole tokens (none in part).
    private static func state(limit: Int, remaining: Int) -> String {
        let reset = Int((Double(2 * limit - remaining) / Double(limit)).rounded(.up))
        return "\"default\";r=\(remaining);t=\(reset)"
    }

    /// Needs a cache that holds its entries (the fast path answers only from it), as `FastPathTests` do.
    @Test(.enabled(if: TestCache.configuredBytes >= 1 << 20))
    func theFastPathsAnswersCountAgainstTheKeysBucketAndEndInA429() async throws {
        let clock = ManualClock()
        let harness = try await SessionHarness(validateTTL: 300, keyCacheTTL: 3600) { parts in
            parts.rateLimitClock = { clock.now.timeIntervalSinceReferenceDate }
        }
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "limited-1", token: token).json["id"] as? String)
        let status = "/v1/sessions/\(id)?validate=never"
        // The unlimited key fills the cache; its answers carry no fields.
        for _ in 0..<3 {
            let free = try await harness.call("GET", status)
            #expect(free.status == 200 && free.header("RateLimit") == nil && free.header("RateLimit-Policy") == nil)
        }
        let limited = SecretsTranscript.noted(
            "api key",
            try await harness.service.keys.addKey(appID: harness.app.id, scopes: [.sessions], rateLimit: 3).text)
        let hitsBefore = harness.testCache.cache?.currentStatistics.hits ?? 0
        // A bucket of 6: the first request fills the key cache through the router, the next are the fast path's.
        for remaining in (0..<6).reversed() {
            let reply = try await harness.call("GET", status, key: limited)
            #expect(reply.status == 200)
            #expect(reply.header("RateLimit-Policy") == #""default";q=6;w=2"#)
            #expect(reply.header("RateLimit") == Self.state(limit: 3, remaining: remaining), "\(remaining)")
        }
        #expect((harness.testCache.cache?.currentStatistics.hits ?? 0) > hitsBefore, "answered from the cache")
        let refused = try await harness.call("GET", status, key: limited)
        #expect(refused.status == 429 && refused.errorCode == "rate_limited")
        #expect(refused.header("Retry-After") == "1")
        #expect(refused.header("RateLimit") == Self.state(limit: 3, remaining: 0))
        #expect(refused.header("RateLimit-Policy") == #""default";q=6;w=2"#)
        // Another key is not affected.
        let other = try await harness.call("GET", status)
        #expect(other.status == 200 && other.header("RateLimit") == nil)

        // The owner's list, the fast path's too, takes from the same bucket.
        clock.advance(1)  // three tokens
        for remaining in (0..<3).reversed() {
            let listed = try await harness.call("GET", "/v1/owners/limited-1/sessions", key: limited)
            #expect(listed.status == 200 && listed.header("RateLimit") == Self.state(limit: 3, remaining: remaining))
        }
        let listRefused = try await harness.call("GET", "/v1/owners/limited-1/sessions", key: limited)
        #expect(listRefused.status == 429 && listRefused.errorCode == "rate_limited")
        #expect(try await harness.call("GET", status, key: limited).status == 429)
    }

    /// A limit changed from outside both instances (as `fbsessiond key update` does) is announced like a
    /// revocation: the other instance's next request uses it. Without an exact cache it would take up to
    /// FBS_KEY_CACHE_TTL (documented), so the test needs one.
    @Test(.enabled(if: TestCache.configuredBytes > 0))
    func aLimitChangedOutsideIsUsedByTheNextRequestOnTheOtherInstance() async throws {
        let harness = try await SessionHarness(validateTTL: 300, keyCacheTTL: 3600)
        defer { harness.stop() }
        let other = try await SecondInstance(harness, keyCacheTTL: 3600, validateTTL: harness.validateTTL)
        defer { other.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "limited-2", token: token).json["id"] as? String)
        let stored = PostgresKeyStore(database: Database(pool: harness.pool))
        let made = try await stored.addKey(appID: harness.app.id, scopes: [.sessions], rateLimit: 1000)
        let key = SecretsTranscript.noted("api key", made.text)
        let paths = [
            "/v1/sessions/\(id)?validate=never", "/v1/owners/limited-2/sessions",
            "/v1/sessions/ses_unknownunknownunknown1",
        ]
        // Instance B knows the key, its limit included, on every kind of path (cached answers and the router's).
        for path in paths {
            for _ in 0..<3 {
                let reply = try await other.call("GET", path, key: key)
                #expect([200, 404].contains(reply.status), "\(path) \(reply.status)")
                #expect(reply.header("RateLimit-Policy") == #""default";q=2000;w=2"#, "\(path)")
            }
        }
        #expect(try await stored.setRateLimit(5, keyID: made.key.id)?.rateLimit == 5)
        for path in paths {
            let reply = try await other.call("GET", path, key: key)
            #expect([200, 404].contains(reply.status), "\(path) \(reply.status)")
            #expect(reply.header("RateLimit-Policy") == #""default";q=10;w=2"#, "\(path) after the update")
        }
        #expect(try await stored.setRateLimit(nil, keyID: made.key.id)?.rateLimit == .some(nil))
        for path in paths {
            let reply = try await other.call("GET", path, key: key)
            #expect([200, 404].contains(reply.status), "\(path) \(reply.status)")
            #expect(reply.header("RateLimit-Policy") == nil && reply.header("RateLimit") == nil, "\(path) unlimited")
        }
        #expect(try await stored.setRateLimit(5, keyID: "k00000000000") == nil, "no such key")
    }
}

/// `fbsessiond key add --rate` and `key update --rate` as an operator uses them.
@Suite(.serialized) struct RateLimitCommandTests {
    @Test(.enabled(if: CommandLineTests.isEnabled && TestDatabase.isEnabled))
    func keyAddAndUpdateStoreTheRateAndRefuseBadValues() async throws {
        let url = try TestDatabase.createEmpty()
        defer { TestDatabase.drop(url) }
        let secretFile = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)")
        try "fb-app-secret-value\n".write(to: secretFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: secretFile) }
        let environment = [
            "DATABASE_URL": url, "FBS_ENCRYPTION_KEYS": "k1:" + Data(repeating: 7, count: 32).base64EncodedString(),
        ]
        let run = { @Sendable (arguments: [String]) throws -> CommandLineTests.Outcome in
            try CommandLineTests.run(arguments, environment: environment)
        }
        try await onThread {
            let help = try run(["key", "add", "--help"])
            #expect(help.status == 0 && help.output.contains("--rate N") && help.output.contains("PER INSTANCE"))
            #expect(try run(["migrate"]).status == 0)
            let app = ["app", "add", "--name", "shop", "--facebook-app-id", "12345", "--facebook-app-secret-file", secretFile.path]
            #expect(try run(app).status == 0)
            for bad in ["0", "-3", "1.5", "ten", "1000001", "99999999999999999999"] {
                let refused = try run(["key", "add", "--app", "shop", "--rate", bad])
                #expect(refused.status == 2, "--rate \(bad)")
                #expect(refused.errors.contains("--rate"), "--rate \(bad)")
            }
            #expect(try run(["key", "list"]).output.isEmpty, "no key was made")

            let added = try run(["key", "add", "--app", "shop", "--rate", "5"])
            #expect(added.status == 0)
            _ = SecretsTranscript.noted("api key", added.lastLine)
            let described = added.output.split(separator: "\n").first.map(String.init) ?? ""
            #expect(described.contains("rate 5/s per instance (burst 10)"))
            let keyID = try #require(described.wholeMatch(of: #/key id: (k[0-9a-f]{11}) .*/#).map { String($0.1) })
            #expect(try run(["key", "list"]).output.contains("\(keyID)\tapp_"))
            #expect(try run(["key", "list"]).output.contains("rate 5/s per instance"))

            let updated = try run(["key", "update", keyID, "--rate", "7"])
            #expect(updated.status == 0 && updated.output.contains("rate 7/s per instance (burst 14)"))
            #expect(updated.output.contains("per instance"))
            #expect(try run(["key", "list"]).output.contains("rate 7/s per instance"))
            for bad in ["0", "-1", "2.5", "2000000"] {
                let refused = try run(["key", "update", keyID, "--rate", bad])
                #expect(refused.status == 2 && refused.errors.contains("--rate"), "--rate \(bad)")
            }
            #expect(try run(["key", "update", keyID]).status == 2, "no --rate")
            let unknown = try run(["key", "update", "k00000000000", "--rate", "3"])
            #expect(unknown.status == 1 && unknown.errors.contains("no key with id k00000000000"))
            #expect(try run(["key", "list"]).output.contains("rate 7/s per instance"), "unchanged by the refusals")

            let cleared = try run(["key", "update", keyID, "--rate", "none"])
            #expect(cleared.status == 0 && cleared.output.contains("rate unlimited"))
            #expect(try run(["key", "list"]).output.contains("rate unlimited"))
            let plain = try run(["key", "add", "--app", "shop"])
            _ = SecretsTranscript.noted("api key", plain.lastLine)
            #expect(plain.status == 0 && plain.output.contains("rate unlimited"))
        }
    }
}
