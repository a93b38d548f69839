import Crypto
import FBSessionsCore
import Foundation
import Support
import Testing
import TestSupport

/// A key set source the test scripts: the answers it gives, how long each takes, and how often it was asked.
final class ScriptedKeySource: LimitedLoginAPI, Sendable {
    private struct State {
        var answers: [Result<SigningKeyFetch, any Error>] = []
        var fallback: Result<SigningKeyFetch, any Error>
        var calls = 0
        var delay: UInt64 = 0
    }

    private let state: Locked<State>

    /// How long each answer takes, in nanoseconds.
    var delay: UInt64 {
        get { state.withLock { $0.delay } }
        set { state.withLock { $0.delay = newValue } }
    }

    init(_ fallback: Result<SigningKeyFetch, any Error>) {
        state = Locked(State(fallback: fallback))
    }

    /// Answers with `result` from now on.
    func answer(_ result: Result<SigningKeyFetch, any Error>) {
        state.withLock { $0.fallback = result }
    }

    func signingKeys() async throws -> SigningKeyFetch {
        let (result, delay): (Result<SigningKeyFetch, any Error>, UInt64) = state.withLock { state in
            state.calls += 1
            return (state.answers.isEmpty ? state.fallback : state.answers.removeFirst(), state.delay)
        }
        if delay > 0 { try? await Task.sleep(nanoseconds: delay) }
        return try result.get()
    }

    func uninstall(authenticationToken: String, facebookAppID: String) async throws {}

    var callCount: Int { state.withLock { $0.calls } }
}

struct KeySetDown: Error {}

/// The key-set cache's rules, on a clock the test moves: max-age, one refetch a minute for unknown `kid`s (failed
/// fetches included), one fetch for concurrent misses, known keys kept when a refetch fails.
@Suite struct SigningKeyCacheTests {
    static let keys: [RSAPublicKey] = (0..<3).compactMap { _ in try? RSAPrivateKey.generate().publicKey }

    static func set(_ entries: [String: Int], maxAge: Double? = nil) -> Result<SigningKeyFetch, any Error> {
        .success(SigningKeyFetch(keys: JSONWebKeySet(keys: entries.mapValues { keys[$0] }), maxAge: maxAge))
    }

    @Test func keysAreKeptForTheMaxAgeAndRefreshedInTheBackgroundAfter() async throws {
        let clock = ManualClock()
        let source = ScriptedKeySource(Self.set(["a": 0], maxAge: 120))
        let cache = SigningKeyCache(source: source, clock: { clock.now })
        #expect(try await cache.key(for: "a")?.modulus == Self.keys[0].modulus)
        clock.advance(119)
        #expect(try await cache.key(for: "a") != nil)
        #expect(source.callCount == 1)
        // Past the max-age the known key still serves at once; a refresh runs meanwhile.
        source.answer(Self.set(["a": 0, "b": 1], maxAge: 120))
        clock.advance(2)
        #expect(try await cache.key(for: "a") != nil)
        try await Self.until { source.callCount == 2 }
        try await Self.until { cache.fetchCount == 2 }
        #expect(try await cache.key(for: "b") != nil)  // learned by the background refresh
        #expect(source.callCount == 2)
    }

    @Test func anUnknownKidRefetchesAtMostOnceAMinuteWhateverTheKid() async throws {
        let clock = ManualClock()
        let source = ScriptedKeySource(Self.set(["a": 0]))
        let cache = SigningKeyCache(source: source, clock: { clock.now })
        #expect(try await cache.key(for: "a") != nil)
        clock.advance(61)
        #expect(try await cache.key(for: "x") == nil)  // refetched: still unknown
        #expect(source.callCount == 2)
        for kid in ["y", "z", "x", "w"] {
            clock.advance(10)
            #expect(try await cache.key(for: kid) == nil)
        }
        #expect(source.callCount == 2)  // one budget for all kids
        source.answer(Self.set(["a": 0, "w": 1]))
        clock.advance(21)  // 61 s since the last fetch
        #expect(try await cache.key(for: "w")?.modulus == Self.keys[1].modulus)
        #expect(source.callCount == 3)
    }

