import Crypto
import Foundation
import HTTPClient
import Testing

@testable import GraphEmulator

/// The emulator as iOS SDK 18.1's direct Limited Login refresh finds Facebook: `POST /limited_login/refresh/` with
/// `id_token_hint`, `app_id` and a `DPoP` header answers a new token for the same person (a later `iat`, a new `exp`
/// and `jti`, the SDK-style nonce, the hint's `cnf.jkt`), refuses what it should, and has a control route that
/// re-binds.
@Suite struct LimitedLoginRefreshTests {
    static func refresh(_ harness: Harness, hint: String, appID: String? = nil, proof: String? = "eyJ0eXAiOiJkcG9wK2p3dCJ9.e30.c2ln")
        async throws -> Reply
    {
        try await harness.send(
            "POST", "/limited_login/refresh/",
            body: "id_token_hint=\(encoded(hint))&app_id=\(appID ?? harness.app.id)",
            headers: proof.map { [("DPoP", $0)] } ?? [])
    }

    @Test func aDirectRefreshAnswersANewTokenForTheSamePerson() async throws {
        let harness = try Harness()
        var request = AuthenticationTokenRequest(appID: harness.app.id, userID: harness.user.id, nonce: "backend-nonce")
        request.deviceKeyThumbprint = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        request.granted = ["public_profile", "email", "user_link"]
        let first = try harness.emulator.mintAuthenticationToken(request)
        let reply = try await Self.refresh(harness, hint: first.token)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json?["expires_in"]?.intValue == 3600)
        let token = try #require(reply.json?["id_token"]?.stringValue)
        let set = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        let (_, claims, verified) = LimitedLoginTests.open(token, set: set.json)
        let (_, old, _) = LimitedLoginTests.open(first.token, set: set.json)
        #expect(verified)
        #expect(claims?["sub"]?.stringValue == harness.user.id && claims?["aud"]?.stringValue == harness.app.id)
        let iat = try #require(claims?["iat"]?.intValue)
        #expect(iat > first.issuedAt && claims?["exp"]?.intValue == iat + 3600)
        #expect(claims?["jti"]?.stringValue != old?["jti"]?.stringValue)
        let nonce = try #require(claims?["nonce"]?.stringValue)
        #expect(UUID(uuidString: nonce) != nil && nonce != "backend-nonce")
        #expect(claims?["cnf"]?["jkt"]?.stringValue == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        #expect(claims?["email"]?.stringValue == "jane@example.com" && claims?["user_link"] != nil)
        #expect(claims?["picture"]?.stringValue?.contains("/__cdn/") == true)
        // Refreshing the refreshed token gives a later one still, even within the same second.
        let again = try await Self.refresh(harness, hint: token)
        let (_, next, _) = LimitedLoginTests.open(again.json?["id_token"]?.stringValue ?? "", set: set.json)
        #expect((next?["iat"]?.intValue ?? 0) > iat)
        #expect(harness.emulator.limitedRefreshCount == 2 && harness.emulator.callCount(.limitedRefresh) == 2)
        // The profile claims are the person as they are now.
        _ = try harness.emulator.updateUser(harness.user.id) { $0.firstName = "Janet" }
        let renamed = try await Self.refresh(harness, hint: token)
        let (_, renamedClaims, _) = LimitedLoginTests.open(renamed.json?["id_token"]?.stringValue ?? "", set: set.json)
        #expect(renamedClaims?["given_name"]?.stringValue == "Janet")
    }

    @Test func hintsItDoesNotTakeAreRefused() async throws {
        let harness = try Harness()
        let token = try harness.emulator.mintAuthenticationToken(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        // No DPoP proof, an empty one.
        for proof in [nil, "", "  "] as [String?] {
            let missing = try await Self.refresh(harness, hint: token.token, proof: proof)
            #expect(missing.status == 400 && missing.graphError?["code"]?.intValue == 100, "\(missing.text)")
        }
        // Missing parameters, an unknown app.
        let noHint = try await harness.send(
            "POST", "/limited_login/refresh/", body: "app_id=\(harness.app.id)", headers: [("DPoP", "p")])
        #expect(noHint.status == 400 && noHint.graphError?["message"]?.stringValue?.contains("id_token_hint") == true)
        let noApp = try await harness.send(
            "POST", "/limited_login/refresh/", body: "id_token_hint=\(encoded(token.token))", headers: [("DPoP", "p")])
        #expect(noApp.status == 400 && noApp.graphError?["message"]?.stringValue?.contains("app_id") == true)
        #expect(try await Self.refresh(harness, hint: token.token, appID: "999").graphError?["code"]?.intValue == 101)
        // Another app's token, a forged one, an expired one: Graph-style 190 errors.
        let other = try harness.emulator.registerApp(
            id: "555", secret: "x", name: "Other", requiresProof: false, clientToken: "c", redirectURIs: [])
        let foreign = try await Self.refresh(harness, hint: token.token, appID: other.id)
        #expect(foreign.status == 400 && foreign.graphError?["code"]?.intValue == 190)
        var forged = AuthenticationTokenRequest(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        forged.signer = .unlisted
        let bad = try await Self.refresh(harness, hint: try harness.emulator.mintAuthenticationToken(forged).token)
        #expect(bad.status == 400 && bad.graphError?["message"]?.stringValue == "Invalid id_token.")
        #expect(try await Self.refresh(harness, hint: "not-a-token").graphError?["code"]?.intValue == 190)
        harness.emulator.advanceClock(by: 3601)
        let expired = try await Self.refresh(harness, hint: token.token)
        #expect(expired.status == 400 && expired.graphError?["error_subcode"]?.intValue == 463)
        harness.emulator.advanceClock(by: -3601)
        #expect(try await harness.send("GET", "/limited_login/refresh/").status == 400)
        #expect(harness.emulator.limitedRefreshCount == 0)
        // None of the refusals repeats the token.
        #expect(!bad.text.contains("eyJ") && !expired.text.contains(token.token.prefix(30)))
    }

    @Test func theControlRouteRefreshesAndRebinds() async throws {
        let harness = try Harness()
        var request = AuthenticationTokenRequest(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        request.deviceKeyThumbprint = "old-key-thumbprint"
        let first = try harness.emulator.mintAuthenticationToken(request)
        let set = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        func claims(_ reply: Reply) -> JSONValue? {
            LimitedLoginTests.open(reply.json?["authentication_token"]?.stringValue ?? "", set: set.json).claims
        }
        let kept = try await harness.control("POST", "limited/refresh", #"{"id_token_hint":"\#(first.token)"}"#)
        #expect(kept.status == 201 && claims(kept)?["cnf"]?["jkt"]?.stringValue == "old-key-thumbprint", "\(kept.status)")
        #expect(kept.json?["issued_at"]?.intValue ?? 0 > first.issuedAt)
        let rebound = try await harness.control(
            "POST", "limited/refresh", #"{"id_token_hint":"\#(first.token)","jkt":"new-key-thumbprint"}"#)
        #expect(claims(rebound)?["cnf"]?["jkt"]?.stringValue == "new-key-thumbprint")
        let unbound = try await harness.control(
            "POST", "limited/refresh", #"{"id_token_hint":"\#(first.token)","app_id":"\#(harness.app.id)","jkt":null}"#)
        #expect(unbound.status == 201 && claims(unbound)?["cnf"] == nil)
        let refused = try await harness.control("POST", "limited/refresh", #"{"id_token_hint":"garbage"}"#)
        #expect(refused.status == 400, "\(refused.text)")
        // The demo token takes a binding too.
        let demo = try await harness.control("POST", "limited/demo-token?user=alice&nonce=abc&jkt=demo-key")
        #expect(demo.status == 201 && claims(demo)?["cnf"]?["jkt"]?.stringValue == "demo-key", "\(demo.status)")
    }
}
