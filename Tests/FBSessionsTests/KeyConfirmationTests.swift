import FBSessionsAPI
import FBSessionsCore
import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// A key store whose every lookup comes "from the cache" (unconfirmed), and which counts the confirmations the
/// router asks for (`isLive`).
private final class CountingKeyStore: KeyStore, @unchecked Sendable {
    let base = InMemoryKeyStore()
    private let lock = NSLock()
    private var asked = 0
    private var live = true

    var confirmations: Int { lock.withLock { asked } }

    func revokeAll() {
        lock.withLock { live = false }
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
        lock.withLock {
            asked += 1
            return live
        }
    }
}

/// Two read-only routes that confirm the key in their own statement (`confirmsKeyInQuery`) but fail before any
/// statement confirmed it: one because the database failed, one with a request error.
private func makeRouter(keys: CountingKeyStore) -> Router {
    let failing = Route(
        "GET", "/v1/failing", operationID: "failing", scope: .sessions, confirmsKeyInQuery: true,
        body: .waiting { _ in throw ServiceError.databaseUnavailable })
    let refusing = Route(
        "GET", "/v1/refusing", operationID: "refusing", scope: .sessions, confirmsKeyInQuery: true,
        body: .waiting { _ in throw APIError.invalid("refused before any statement") })
    return Router(
        routes: [failing, refusing], keys: keys,
        observer: Observer(metrics: MetricsRegistry(), logger: Logger(label: "http", handler: InMemoryLogHandler())))
}

private func errorCode(_ response: Response) -> String? {
    let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    return (object?["error"] as? [String: Any])?["code"] as? String
}

/// The router's fallback confirmation of a cached key (docs/caching.md, "As a fallback").
@Suite struct KeyConfirmationTests {
    @Test func aRequestTheDatabaseFailedIsNotConfirmedAgainstTheSameDatabase() async throws {
        // The handler's own statement failed (a frozen server: it waited out its deadline). A second statement to
        // confirm the key would wait out another deadline before the same 503; the 503 tells a revoked key nothing.
        let keys = CountingKeyStore()
        let made = try await keys.addKey(appID: keys.base.app.id, scopes: [.sessions])
        let router = makeRouter(keys: keys)
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(made.text)")
        let answer = await RouteCaller.call(router, "GET", "/v1/failing", headers: headers)
        #expect(answer.status == 503)
        #expect(errorCode(answer) == "database_unavailable")
        #expect(answer.headers["Retry-After"] != nil)
        #expect(keys.confirmations == 0)
    }

    @Test func anyOtherAnswerWithoutAConfirmingStatementIsStillConfirmed() async throws {
        let keys = CountingKeyStore()
        let made = try await keys.addKey(appID: keys.base.app.id, scopes: [.sessions])
        let router = makeRouter(keys: keys)
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer \(made.text)")
        let refused = await RouteCaller.call(router, "GET", "/v1/refusing", headers: headers)
        #expect(refused.status == 400)
        #expect(keys.confirmations == 1)
        // A key found revoked by that confirmation gets 401, not the handler's answer.
        keys.revokeAll()
        let revoked = await RouteCaller.call(router, "GET", "/v1/refusing", headers: headers)
        #expect(revoked.status == 401)
        #expect(keys.confirmations == 2)
    }
}