    @Test func aSuccessfulFetchReplacesTheSet() async throws {
        let clock = ManualClock()
        let source = ScriptedKeySource(Self.set(["a": 0]))
        let cache = SigningKeyCache(source: source, clock: { clock.now })
        #expect(try await cache.key(for: "a") != nil)
        source.answer(Self.set(["b": 1]))
        clock.advance(61)
        #expect(try await cache.key(for: "b") != nil)
        #expect(try await cache.key(for: "a") == nil)  // Facebook dropped it: so does the cache
    }

    @Test func aFailedRefetchKeepsTheKnownKeysAndSpendsTheBudget() async throws {
        let clock = ManualClock()
        let source = ScriptedKeySource(Self.set(["a": 0], maxAge: 60))
        let cache = SigningKeyCache(source: source, clock: { clock.now })
        #expect(try await cache.key(for: "a") != nil)
        source.answer(.failure(KeySetDown()))
        clock.advance(61)
        // An unknown kid: the refetch fails, so the answer is "unavailable", with the wait until the next try.
        await #expect(throws: SigningKeyError.unavailable(retryAfter: 60)) { _ = try await cache.key(for: "b") }
        #expect(source.callCount == 2)
        clock.advance(15)
        await #expect(throws: SigningKeyError.unavailable(retryAfter: 45)) { _ = try await cache.key(for: "b") }
        #expect(source.callCount == 2)
        // The known key, past its max-age, keeps working through the outage.
        for _ in 0..<5 {
            clock.advance(30)
            #expect(try await cache.key(for: "a") != nil)
            try await Task.sleep(nanoseconds: 50_000_000)  // let a background refresh finish before time moves on
        }
        #expect(cache.fetchCount == 4)  // background refreshes, one a minute
        try await Self.until { source.callCount == 4 }
        try await Task.sleep(nanoseconds: 50_000_000)  // the last refresh's failure recorded
        // Back up: the next due fetch learns b.
        source.answer(Self.set(["a": 0, "b": 1], maxAge: 60))
        clock.advance(61)
        #expect(try await cache.key(for: "b") != nil)
    }

    @Test func withNoKeyAndTheSetDownTheAnswerIsUnavailable() async throws {
        let clock = ManualClock()
        let source = ScriptedKeySource(.failure(KeySetDown()))
        let cache = SigningKeyCache(source: source, clock: { clock.now })
        await #expect(throws: SigningKeyError.unavailable(retryAfter: 60)) { _ = try await cache.key(for: "a") }
        clock.advance(59.5)
        await #expect(throws: SigningKeyError.unavailable(retryAfter: 1)) { _ = try await cache.key(for: "a") }
        #expect(source.callCount == 1)
        source.answer(Self.set(["a": 0]))
        clock.advance(1)
        #expect(try await cache.key(for: "a") != nil)
        #expect(source.callCount == 2)
    }

    @Test func concurrentMissesShareOneFetch() async throws {
        let source = ScriptedKeySource(Self.set(["a": 0, "b": 1]))
        source.delay = 200_000_000
        let cache = SigningKeyCache(source: source)
        let found = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                group.addTask { (try? await cache.key(for: index % 2 == 0 ? "a" : "b")) != nil }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(found == 40)
        #expect(source.callCount == 1)
    }

    @Test func maxAgeIsBoundedAndDefaulted() async throws {
        let clock = ManualClock()
        let source = ScriptedKeySource(Self.set(["a": 0], maxAge: 10 * 86_400))
        let cache = SigningKeyCache(source: source, clock: { clock.now })
        _ = try await cache.key(for: "a")
        clock.advance(86_400 + 1)  // a day at most, whatever the set says
        _ = try await cache.key(for: "a")
        try await Self.until { source.callCount == 2 }
        let defaulted = ScriptedKeySource(Self.set(["a": 0], maxAge: nil))
        let other = SigningKeyCache(source: defaulted, clock: { clock.now })
        _ = try await other.key(for: "a")
        clock.advance(3599)
        _ = try await other.key(for: "a")
        try await Task.sleep(nanoseconds: 50_000_000)
        #expect(defaulted.callCount == 1)  // an hour when the set names no max-age
        clock.advance(2)
        _ = try await other.key(for: "a")
        try await Self.until { defaulted.callCount == 2 }
    }

    /// Waits (up to 5 s) for a background fetch to be seen.
    static func until(_ condition: () -> Bool) async throws {
        for _ in 0..<500 where !condition() {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(condition())
    }
}
