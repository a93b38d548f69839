import FBSessionsAPI
import FBSessionsCore
import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// A key store whose every lookup comes "from the cache" (unconfirmed), and which counts the confirmations the
/// router asks for (`isLive`).
private final class CountingKeyStore: KeyStore, Sendable {
    let base = InMemoryKeyStore()
    private struct State {
        var asked = 0
        var live = true
        var failing = false
        /// What the stand-in cache "knows" under a pass.
        var knownLiveUnderPass = true
    }

    private let state = Locked(State())

    var confirmations: Int { state.withLock { $0.asked } }

    func revokeAll() {
        state.withLock { $0.live = false }
    }

    func addKey(appID: String, scopes: [Scope]) async throws -> (key: APIKey, text: String) {
        try await base.addKey(appID: appID, scopes: scopes)
    }

    func keys(appID: String?) async throws -> [APIKey] {
        try await base.keys(appID: appID)
    }

    func revokeKey(id: String) async throws -> Bool {
        try await base.revokeKey(id: id)
    }

    func authenticate(_ presented: String) async throws -> Principal? {
        try await base.authenticate(presented)
    }

    func lookup(_ presented: String) async throws -> KeyLookup? {
        try await base.authenticate(presented).map { KeyLookup(principal: $0, isConfirmed: false) }
    }

    func isLive(keyID: String) async throws -> Bool {
        try state.withLock { state in
            state.asked += 1
            if state.failing { throw ServiceError.databaseUnavailable }
            return state.live
        }
    }

    func failConfirmations() {
        state.withLock { $0.failing = true }
    }

    // The exact cache's side, for the parked path: a fence the test answers, and what it "knows" under a pass
    // (`State.knownLiveUnderPass`).
    let manualFence = ManualFence()

    var fence: (any RequestFence)? { manualFence }

    func cachedPrincipal(_ presented: String) -> Principal? {
        // The in-memory base answers synchronously behind its async signature; a test stand-in for the cache.
        base.principal(presented)
    }

    func knownLive(keyID: String, pass: FencePass) -> Bool {
        pass.covers(manualFence) && state.withLock { $0.knownLiveUnderPass && $0.live }
    }

    func forgetLiveness() {
        state.withLock { $0.knownLiveUnderPass = false }
    }
}

/// A fence that parks its waiters until the test lets them through.
final class ManualFence: RequestFence, Sendable {
    private struct State {
        var parked: [@Sendable (FencePass?) -> Void] = []
        var count = 0
    }

    private let state = Locked(State())

    var waits: Int { state.withLock { $0.count } }

    func wait(_ resume: @escaping @Sendable (FencePass?) -> Void) {
        state.withLock { state in
            state.count += 1
            state.parked.append(resume)
        }
    }

    /// Answers every parked waiter: with a pass of this fence, or nil (the cache cannot vouch for itself).
    func release(passing: Bool) {
        let waiting = state.withLock { state -> [@Sendable (FencePass?) -> Void] in
            defer { state.parked = [] }
            return state.parked
        }
        for resume in waiting { resume(passing ? FencePass(issuer: self) : nil) }
    }

    /// Waits until `n` waiters are parked.
    func awaitParked(_ n: Int) async {
        while state.withLock({ $0.parked.count }) < n { await Task.yield() }
    }
}

/// A route that counts its runs.
private final class Runs: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

private func makeRouter(keys: CountingKeyStore, runs: Runs, fromCache: Response? = nil) -> Router {
    let counted = Route(
        "GET", "/v1/counted", operationID: "counted", scope: .sessions,
        body: .waiting { _ in
            runs.add()
            return Response(status: 204)
        })
    // The same, with an answer from the exact cache (nil: not cached).
    let cached = Route(
        "GET", "/v1/cached", operationID: "cached", scope: .sessions,
        cached: { context, pass, _ in
            #expect(context.principal != nil, "the key is confirmed before the cache answers")
            #expect(keys.knownLive(keyID: context.principal?.key.id ?? "", pass: pass))
            return fromCache
        },
        body: .waiting { _ in
            runs.add()
            return Response(status: 204)
        })
    // The same, for what the cache does not hold: asked before the fence, it says the cache cannot answer.
    let notHeld = Route(
        "GET", "/v1/not-held", operationID: "notHeld", scope: .sessions,
        cached: { _, _, _ in
            Issue.record("a route whose answer is not held never waits for the cache")
            return nil
        },
        cacheHint: { context in
            #expect(context.principal != nil)
            return nil
        },
        body: .waiting { _ in
            runs.add()
            return Response(status: 204)
        })
    return Router(
        routes: [counted, cached, notHeld], keys: keys,
        observer: Observer(metrics: MetricsRegistry(), logger: Logger(label: "http", handler: InMemoryLogHandler())))
}

