import Crypto
import Foundation
import HTTPClient
import Testing

@testable import GraphEmulator

/// The emulator as Limited Login's Facebook: the discovery document and key set as Facebook serves them, tokens
/// shaped like Facebook's (from the control API and from the dialog's tracking choice), rotation, the uninstall
/// endpoint's answers, and faults on all of it.
@Suite struct LimitedLoginTests {
    /// The header and claims of a token, and whether its signature checks under a key of `set`.
    static func open(_ token: String, set: JSONValue?) -> (header: JSONValue?, claims: JSONValue?, verified: Bool) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return (nil, nil, false) }
        let header = Base64URL.decode(parts[0]).flatMap(JSONValue.parse)
        let claims = Base64URL.decode(parts[1]).flatMap(JSONValue.parse)
        let kid = header?["kid"]?.stringValue
        var verified = false
        for key in set?["keys"]?.arrayValue ?? [] where key["kid"]?.stringValue == kid {
            guard let n = key["n"]?.stringValue.flatMap(Base64URL.decode),
                let e = key["e"]?.stringValue.flatMap(Base64URL.decode), let publicKey = try? RSAPublicKey(modulus: n, exponent: e),
                let signature = Base64URL.decode(parts[2])
            else { continue }
            verified = publicKey.isValidRS256Signature(signature, for: Array((parts[0] + "." + parts[1]).utf8))
        }
        return (header, claims, verified)
    }

    @Test func discoveryAndKeySetAreShapedLikeFacebooks() async throws {
        let harness = try Harness()
        let discovery = try await harness.send("GET", "/.well-known/openid-configuration/")
        #expect(discovery.status == 200 && discovery.header("Content-Type")?.hasPrefix("application/json") == true)
        let document = try #require(discovery.json)
        #expect(document["issuer"]?.stringValue == "https://www.facebook.com")
        #expect(document["jwks_uri"]?.stringValue == harness.base + "/.well-known/oauth/openid/jwks/")
        #expect(document["id_token_signing_alg_values_supported"] == .strings(["RS256"]))
        #expect(document["subject_types_supported"] == .strings(["pairwise"]))
        #expect(document["claims_supported"]?.arrayValue?.contains(.string("picture")) == true)
        let set = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        #expect(set.status == 200 && set.header("Cache-Control") == "public, max-age=3600")
        let keys = try #require(set.json?["keys"]?.arrayValue)
        #expect(keys.count == 1)
        let key = try #require(keys.first)
        #expect(key.objectValue?.map(\.0) == ["kid", "kty", "alg", "use", "n", "e"])
        #expect(key["kty"]?.stringValue == "RSA" && key["alg"]?.stringValue == "RS256" && key["use"]?.stringValue == "sig")
        #expect(key["e"]?.stringValue == "AQAB" && key["kid"]?.stringValue?.count == 40)
        #expect(key["n"]?.stringValue.flatMap(Base64URL.decode)?.count == 256)
        // Without a trailing slash too; other methods are refused.
        #expect(try await harness.send("GET", "/.well-known/oauth/openid/jwks").status == 200)
        #expect(try await harness.send("POST", "/.well-known/oauth/openid/jwks/", body: "x=1").status == 400)
    }

    @Test func tokensCarryFacebooksClaimsAndVerifyUnderTheSet() async throws {
        let harness = try Harness()
        let minted = try await harness.control(
            "POST", "limited/tokens",
            #"{"app_id":"1234567890","user_id":"10215241773831025","nonce":"n-123","granted":["public_profile","email","user_link"]}"#)
        #expect(minted.status == 201)
        let token = try #require(minted.json?["authentication_token"]?.stringValue)
        let set = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        let (header, claims, verified) = Self.open(token, set: set.json)
        #expect(verified)
        #expect(header?["alg"]?.stringValue == "RS256" && header?["typ"]?.stringValue == "JWT")
        #expect(header?["kid"]?.stringValue == minted.json?["kid"]?.stringValue)
        let now = harness.emulator.now
        #expect(claims?["iss"]?.stringValue == "https://www.facebook.com" && claims?["aud"]?.stringValue == "1234567890")
        #expect(claims?["sub"]?.stringValue == harness.user.id && claims?["nonce"]?.stringValue == "n-123")
        #expect(abs((claims?["iat"]?.intValue ?? 0) - now) <= 2)
        #expect(claims?["exp"]?.intValue == (claims?["iat"]?.intValue ?? 0) + 3600)
        #expect(claims?["jti"]?.stringValue?.wholeMatch(of: /[A-Za-z0-9]{4}\.[0-9a-f]{64}/) != nil)
        #expect(claims?["given_name"]?.stringValue == "Jane" && claims?["middle_name"]?.stringValue == "Q")
        #expect(claims?["family_name"]?.stringValue == "Doe" && claims?["name"]?.stringValue == "Jane Q Doe")
        #expect(claims?["email"]?.stringValue == "jane@example.com" && claims?["user_link"]?.stringValue != nil)
        // The picture is on the CDN stand-in, signed and expiring, and serves a PNG.
        let picture = try #require(claims?["picture"]?.stringValue)
        #expect(picture.hasPrefix(harness.base + "/__cdn/platform/profilepic/?asid=\(harness.user.id)&height=100&width=100&ext="))
        let image = try await harness.client.execute(ClientRequest(url: picture))
        #expect(image.status == 200 && image.header("content-type") == "image/png")
        // Without email granted, no email claim; claims asked to be left out are left out.
        var plainRequest = AuthenticationTokenRequest(appID: "1234567890", userID: harness.user.id, nonce: "n")
        plainRequest.granted = ["public_profile"]
        plainRequest.omittedClaims = ["jti", "picture"]
        let plain = try harness.emulator.mintAuthenticationToken(plainRequest)
        let plainClaims = Self.open(plain.token, set: set.json).claims
        #expect(plainClaims?["email"] == nil && plainClaims?["jti"] == nil && plainClaims?["picture"] == nil)
        // The control API refuses what it cannot mint.
        #expect(try await harness.control("POST", "limited/tokens", #"{"app_id":"1234567890","user_id":"1","nonce":"n"}"#).status == 404)
        #expect(try await harness.control("POST", "limited/tokens", #"{"app_id":"1234567890","user_id":"10215241773831025"}"#).status == 400)
        #expect(try await harness.control("POST", "limited/tokens", #"{"app_id":"1","user_id":"10215241773831025","nonce":"n","bogus":1}"#).status == 400)
        #expect(try await harness.control("POST", "limited/tokens", #"{"app_id":"1234567890","user_id":"10215241773831025","nonce":"n","signer":"x"}"#).status == 400)
    }

    @Test func rotationChangesTheSetThroughTheControlRoute() async throws {
        let harness = try Harness()
        let before = try #require(try await harness.control("GET", "limited/keys").json?["keys"]?.arrayValue)
        let old = try harness.emulator.mintAuthenticationToken(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        let kept = try await harness.control("POST", "limited/keys/rotate", #"{"keep_previous":true}"#)
        let both = try #require(kept.json?["keys"]?.arrayValue)
        #expect(both.count == 2 && both[1] == before[0])
        let set = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        #expect(Self.open(old.token, set: set.json).verified)
        let new = try harness.emulator.mintAuthenticationToken(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        #expect(new.keyID == both[0].stringValue && Self.open(new.token, set: set.json).verified)
        _ = try await harness.control("POST", "limited/keys/rotate", "{}")
        let rotated = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        #expect(rotated.json?["keys"]?.arrayValue?.count == 1)
        #expect(!Self.open(old.token, set: rotated.json).verified && !Self.open(new.token, set: rotated.json).verified)
        // The max-age is the control route's, or none at all.
        _ = try await harness.control("PUT", "limited/keys", #"{"max_age":30}"#)
        #expect(try await harness.send("GET", "/.well-known/oauth/openid/jwks/").header("Cache-Control") == "public, max-age=30")
        _ = try await harness.control("PUT", "limited/keys", #"{"max_age":null}"#)
        #expect(try await harness.send("GET", "/.well-known/oauth/openid/jwks/").header("Cache-Control") == nil)
        #expect(try await harness.control("PUT", "limited/keys", #"{"max_age":-1}"#).status == 400)
    }

    @Test func theUninstallEndpointAnswersLikeGraph() async throws {
        let harness = try Harness()
        let token = try harness.emulator.mintAuthenticationToken(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        func uninstall(_ body: String) async throws -> Reply { try await harness.send("POST", "/platform/uninstall/", body: body) }
        let done = try await uninstall("id_token=\(token.token)&app_id=\(harness.app.id)")
        #expect(done.status == 200 && done.text == #"{"success":true}"#)
        let recorded = try #require(try await harness.control("GET", "limited/uninstalls").json?["uninstalls"]?.arrayValue)
        #expect(recorded.count == 1 && recorded[0]["user_id"]?.stringValue == harness.user.id)
        #expect(recorded[0]["app_id"]?.stringValue == harness.app.id)
        // Missing parameters, another app, a forged token, an expired one.
        let missing = try await uninstall("app_id=\(harness.app.id)")
        #expect(missing.status == 400 && missing.graphError?["code"]?.intValue == 100)
        let other = try harness.emulator.registerApp(id: "555")
        let foreign = try await uninstall("id_token=\(token.token)&app_id=\(other.id)")
        #expect(foreign.status == 400 && foreign.graphError?["code"]?.intValue == 190)
        var forged = AuthenticationTokenRequest(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        forged.signer = .unlisted
        let bad = try await uninstall("id_token=\(try harness.emulator.mintAuthenticationToken(forged).token)&app_id=\(harness.app.id)")
        #expect(bad.status == 400 && bad.graphError?["message"]?.stringValue == "Invalid id_token.")
        harness.emulator.advanceClock(by: 3601)
        let expired = try await uninstall("id_token=\(token.token)&app_id=\(harness.app.id)")
        #expect(expired.status == 400 && expired.graphError?["error_subcode"]?.intValue == 463)
        #expect(try await harness.send("GET", "/platform/uninstall/").status == 400)  // GET
        // A token of a key rotated out of the set is still Facebook's own.
        harness.emulator.advanceClock(by: -3601)
        try harness.emulator.rotateSigningKey()
        #expect(try await uninstall("id_token=\(token.token)&app_id=\(harness.app.id)").status == 200)
    }

    @Test func faultsApplyToEveryLimitedEndpoint() async throws {
        let harness = try Harness()
        for (endpoint, path) in [
            ("jwks", "/.well-known/oauth/openid/jwks/"), ("openid_configuration", "/.well-known/openid-configuration/"),
        ] {
            _ = try await harness.control("POST", "faults", #"{"endpoint":"\#(endpoint)","kind":"http_status","status":503}"#)
            #expect(try await harness.send("GET", path).status == 503)
            _ = try await harness.control("POST", "faults", #"{"endpoint":"\#(endpoint)","kind":"html"}"#)
            #expect(try await harness.send("GET", path).header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(try await harness.send("GET", path).status == 200)
        }
        _ = try await harness.control("POST", "faults", #"{"endpoint":"uninstall","kind":"graph_error","code":2}"#)
        let token = try harness.emulator.mintAuthenticationToken(appID: harness.app.id, userID: harness.user.id, nonce: "n")
        let failed = try await harness.send("POST", "/platform/uninstall/", body: "id_token=\(token.token)&app_id=\(harness.app.id)")
        #expect(failed.status == 500 && failed.graphError?["code"]?.intValue == 2)
        harness.emulator.setLatency(.milliseconds(300), for: .jwks)
        let started = ContinuousClock.now
        _ = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        #expect(harness.emulator.callCount(.jwks) >= 4 && harness.emulator.callCount(.uninstall) == 1)
    }

    @Test func theDialogsTrackingChoiceGivesAnAuthenticationToken() async throws {
        let harness = try Harness()
        let dialog = "/v25.0/dialog/oauth?client_id=\(harness.app.id)&redirect_uri=\(encoded("https://app.example/callback"))"
            + "&state=st8&scope=email&response_type=id_token&tracking=limited&nonce=abc123"
        let page = try await harness.send("GET", dialog)
        #expect(page.status == 200)
        #expect(page.text.contains(#"name=tracking value=limited checked"#) && page.text.contains(#"name="nonce" value="abc123""#))
        let form = "client_id=\(harness.app.id)&redirect_uri=\(encoded("https://app.example/callback"))&state=st8&scope=email"
            + "&nonce=abc123&tracking=limited&user_id=\(harness.user.id)&action=approve"
        let approved = try await harness.send("POST", "/v25.0/dialog/oauth", body: form)
        #expect(approved.status == 302)
        let location = try #require(approved.header("Location"))
        #expect(location.hasPrefix("https://app.example/callback#id_token="))
        let fragment = FormCoding.parse(String(location.split(separator: "#")[1])) ?? []
        #expect(fragment.value("state") == "st8")
        let token = try #require(fragment.value("id_token"))
        let set = try await harness.send("GET", "/.well-known/oauth/openid/jwks/")
        let (_, claims, verified) = Self.open(token, set: set.json)
        #expect(verified && claims?["nonce"]?.stringValue == "abc123" && claims?["email"]?.stringValue == "jane@example.com")
        #expect(!location.contains("code=") && !location.contains("access_token="))
        // With tracking allowed the same dialog gives a code, as before.
        let standard = try await harness.send("POST", "/v25.0/dialog/oauth", body: form.replacingOccurrences(of: "tracking=limited", with: "tracking=enabled"))
        #expect(standard.header("Location").map(queryItems)?.value("code") != nil)
    }
}
