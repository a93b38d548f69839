import FBSessionsCore
import FBSessionsService
import FBSessionsStorage
import Foundation
import Support
import TestSupport
import Testing

/// A real session store with one or more of its reads failing as a failing database does: the two service paths
/// that used to read such a failure as "no token" or "the Graph error stands" now answer that the database is
/// unavailable, and change nothing.
final class FlakySessionStore: SessionStore, Sendable {
    /// The reads that fail.
    enum Read: Hashable {
        case session, sessionWithToken
    }

    private let base: any SessionStore
    private let failing: Set<Read>
    private let closes = Locked(0)

    init(_ base: any SessionStore, failing: Set<Read>) {
        self.base = base
        self.failing = failing
    }

    /// How many times `close` was called.
    var closeCalls: Int { closes.withLock { $0 } }

    func storeLogin(_ login: LoginRecord) async throws -> StoredLogin { try await base.storeLogin(login) }
    func storeRefresh(_ refresh: RefreshRecord) async throws -> Session { try await base.storeRefresh(refresh) }
    func session(id: String, appID: String) async throws -> Session? {
        if failing.contains(.session) { throw ServiceError.databaseUnavailable }
        return try await base.session(id: id, appID: appID)
    }
    func sessions(owner: String, appID: String) async throws -> [Session] {
        try await base.sessions(owner: owner, appID: appID)
    }
    func sessionWithToken(id: String, appID: String) async throws -> (session: Session, token: String)? {
        if failing.contains(.sessionWithToken) { throw ServiceError.databaseUnavailable }
        return try await base.sessionWithToken(id: id, appID: appID)
    }
    func close(id: String, appID: String, reason: ClosedReason, keepRevocation: Bool) async throws
        -> (session: Session, closedNow: Bool)?
    {
        closes.withLock { $0 += 1 }
        return try await base.close(id: id, appID: appID, reason: reason, keepRevocation: keepRevocation)
    }
    func completeRevocation(sessionID: String, appID: String, confirmed: Bool) async throws {
        try await base.completeRevocation(sessionID: sessionID, appID: appID, confirmed: confirmed)
    }
    func revocation(sessionID: String, appID: String) async throws -> SessionService.Revocation {
        try await base.revocation(sessionID: sessionID, appID: appID)
    }
    func closeAll(owner: String, appID: String, reason: ClosedReason) async throws -> [Session] {
        try await base.closeAll(owner: owner, appID: appID, reason: reason)
    }
    func activate(sessionID: String, owner: String, appID: String) async throws -> Session {
        try await base.activate(sessionID: sessionID, owner: owner, appID: appID)
    }
    func claimValidation(id: String, appID: String, staleAfter: Double, lease: Double) async throws -> ValidationClaim {
        try await base.claimValidation(id: id, appID: appID, staleAfter: staleAfter, lease: lease)
    }
    func finishValidation(id: String, appID: String, result: ValidationResult) async throws -> Session? {
        try await base.finishValidation(id: id, appID: appID, result: result)
    }
}

@Suite("A failed read is never read as no row", .serialized, .enabled(if: TestDatabase.isEnabled))
struct FailedReadTests {
    @Test func logoutWithRevokeWhoseTokenReadFailsChangesNothing() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "owner-1", token: token)
        let id = try #require(login.json["id"] as? String)
        harness.emulator.resetCounters()
        let flaky = FlakySessionStore(harness.store, failing: [.sessionWithToken])
        let service = SessionService(
            store: flaky, graph: harness.graph,
            apps: PostgresAppStore(database: Database(pool: harness.pool), keyring: harness.keyring),
            policy: .init(validateTTL: 300, refreshAfter: 86_400, maxSlots: 8, graphVersion: nil, graphTimeout: 3))
        // Before, the failure read as "no token": the session closed and the answer claimed the revocation done.
        await #expect(throws: ServiceError.databaseUnavailable) {
            _ = try await service.logout(id, app: harness.app, revoke: true)
        }
        #expect(flaky.closeCalls == 0)
        let status = try await harness.call("GET", "/v1/sessions/\(id)?validate=never")
        #expect(status.status == 200 && status.json["state"] as? String != "closed")
        #expect(harness.emulator.callCount(.permissions) == 0, "nothing was revoked at Facebook")
    }

    @Test func aPictureWhoseSessionCheckFailsIsTheDatabaseNotGraph() async throws {
        let harness = try await PictureHarness()
        defer { harness.stop() }
        let (user, session) = try await harness.loggedIn()
        _ = harness.emulator.invalidateTokens(userID: user.id, reason: .passwordChanged)
        // The picture call gets 190; the check of the session that follows fails in the database.
        let flaky = FlakySessionStore(
            PostgresSessionStore(database: harness.database, keyring: harness.keyring), failing: [.session])
        let sessions = SessionService(
            store: flaky, graph: harness.graph, apps: PostgresAppStore(database: harness.database, keyring: harness.keyring),
            policy: .init(validateTTL: 300, refreshAfter: 86_400, maxSlots: 8, graphVersion: nil, graphTimeout: 3))
        let pictures = harness.service.pictureService(sessions: sessions)
        await #expect(throws: ServiceError.databaseUnavailable) {
            _ = try await pictures.picture(sessionID: session, app: harness.app, size: .default, ifNoneMatch: nil)
        }
        let status = try await harness.call("GET", "/v1/sessions/\(session)?validate=never")
        #expect(status.json["state"] as? String != "closed", "nothing was decided on a failed read")
    }
}