private func errorCode(_ response: Response) -> String? {
    let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    return (object?["error"] as? [String: Any])?["code"] as? String
}

/// A key whose app and scopes came from the cache is confirmed live before its handler runs (docs/caching.md):
/// through ``KeyStore/isLive(keyID:)``, which the exact cache answers when it can.
@Suite struct KeyConfirmationTests {
    /// A key store, a key with `scopes`, and a router over the counted routes.
    private static func setUp(scopes: [Scope], fromCache: Response? = nil) async throws
        -> (CountingKeyStore, (key: APIKey, text: String), Runs, Router)
    {
        let keys = CountingKeyStore()
        let made = try await keys.addKey(appID: keys.base.app.id, scopes: scopes)
        let runs = Runs()
        return (keys, made, runs, makeRouter(keys: keys, runs: runs, fromCache: fromCache))
    }

    @Test func aCachedKeyIsConfirmedBeforeTheHandlerRuns() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.sessions])
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(made.text)")
        let served = await RouteCaller.call(router, "GET", "/v1/counted", headers: headers)
        #expect(served.status == 204)
        #expect(keys.confirmations == 1)
        #expect(runs.value == 1)
        // Found revoked: 401, and the handler never runs.
        keys.revokeAll()
        let revoked = await RouteCaller.call(router, "GET", "/v1/counted", headers: headers)
        #expect(revoked.status == 401)
        #expect(errorCode(revoked) == "unauthorized")
        #expect(keys.confirmations == 2)
        #expect(runs.value == 1)
    }

    @Test func aConfirmationTheDatabaseCannotGiveIsA503AndNeverALogout() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.sessions])
        keys.failConfirmations()
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(made.text)")
        let answer = await RouteCaller.call(router, "GET", "/v1/counted", headers: headers)
        #expect(answer.status == 503)
        #expect(errorCode(answer) == "database_unavailable")
        #expect(answer.headers["Retry-After"] != nil)
        #expect(runs.value == 0)
    }

    // MARK: The parked path: one fence, the key and the answer under it, no task

    private static func call(_ router: Router, _ keys: CountingKeyStore, _ text: String, fence: Bool) async -> Response {
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(text)")
        async let response = RouteCaller.call(router, "GET", "/v1/cached", headers: headers)
        await keys.manualFence.awaitParked(1)
        keys.manualFence.release(passing: fence)
        return await response
    }

    @Test func aCachedAnswerNeedsOneFenceAndNoConfirmationRead() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.sessions], fromCache: Response(status: 299))
        let answer = await Self.call(router, keys, made.text, fence: true)
        #expect(answer.status == 299)
        #expect(keys.manualFence.waits == 1)
        #expect(keys.confirmations == 0, "the key was confirmed from the cache under the same pass")
        #expect(runs.value == 0, "the route's body never ran")
    }

    @Test func aMissAfterTheFenceRunsTheBodyWithoutConfirmingTheKeyAgain() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.sessions], fromCache: nil)
        let answer = await Self.call(router, keys, made.text, fence: true)
        #expect(answer.status == 204)
        #expect(keys.confirmations == 0)
        #expect(runs.value == 1)
    }

    @Test func aRequestTheCacheCannotAnswerDoesNotWaitForAFence() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.sessions], fromCache: Response(status: 299))
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(made.text)")
        let answer = await RouteCaller.call(router, "GET", "/v1/not-held", headers: headers)
        #expect(answer.status == 204)
        #expect(keys.manualFence.waits == 0, "no fence: the answer comes from the database")
        #expect(keys.confirmations == 1, "the key is confirmed the usual way")
        #expect(runs.value == 1)
    }

    @Test func withoutAPassOrALiveKeyEntryTheKeyIsConfirmedTheUsualWay() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.sessions], fromCache: Response(status: 299))
        let lost = await Self.call(router, keys, made.text, fence: false)
        #expect(lost.status == 204, "the fence failed: nothing from the cache")
        #expect(keys.confirmations == 1)
        keys.forgetLiveness()
        let unknown = await Self.call(router, keys, made.text, fence: true)
        #expect(unknown.status == 204, "the cache does not know the key: nothing from it")
        #expect(keys.confirmations == 2)
        #expect(runs.value == 2)
        keys.revokeAll()
        let revoked = await Self.call(router, keys, made.text, fence: true)
        #expect(revoked.status == 401)
        #expect(keys.confirmations == 3)
        #expect(runs.value == 2, "a revoked key never reaches the handler")
    }

    @Test func aKeyWithoutTheScopeIsRefusedUnderTheFence() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.tokensRead], fromCache: Response(status: 299))
        let answer = await Self.call(router, keys, made.text, fence: true)
        #expect(answer.status == 403)
        #expect(errorCode(answer) == "forbidden")
        #expect(runs.value == 0)
    }
}
