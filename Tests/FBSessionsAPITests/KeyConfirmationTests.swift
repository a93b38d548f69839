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

    func setRateLimit(_ rateLimit: Int?, keyID: String) async throws -> APIKey? {
        try await base.setRateLimit(rateLimit, keyID: keyID)
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
}

/// A route that counts its runs.
private final class Runs: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}

private func makeRouter(keys: CountingKeyStore, runs: Runs) -> Router {
    let counted = Route(
        "GET", "/v1/counted", operationID: "counted", scope: .sessions,
        handler: .waiting { _ in
            runs.add()
            return Response(status: 204)
        })
    return Router(
        routes: [counted], keys: keys,
        observer: Observer(metrics: MetricsRegistry(), logger: Logger(label: "http", handler: InMemoryLogHandler())))
}

private func errorCode(_ response: Response) -> String? {
    let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    return (object?["error"] as? [String: Any])?["code"] as? String
}

/// The ``KeyCheck`` middleware: a key whose app and scopes came from the cache is confirmed live before its handler
/// runs (docs/caching.md), through ``KeyStore/isLive(keyID:)``, which the exact cache answers when it can.
@Suite struct KeyConfirmationTests {
    /// A key store, a key with `scopes`, and a router over the counted routes.
    private static func setUp(scopes: [Scope]) async throws
        -> (CountingKeyStore, (key: APIKey, text: String), Runs, Router)
    {
        let keys = CountingKeyStore()
        let made = try await keys.addKey(appID: keys.base.app.id, scopes: scopes)
        let runs = Runs()
        return (keys, made, runs, makeRouter(keys: keys, runs: runs))
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

    @Test func aKeyWithoutTheScopeIsRefusedAfterItsConfirmation() async throws {
        let (keys, made, runs, router) = try await Self.setUp(scopes: [.tokensRead])
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(made.text)")
        let answer = await RouteCaller.call(router, "GET", "/v1/counted", headers: headers)
        #expect(answer.status == 403)
        #expect(errorCode(answer) == "forbidden")
        #expect(keys.confirmations == 1)
        #expect(runs.value == 0)
    }
}
