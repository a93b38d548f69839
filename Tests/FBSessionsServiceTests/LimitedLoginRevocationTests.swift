import FBSessionsCore
import Foundation
import GraphEmulator
import Testing
import TestSupport

/// Logout with `revoke=true` of a limited session: the uninstall endpoint with `id_token` and `app_id`, the same
/// `revocation` answers as a standard revoke, the token erased, owed uninstalls retried by the sweep.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct LimitedLoginRevocationTests {
    static func revocation(_ reply: SessionHarness.Reply) -> String? { reply.json["revocation"] as? String }

    @Test func revokeUninstallsAtFacebookAndErasesTheToken() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (user, session) = try await harness.loggedIn(owner: "o1")
        let id = try #require(session["id"] as? String)
        harness.emulator.resetCounters()
        let logout = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(logout.status == 200 && Self.revocation(logout) == "done", "\(logout.text)")
        #expect(logout.json["closed_reason"] as? String == "logged_out" && logout.json["token"] is NSNull)
        #expect(harness.emulator.limitedUninstalls.map(\.userID) == [user.id])
        #expect(harness.emulator.limitedUninstalls.first?.appID == harness.facebookAppID)
        #expect(harness.emulator.callCount(.uninstall) == 1 && harness.emulator.callCount(.permissions) == 0)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM sessions WHERE token_box IS NOT NULL") == 0)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM pending_revocations") == 0)
        // Asked again: done again, and nothing is sent.
        let again = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(Self.revocation(again) == "done" && harness.emulator.callCount(.uninstall) == 1)
    }

    @Test func anUnreachableEndpointLeavesItPendingForTheSweep() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (user, session) = try await harness.loggedIn(owner: "o1")
        let id = try #require(session["id"] as? String)
        harness.emulator.injectFault(.httpStatus(500), endpoint: .uninstall)
        let logout = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(logout.status == 200 && Self.revocation(logout) == "pending" && logout.json["state"] as? String == "closed")
        #expect(try await harness.count(
            "SELECT count(*)::int AS n FROM pending_revocations WHERE login_kind = 'limited' AND session_id = \(id)") == 1)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM sessions WHERE token_box IS NOT NULL") == 0)
        #expect(Self.revocation(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")) == "pending")
        // The sweep retries through the uninstall endpoint (never DELETE /me/permissions) and it is done.
        _ = try await harness.base.rows("UPDATE pending_revocations SET next_attempt = now()")
        let report = try await Sweeper(service: harness.sessions, store: harness.base.store).pass()
        #expect(report.revoked == 1 && report.revocationsPending == 0)
        #expect(harness.emulator.limitedUninstalls.map(\.userID) == [user.id])
        #expect(harness.emulator.callCount(.permissions) == 0)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM pending_revocations") == 0)
        #expect(Self.revocation(try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")) == "done")
    }

    @Test func anExpiredOrRefusedTokenIsUnavailableNeverPending() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        // The token lives an hour; here three seconds. Once expired it is not even sent.
        let user = try harness.user()
        let short = try await harness.login(
            owner: "o1", token: try harness.mint(user.id, nonce: try await harness.nonce(owner: "o1")) { $0.expiresIn = 3 })
        let shortID = try #require(short.json["id"] as? String)
        try await Task.sleep(nanoseconds: 3_200_000_000)
        harness.emulator.resetCounters()
        let expired = try await harness.call("DELETE", "/v1/sessions/\(shortID)?revoke=true")
        #expect(Self.revocation(expired) == "unavailable", "\(expired.text)")
        #expect(harness.emulator.callCount(.uninstall) == 0)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM pending_revocations") == 0)
        // Facebook refusing the token (a 190 from the endpoint): unavailable, nothing left owed.
        let (_, session) = try await harness.loggedIn(owner: "o2")
        let id = try #require(session["id"] as? String)
        harness.emulator.injectFault(.graphError(GraphErrorSpec(code: 190)), endpoint: .uninstall)
        let refused = try await harness.call("DELETE", "/v1/sessions/\(id)?revoke=true")
        #expect(Self.revocation(refused) == "unavailable" && harness.emulator.callCount(.uninstall) == 1)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM pending_revocations") == 0)
        #expect(harness.emulator.limitedUninstalls.isEmpty)
        // A revocation owed when its token expires is dropped by the sweep as unavailable.
        let (_, third) = try await harness.loggedIn(owner: "o3")
        let thirdID = try #require(third["id"] as? String)
        harness.emulator.injectFault(.dropConnection, endpoint: .uninstall)
        #expect(Self.revocation(try await harness.call("DELETE", "/v1/sessions/\(thirdID)?revoke=true")) == "pending")
        #expect(try await harness.count(
            "SELECT count(*)::int AS n FROM pending_revocations WHERE session_id = \(thirdID)") == 1)
        let expiredToken = try harness.mint(try harness.user("Old O").id, nonce: "n") {
            $0.issuedAt = Int64(Date().timeIntervalSince1970) - 7200
        }
        let sealed = try harness.base.keyring.seal(Array(expiredToken.utf8), context: thirdID)
        _ = try await harness.base.rows(
            """
            UPDATE pending_revocations SET token_key_id = \(sealed.keyID), token_box = \(sealed.box), next_attempt = now()
            WHERE session_id = \(thirdID)
            """)
        let report = try await Sweeper(service: harness.sessions, store: harness.base.store).pass()
        #expect(report.revocationsUnavailable == 1 && report.revoked == 0 && report.revocationsPending == 0)
        #expect(try await harness.count("SELECT count(*)::int AS n FROM pending_revocations") == 0)
        #expect(Self.revocation(try await harness.call("DELETE", "/v1/sessions/\(thirdID)?revoke=true")) == "unavailable")
    }

    @Test func theEmulatorsUninstallEndpointChecksWhatItIsSent() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let token = try harness.mint(user.id, nonce: "n")
        let client = harness.limitedClient
        // Another app's id, a token of a key outside the set, an expired token: refused; a good one: done.
        await #expect(throws: LimitedUninstallError.refused) {
            try await client.uninstall(authenticationToken: token, facebookAppID: harness.otherApp.facebookAppID)
        }
        await #expect(throws: LimitedUninstallError.refused) {
            try await client.uninstall(
                authenticationToken: try harness.mint(user.id, nonce: "n") { $0.signer = .unlisted },
                facebookAppID: harness.facebookAppID)
        }
        await #expect(throws: LimitedUninstallError.refused) {
            try await client.uninstall(
                authenticationToken: try harness.mint(user.id, nonce: "n") {
                    $0.issuedAt = Int64(Date().timeIntervalSince1970) - 4000
                }, facebookAppID: harness.facebookAppID)
        }
        harness.emulator.injectFault(.graphError(GraphErrorSpec(code: 2)), endpoint: .uninstall)
        await #expect(throws: LimitedUninstallError.unavailable) {
            try await client.uninstall(authenticationToken: token, facebookAppID: harness.facebookAppID)
        }
        harness.emulator.setLatency(.seconds(3), for: .uninstall)
        await #expect(throws: LimitedUninstallError.unavailable) {
            try await client.uninstall(authenticationToken: token, facebookAppID: harness.facebookAppID)
        }
        harness.emulator.setLatency(.zero, for: .uninstall)
        try await client.uninstall(authenticationToken: token, facebookAppID: harness.facebookAppID)
        #expect(harness.emulator.limitedUninstalls.count == 1)
    }
}
