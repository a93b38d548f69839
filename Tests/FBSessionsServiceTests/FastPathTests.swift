import FBSessionsCore
import FBSessionsStorage
import Foundation
import Testing
import TestSupport

/// The fast path (FBSessionsFastPath) over a real service: a hit is the route's own answer, and everything the fast
/// path does not answer (a query the route refuses, a key without the scope) is the router's, with the route's
/// errors. Exactness across instances is `ExactCacheAcrossInstancesTests`'s. They need a cache that holds their
/// entries, so they skip in `scripts/test`'s runs with no cache and with an evicting one.
@Suite(.enabled(if: TestDatabase.isEnabled && TestCache.configuredBytes >= 1 << 20), .serialized) struct FastPathTests {
    private static func hits(_ harness: SessionHarness) -> Int {
        harness.testCache.cache?.currentStatistics.hits ?? 0
    }

    @Test func aHitIsTheRoutesOwnAnswerByteForByte() async throws {
        let harness = try await SessionHarness(validateTTL: 300, keyCacheTTL: 3600)
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "fast-1", token: token)
        let id = try #require(login.json["id"] as? String)
        for path in ["/v1/sessions/\(id)?validate=never", "/v1/owners/fast-1/sessions"] {
            // The first read may fill the cache from the database; the next are answered from it.
            let fromDatabase = try await harness.call("GET", path)
            let before = Self.hits(harness)
            let fromCache = try await harness.call("GET", path)
            let again = try await harness.call("GET", path)
            #expect(Self.hits(harness) > before, "\(path): answered from the cache")
            #expect(fromDatabase.status == 200 && fromCache.status == 200 && again.status == 200)
            #expect(fromCache.body == fromDatabase.body, "\(path): the same bytes as the route's")
            #expect(again.body == fromCache.body, "\(path): the kept body")
        }
    }

    @Test func whatTheRouteRefusesTheRouterRefusesForACachedSession() async throws {
        let harness = try await SessionHarness(validateTTL: 300, keyCacheTTL: 3600)
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "fast-2", token: token)
        let id = try #require(login.json["id"] as? String)
        for _ in 0..<2 { _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=never") }
        #expect(harness.testCache.cache?.session(id: id, appID: harness.app.id) != nil, "the session is cached")

        let badMode = try await harness.call("GET", "/v1/sessions/\(id)?validate=sometimes")
        #expect(badMode.status == 400 && badMode.errorCode == "invalid_request", "\(badMode.text)")
        #expect(badMode.text.contains("validate"))
        let badQuery = try await harness.call("GET", "/v1/sessions/\(id)?validate=%zz")
        #expect(badQuery.status == 400 && badQuery.errorCode == "invalid_request")
        let badSize = try await harness.call("GET", "/v1/sessions/\(id)/picture?width=0")
        #expect(badSize.status == 400 && badSize.text.contains("width"), "\(badSize.text)")

        let tokensOnly = SecretsTranscript.noted(
            "api key", try await harness.service.keys.addKey(appID: harness.app.id, scopes: [.tokensRead]).text)
        for _ in 0..<2 {
            let forbidden = try await harness.call("GET", "/v1/sessions/\(id)?validate=never", key: tokensOnly)
            #expect(forbidden.status == 403 && forbidden.errorCode == "forbidden")
        }
        let unknown = try await harness.call("GET", "/v1/sessions/\(id)?validate=never", key: "fbs_k00000000000_nope")
        #expect(unknown.status == 401 && unknown.errorCode == "unauthorized")
    }

    @Test func answersFromTheCacheAreCountedUnderTheirRoute() async throws {
        let harness = try await SessionHarness(validateTTL: 300, keyCacheTTL: 3600)
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "fast-3", token: token)
        let id = try #require(login.json["id"] as? String)
        let before = Self.hits(harness)
        for _ in 0..<5 { _ = try await harness.call("GET", "/v1/sessions/\(id)?validate=never") }
        #expect(Self.hits(harness) > before)
        let metrics = try await harness.call("GET", "/metrics")
        let line = metrics.text.split(separator: "\n").first {
            $0.hasPrefix("fbs_http_requests_total{") && $0.contains(#"route="/v1/sessions/{id}""#)
                && $0.contains(#"method="GET""#) && $0.contains(#"status="200""#)
        }
        let count = line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        #expect(count >= 5, "\(line ?? "no line")")
    }
}
