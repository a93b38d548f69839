import FBSessionsCore
import Foundation
import GraphEmulator
import HTTPClient
import Testing
import TestSupport

/// `DELETE /v1/sessions/{id}?revoke=true` tells the truth: `done` only when Facebook confirmed the revocation,
/// `pending` while it is owed, `unavailable` when no token is left to revoke with; and the token really is
/// revoked (or really is not) at Graph.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct RevocationTests {
    /// `GET /me` at the emulator with `token` and its proof: the HTTP status Graph answers.
    static func meStatus(_ harness: SessionHarness, token: String) async throws -> Int {
        let proof = GraphCredentials(appID: harness.facebookApp.id, appSecret: harness.facebookApp.secret)
            .appSecretProof(for: token)
        let response = try await harness.client.execute(
            ClientRequest(
                url: "http://127.0.0.1:\(harness.emulatorServer.port)/me?appsecret_proof=\(proof)",
                headers: [("Authorization", "Bearer \(token)")]))
        return response.status
    }

    @Test func aRevokeAfterAPlainLogoutIsUnavailableAndTheTokenStillWorks() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        let plain = try await harness.call("DELETE", "/v1/sessions/\(id)")
        #expect(plain.status == 200 && plain.json["revocation"] == nil)
        let calls = harness.emulator.callCount(.permissions)
        let late = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(late.status == 200 && late.json["state"] as? String == "closed")
        #expect(late.json["revocation"] as? String == "unavailable", "\(late.text)")
        // Nothing was revoked, and the answer does not pretend otherwise: the token still works at Graph.
        #expect(harness.emulator.callCount(.permissions) == calls)
        #expect(harness.emulator.token(stored)?.invalidation == nil)
        #expect(try await Self.meStatus(harness, token: stored) == 200)
        // Asking again changes nothing.
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "unavailable")
    }

    @Test func aRevokeIsPendingWhileOwedAndDoneOnceFacebookConfirmedIt() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        harness.emulator.injectFault(.httpStatus(500), endpoint: .permissions, count: 100)
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "pending")
        // Still owed: a repeat says pending (it does not try again itself; the sweep does).
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "pending")
        #expect(try await Self.meStatus(harness, token: stored) == 200)
        harness.emulator.clearFaults()
        _ = try await Sweeper(service: harness.sessions, store: harness.store, policy: SweepTests.fastPolicy()).pass()
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "done")
        #expect(try await Self.meStatus(harness, token: stored) == 400)
    }

    @Test func aTokenFacebookRefusesCanRevokeNothing() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        // The user changed their password after the login: the stored token is dead, the grant stays.
        let (_, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        let stored = try #require(try await harness.call("GET", "/v1/sessions/\(id)/token").json["access_token"] as? String)
        try harness.emulator.invalidateToken(stored, reason: .passwordChanged)
        let out = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(out.status == 200 && out.json["revocation"] as? String == "unavailable", "\(out.text)")
        #expect(try await harness.rows("SELECT count(*) AS n FROM pending_revocations").first?.decode("n", as: Int.self) == 0)
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "unavailable")
    }

    @Test func aGrantAlreadyGoneAtFacebookCountsAsConfirmed() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        // The user removed the app on Facebook: the token now fails with 190/458, which confirms the grant is gone.
        let (user, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        _ = harness.emulator.invalidateTokens(userID: user.id, reason: .appNotInstalled)
        let out = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(out.status == 200 && out.json["revocation"] as? String == "done", "\(out.text)")
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true").json["revocation"] as? String == "done")
    }

    @Test func aSessionClosedByFacebookIsUnavailable() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let (user, token) = try harness.userToken()
        let id = try #require(try await harness.login(owner: "o", token: token).json["id"] as? String)
        _ = harness.emulator.invalidateTokens(userID: user.id, reason: .passwordChanged)
        let status = try await harness.call("GET", "/v1/sessions/\(id)?validate=always")
        #expect(status.json["closed_reason"] as? String == "password_changed")
        let out = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(out.status == 200 && out.json["revocation"] as? String == "unavailable")
    }
}
