import FBSessionsCore
import Foundation
import GraphEmulator
import Testing
import TestSupport

/// The key set end to end: the emulator's key set over real HTTP (its `Cache-Control`, its rotation, its faults)
/// and the service's cache on a clock the test moves.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct LimitedLoginKeySetTests {
    /// A limited login of a new user for `owner`, minted by the current key unless `adjust` says otherwise.
    static func attempt(
        _ harness: LimitedLoginHarness, owner: String, _ adjust: (inout AuthenticationTokenRequest) -> Void = { _ in }
    ) async throws -> SessionHarness.Reply {
        let user = try harness.user("Person \(UUID().uuidString.prefix(6))")
        return try await harness.login(owner: owner, token: try harness.mint(user.id, nonce: try await harness.nonce(owner: owner), adjust))
    }

    @Test func keyRotationWhileRunning() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let oldToken = try harness.mint(user.id, nonce: try await harness.nonce(owner: "o1"))
        #expect(try await Self.attempt(harness, owner: "o0").status == 201)
        #expect(harness.emulator.callCount(.jwks) == 1)
        // Facebook rotates: a new key, the old one dropped from the set.
        try harness.emulator.rotateSigningKey(keepPrevious: false)
        // Within the minute the cache does not refetch: the new kid is unknown.
        let early = try await Self.attempt(harness, owner: "o2")
        #expect(early.status == 422 && (early.json["error"] as? [String: Any])?["reason"] as? String == "unknown_key")
        #expect(harness.emulator.callCount(.jwks) == 1)
        // A minute later the unknown kid refetches once and logs in.
        harness.clock.advance(61)
        #expect(try await Self.attempt(harness, owner: "o3").status == 201)
        #expect(harness.emulator.callCount(.jwks) == 2)
        // A token of the dropped key is refused now, without another fetch (the budget is spent).
        let stale = try await harness.login(owner: "o1", token: oldToken)
        #expect(stale.status == 422 && (stale.json["error"] as? [String: Any])?["reason"] as? String == "unknown_key")
        #expect(harness.emulator.callCount(.jwks) == 2)
        // A rotation that keeps the previous key: both kinds of token log in after the refetch.
        let kept = try harness.mint(try harness.user("Kept K").id, nonce: try await harness.nonce(owner: "o4"))
        try harness.emulator.rotateSigningKey(keepPrevious: true)
        #expect(harness.emulator.signingKeyIDs.count == 2)
        harness.clock.advance(61)
        #expect(try await Self.attempt(harness, owner: "o5").status == 201)
        #expect(try await harness.login(owner: "o4", token: kept).status == 201)
        #expect(harness.emulator.callCount(.jwks) == 3)
    }

    @Test func theKeySetsMaxAgeIsHonoured() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        harness.emulator.keySetMaxAge = 120
        let answer = try await harness.base.client.execute(.init(url: harness.emulator.limitedJWKSURL))
        #expect(answer.header("Cache-Control") == "public, max-age=120")
        harness.emulator.resetCounters()
        #expect(try await Self.attempt(harness, owner: "o1").status == 201)
        harness.clock.advance(100)
        #expect(try await Self.attempt(harness, owner: "o2").status == 201)
        #expect(harness.emulator.callCount(.jwks) == 1)
        // Past it, the known key still logs in at once, and the set is fetched again in the background.
        harness.clock.advance(30)
        #expect(try await Self.attempt(harness, owner: "o3").status == 201)
        try await Self.until { harness.emulator.callCount(.jwks) == 2 }
        // Without Cache-Control, an hour.
        harness.emulator.keySetMaxAge = nil
        harness.clock.advance(121)
        #expect(try await Self.attempt(harness, owner: "o4").status == 201)
        try await Self.until { harness.emulator.callCount(.jwks) == 3 }
        harness.clock.advance(3500)
        #expect(try await Self.attempt(harness, owner: "o5").status == 201)
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(harness.emulator.callCount(.jwks) == 3)
    }

    @Test func theKeySetDownWithACachedKey() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        #expect(try await Self.attempt(harness, owner: "o1").status == 201)
        // The key set fails every way from now on; the known key serves, past its max-age too.
        harness.emulator.injectFault(.httpStatus(500), endpoint: .jwks, count: 2)
        harness.emulator.injectFault(.dropConnection, endpoint: .jwks, count: 2)
        harness.emulator.injectFault(.malformedBody, endpoint: .jwks, count: 100)
        for step in 0..<4 {
            harness.clock.advance(step == 0 ? 3601 : 61)
            #expect(try await Self.attempt(harness, owner: "o2-\(step)").status == 201, "step \(step)")
        }
        // (libcurl may send a request again once when a reused connection drops, so "at least".)
        try await Self.until { harness.emulator.callCount(.jwks) >= 5 }
        // A kid the cache does not know cannot be had now: 503 with Retry-After, nothing stored.
        try harness.emulator.rotateSigningKey(keepPrevious: true)
        harness.clock.advance(61)
        let before = try await harness.footprint()
        let refused = try await Self.attempt(harness, owner: "o3")
        #expect(refused.status == 503 && refused.errorCode == "graph_unavailable", "\(refused.text)")
        let retry = try #require(refused.header("Retry-After").flatMap(Int.init))
        #expect((1...60).contains(retry))
        let after = try await harness.footprint()
        #expect(after[0] == before[0] && after[1] == before[1] && after[2] == before[2])
        // Back up: the next due fetch learns the new key.
        harness.emulator.clearFaults()
        harness.clock.advance(61)
        #expect(try await Self.attempt(harness, owner: "o4").status == 201)
    }

    @Test func theKeySetDownWithNoCachedKey() async throws {
        let harness = try await LimitedLoginHarness(fetchTimeout: .seconds(1))
        defer { harness.stop() }
        harness.emulator.setLatency(.seconds(3), for: .jwks)
        let started = ContinuousClock.now
        let slow = try await Self.attempt(harness, owner: "o1")
        #expect(slow.status == 503 && slow.errorCode == "graph_unavailable")
        #expect(ContinuousClock.now - started < .milliseconds(2500), "the fetch did not keep to its timeout")
        #expect(slow.header("Retry-After").flatMap(Int.init) == 60)
        // Within the minute: 503 at once, no new fetch.
        harness.clock.advance(20)
        let again = try await Self.attempt(harness, owner: "o1")
        #expect(again.status == 503 && again.header("Retry-After").flatMap(Int.init) == 40)
        #expect(harness.emulator.callCount(.jwks) == 1)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM sessions") == 0)
        // An error status, then a body that is no key set: 503 as well.
        harness.emulator.setLatency(.zero, for: .jwks)
        harness.emulator.injectFault(.httpStatus(503), endpoint: .jwks)
        harness.emulator.injectFault(.htmlPage, endpoint: .jwks)
        for _ in 0..<2 {
            harness.clock.advance(61)
            #expect(try await Self.attempt(harness, owner: "o1").status == 503)
        }
        harness.clock.advance(61)
        #expect(try await Self.attempt(harness, owner: "o1").status == 201)
    }

    @Test func concurrentMissesFetchTheSetOnce() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        harness.emulator.setLatency(.milliseconds(300), for: .jwks)
        var tokens: [(String, String)] = []
        for index in 0..<16 {
            let owner = "owner-\(index)"
            tokens.append((owner, try harness.mint(try harness.user("P \(index)").id, nonce: try await harness.nonce(owner: owner))))
        }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for (owner, token) in tokens {
                group.addTask { try await harness.login(owner: owner, token: token).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 16 && statuses.allSatisfy { $0 == 201 }, "\(statuses)")
        #expect(harness.emulator.callCount(.jwks) == 1)
    }
}
