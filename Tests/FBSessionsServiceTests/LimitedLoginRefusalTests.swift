import Crypto
import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphEmulator
import Postgres
import Testing
import TestSupport

/// Every way the issue lists to cheat or break a Limited Login, end to end over HTTP against the emulator and a
/// real database: each gets the contract's answer, stores nothing, writes no event, and leaves the nonce usable
/// (the same nonce logs in with a good token at the end of each test).
@Suite(.enabled(if: TestDatabase.isEnabled)) struct LimitedLoginRefusalTests {
    /// Sends `token`; expects `status` with `code` (and `reason`), and nothing stored.
    static func refused(
        _ harness: LimitedLoginHarness, owner: String, token: String, status: Int = 422,
        code: String = "authentication_token_invalid", reason: String?, claim: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let before = try await harness.footprint()
        let reply = try await harness.login(owner: owner, token: token)
        let error = reply.json["error"] as? [String: Any] ?? [:]
        #expect(reply.status == status, "\(reason ?? code): \(reply.text)", sourceLocation: sourceLocation)
        #expect(error["code"] as? String == code, "\(reply.text)", sourceLocation: sourceLocation)
        #expect(error["reason"] as? String == reason, "\(reply.text)", sourceLocation: sourceLocation)
        if let claim { #expect(error["claim"] as? String == claim, sourceLocation: sourceLocation) }
        if token.utf8.count >= 20 {
            #expect(!reply.text.contains(token.prefix(40)), "the token came back", sourceLocation: sourceLocation)
        }
        #expect(try await harness.footprint() == before, "a refused login changed something", sourceLocation: sourceLocation)
    }

    @Test func algorithmsOtherThanRS256AreRefusedEvenWithTheKeyAsSecret() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let nonce = try await harness.nonce(owner: "o1")
        let good = try harness.mint(user.id, nonce: nonce)
        let (header, payload, _) = ForgedToken.parts(good)
        // alg none, with and without a signature part.
        let none = #"{"alg":"none","typ":"JWT"}"#
        try await Self.refused(
            harness, owner: "o1", token: ForgedToken.compact(header: none, payload: payload, signature: [0]),
            reason: "unsupported_algorithm")
        try await Self.refused(
            harness, owner: "o1",
            token: Base64URL.encode(Array(none.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + ".",
            reason: "malformed")
        // HS256 signed with the public key's bytes as the HMAC secret: the modulus, the JWK text, the whole set.
        let kid = try #require(harness.emulator.signingKeyIDs.first)
        let set = try await harness.base.client.execute(.init(url: harness.emulator.limitedJWKSURL))
        let jwk = try #require(
            (try JSONSerialization.jsonObject(with: Data(set.body)) as? [String: Any])?["keys"] as? [[String: Any]])[0]
        let modulusText = try #require(jwk["n"] as? String)
        let modulus = try #require(Base64URL.decode(modulusText))
        let jwkText = Array(try JSONSerialization.data(withJSONObject: jwk, options: [.sortedKeys]))
        for secret in [modulus, jwkText, set.body] {
            try await Self.refused(
                harness, owner: "o1", token: ForgedToken.hs256(good, kid: kid, secret: secret),
                reason: "unsupported_algorithm")
        }
        // RS512 and a lower-case rs256 header over the genuine signature.
        for alg in ["RS512", "rs256", "RS256 "] {
            let forged = ForgedToken.compact(
                header: header.replacingOccurrences(of: #""alg":"RS256""#, with: #""alg":"\#(alg)""#), payload: payload,
                signature: ForgedToken.parts(good).signature)
            try await Self.refused(harness, owner: "o1", token: forged, reason: "unsupported_algorithm")
        }
        let accepted = try await harness.login(owner: "o1", token: good)
        #expect(accepted.status == 201, "\(accepted.text)")
    }

    @Test func signaturesMustComeFromAKeyOfTheSet() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let nonce = try await harness.nonce(owner: "o1")
        // Signed by a key outside the set while naming the set's kid: the signature fails.
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.signer = .unlisted },
            reason: "bad_signature")
        // Signed by the test's own key under a kid of its own: no such key.
        let outsider = try RSAPrivateKey.generate()
        let (header, payload, _) = ForgedToken.parts(try harness.mint(user.id, nonce: nonce))
        let ownHeader = header.replacingOccurrences(
            of: #""kid":"[0-9a-f]+""#, with: #""kid":"attacker-key""#, options: .regularExpression)
        let input = Base64URL.encode(Array(ownHeader.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        try await Self.refused(
            harness, owner: "o1",
            token: input + "." + Base64URL.encode(try outsider.rs256Signature(for: Array(input.utf8))),
            reason: "unknown_key")
        // A missing kid, an unknown kid, an empty kid, a kid that is not a string.
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.keyID = .omitted },
            reason: "unknown_key")
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.keyID = .value("0123456789") },
            reason: "unknown_key")
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.keyID = .value("") },
            reason: "unknown_key")
        let numericKid = ForgedToken.compact(
            header: #"{"alg":"RS256","kid":7}"#, payload: payload, signature: ForgedToken.parts(try harness.mint(user.id, nonce: nonce)).signature)
        try await Self.refused(harness, owner: "o1", token: numericKid, reason: "malformed")
        // A corrupted signature: one bit, the last byte, a truncated one, another token's.
        let good = try harness.mint(user.id, nonce: nonce)
        var flipped = ForgedToken.parts(good).signature
        flipped[10] ^= 0x04
        try await Self.refused(
            harness, owner: "o1", token: ForgedToken.compact(header: header, payload: payload, signature: flipped),
            reason: "bad_signature")
        let (goodHeader, goodPayload, goodSignature) = ForgedToken.parts(good)
        try await Self.refused(
            harness, owner: "o1",
            token: ForgedToken.compact(header: goodHeader, payload: goodPayload, signature: Array(goodSignature.dropLast())),
            reason: "bad_signature")
        let other = ForgedToken.parts(try harness.mint(user.id, nonce: nonce) { $0.expiresIn = 1800 }).signature
        try await Self.refused(
            harness, owner: "o1", token: ForgedToken.compact(header: goodHeader, payload: goodPayload, signature: other),
            reason: "bad_signature")
        // A payload changed under the genuine signature (another sub).
        let otherUser = try harness.user("Mallory Mallet")
        let swapped = goodPayload.replacingOccurrences(of: user.id, with: otherUser.id)
        try await Self.refused(
            harness, owner: "o1", token: ForgedToken.compact(header: goodHeader, payload: swapped, signature: goodSignature),
            reason: "bad_signature")
        #expect(try await harness.login(owner: "o1", token: good).status == 201)
    }

    @Test func issuerAudienceAndTimesAreChecked() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let nonce = try await harness.nonce(owner: "o1")
        let now = Int64(Date().timeIntervalSince1970)
        for issuer in ["https://facebook.com", "https://evil.example", "https://www.facebook.com/", "http://www.facebook.com"] {
            try await Self.refused(
                harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.issuer = issuer },
                reason: "wrong_issuer")
        }
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.audience = harness.otherApp.facebookAppID },
            reason: "wrong_audience")
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.audience = harness.facebookAppID + "0" },
            reason: "wrong_audience")
        // Expired by more than the leeway; iat in the future by more than the leeway.
        try await Self.refused(
            harness, owner: "o1",
            token: try harness.mint(user.id, nonce: nonce) { $0.issuedAt = now - 3700; $0.expiresIn = 3600 },
            reason: "expired")
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.issuedAt = now + 120 },
            reason: "not_yet_valid")
        // The emulator's clock run ahead (Facebook's clock ahead of ours) gives a future iat too.
        harness.emulator.advanceClock(by: 300)
        try await Self.refused(harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce), reason: "not_yet_valid")
        harness.emulator.advanceClock(by: -300)
        // Within the 60 s leeway both ways, the token is good.
        let lenient = try harness.mint(user.id, nonce: nonce) { $0.issuedAt = now + 30; $0.expiresIn = 1 }
        #expect(try await harness.login(owner: "o1", token: lenient).status == 201)
    }

    @Test func everyRequiredClaimMustBeThere() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let nonce = try await harness.nonce(owner: "o1")
        for claim in ["iss", "aud", "sub", "jti", "exp", "iat", "nonce"] {
            try await Self.refused(
                harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.omittedClaims = [claim] },
                reason: "missing_claim", claim: claim)
        }
        // Empty strings and nulls count as missing; a wrong type is malformed.
        let token = try harness.mint(user.id, nonce: nonce)
        let claims = try #require(
            try JSONSerialization.jsonObject(with: Data(ForgedToken.parts(token).payload.utf8)) as? [String: Any])
        for (name, value, reason) in [
            ("sub", "" as Any, "missing_claim"), ("jti", NSNull() as Any, "missing_claim"),
            ("exp", "2000000000" as Any, "malformed"), ("aud", [harness.facebookAppID] as Any, "malformed"),
            ("sub", 42 as Any, "malformed"),
        ] {
            var changed = claims
            changed[name] = value
            let payload = String(decoding: try JSONSerialization.data(withJSONObject: changed), as: UTF8.self)
            try await Self.refused(
                harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.rawPayload = payload },
                reason: reason)
        }
        #expect(try await harness.login(owner: "o1", token: token).status == 201)
    }

    @Test func malformedTokensOfEveryShape() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let nonce = try await harness.nonce(owner: "o1")
        let good = try harness.mint(user.id, nonce: nonce)
        let pieces = good.split(separator: ".").map(String.init)
        let shapes: [String] = [
            pieces[0] + "." + pieces[1],  // two parts
            good + "." + pieces[2],  // four parts
            pieces[0] + ".." + pieces[2],  // an empty part
            pieces[0] + "." + pieces[1] + "." + pieces[2] + "=",  // padding
            pieces[0] + "." + pieces[1].replacingOccurrences(of: "-", with: "+") + "." + pieces[2] + "*",  // bad base64url
            "not a token", "", ".", "..", " " + good, good + "\n",
            String(repeating: "A", count: 100 * 1024),  // 100 KB
            pieces[0] + "." + String(repeating: "QUFB", count: 5000) + "." + pieces[2],  // over 16 KiB
            ForgedToken.compact(header: #"["RS256"]"#, payload: "{}", signature: [1]),  // header not an object
            ForgedToken.compact(header: #"{"kid":"x"}"#, payload: "{}", signature: [1]),  // no alg
            ForgedToken.compact(header: #"{"alg":"RS256","kid":"x","crit":["exp"]}"#, payload: "{}", signature: [1]),
            ForgedToken.compact(header: "\u{FEFF}{}", payload: "{}", signature: [1]),
        ]
        for shape in shapes {
            try await Self.refused(harness, owner: "o1", token: shape, reason: "malformed")
        }
        // Signed payloads that are not JSON objects: an array, a string, a number, text that is not JSON.
        for payload in [#"["sub"]"#, #""sub""#, "42", "not json", #"{"sub":"1"#] {
            try await Self.refused(
                harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.rawPayload = payload },
                reason: "malformed")
        }
        // A token that is not a string, and no token beside other credentials: 400 invalid_request.
        let typed = try await harness.call(
            "POST", "/v1/sessions", json: ["owner": "o1", "authentication_token": 42] as [String: Any])
        #expect(typed.status == 400 && typed.errorCode == "invalid_request")
        let mixed = try await harness.call(
            "POST", "/v1/sessions", json: ["owner": "o1", "authentication_token": good, "access_token": "EAAB"])
        #expect(mixed.status == 400 && (mixed.json["error"] as? [String: Any])?["field"] as? String == "access_token")
        #expect(try await harness.login(owner: "o1", token: good).status == 201)
    }

    @Test func nonceMustBeThisServicesForThisOwnerAndAppUnusedAndUnexpired() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        // Unknown: well-formed but never issued; malformed; the nonce of another app (its key) with this app's token.
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: LoginNonce.newText()), status: 400,
            code: "invalid_nonce", reason: nil)
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: "my-own-nonce"), status: 400,
            code: "invalid_nonce", reason: nil)
        let foreign = try await harness.nonce(owner: "o1", key: harness.otherKey)
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: foreign), status: 400, code: "invalid_nonce",
            reason: nil)
        // Another owner's: refused for o2, still good for o1.
        let nonce = try await harness.nonce(owner: "o1")
        let token = try harness.mint(user.id, nonce: nonce)
        try await Self.refused(harness, owner: "o2", token: token, status: 400, code: "invalid_nonce", reason: nil)
        let first = try await harness.login(owner: "o1", token: token)
        #expect(first.status == 201)
        // Reused: the same token again, and another token with the same nonce.
        try await Self.refused(harness, owner: "o1", token: token, status: 400, code: "nonce_used", reason: nil)
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce), status: 400, code: "nonce_used",
            reason: nil)
        // A token check comes first: a bad token with a used nonce is a token refusal.
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce) { $0.signer = .unlisted },
            reason: "bad_signature")
    }

    @Test func expiredNoncesAreRefused() async throws {
        let harness = try await LimitedLoginHarness(nonceLifetime: 1)
        defer { harness.stop() }
        let user = try harness.user()
        let nonce = try await harness.nonce(owner: "o1")
        try await Task.sleep(nanoseconds: 1_300_000_000)
        try await Self.refused(
            harness, owner: "o1", token: try harness.mint(user.id, nonce: nonce), status: 400, code: "nonce_expired",
            reason: nil)
        let fresh = try await harness.nonce(owner: "o1")
        #expect(try await harness.login(owner: "o1", token: try harness.mint(user.id, nonce: fresh)).status == 201)
    }

    @Test func expiredNoncesAreDeletedAnHourAfterExpiryByTheNonceRouteAndTheSweep() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let user = try harness.user()
        let nonces: PostgresQuery = "SELECT count(*)::int AS n FROM login_nonces"
        _ = try await harness.nonce(owner: "o1")
        _ = try await harness.nonce(owner: "o2")
        #expect(try await harness.count("WITH t AS (UPDATE login_nonces SET expires_at = now() - interval '2 hours' RETURNING 1) SELECT count(*)::int AS n FROM t") == 2)
        _ = try await harness.nonce(owner: "o3")  // Each new nonce deletes some long-expired ones.
        #expect(try await harness.count(nonces) == 1)

        #expect(try await harness.count("WITH t AS (UPDATE login_nonces SET expires_at = now() - interval '2 hours' RETURNING 1) SELECT count(*)::int AS n FROM t") == 1)
        let store = harness.base.store
        #expect(try await store.pruneLoginNonces(limit: 1000) == 1, "the sweep deletes what expired over an hour ago")
        #expect(try await harness.count(nonces) == 0)

        // Expired for less than an hour: kept, so that a late use is still answered nonce_expired.
        let late = try await harness.nonce(owner: "o4")
        _ = try await harness.count("WITH t AS (UPDATE login_nonces SET expires_at = now() - interval '30 minutes' RETURNING 1) SELECT count(*)::int AS n FROM t")
        let fresh = try await harness.nonce(owner: "o4")
        #expect(try await store.pruneLoginNonces(limit: 1000) == 0)
        #expect(try await harness.count(nonces) == 2)
        try await Self.refused(
            harness, owner: "o4", token: try harness.mint(user.id, nonce: late), status: 400, code: "nonce_expired",
            reason: nil)
        #expect(try await harness.login(owner: "o4", token: try harness.mint(user.id, nonce: fresh)).status == 201)
    }

    @Test func theNonceRouteChecksItsBody() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        for (body, field) in [
            (#"{"owner":""}"#, "owner"), (#"{"owner":"o","slot":8}"#, "slot"), (#"{"owner":"o","slot":-1}"#, "slot"),
            (#"{"owner":"o","extra":1}"#, "extra"), (#"{"slot":1}"#, nil), (#"["o"]"#, nil),
        ] as [(String, String?)] {
            let reply = try await harness.call("POST", "/v1/login-nonces", rawBody: body)
            #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(body): \(reply.text)")
            if let field { #expect((reply.json["error"] as? [String: Any])?["field"] as? String == field, "\(body)") }
        }
        let made = try await harness.call("POST", "/v1/login-nonces", json: ["owner": "o", "slot": 3])
        #expect(made.status == 201 && made.header("Cache-Control") == "no-store")
        let nonce = try #require(made.json["nonce"] as? String)
        #expect(LoginNonce.isWellFormed(nonce))
        let expires = try #require(ISO8601DateFormatter.withFraction.date(from: made.json["expires_at"] as? String ?? ""))
        #expect(abs(expires.timeIntervalSinceNow - 600) < 30)
        // Only the hash is stored, bound to app, owner and slot.
        let rows = try await harness.base.rows(
            "SELECT owner, slot, octet_length(nonce_hash) AS length FROM login_nonces WHERE nonce_hash = \(LoginNonce.hash(nonce))")
        #expect(try rows.first?.decode("owner", as: String.self) == "o")
        #expect(try rows.first?.decode("slot", as: Int?.self) == 3)
        #expect(
            try await harness.count(
                "SELECT count(*)::int AS n FROM login_nonces WHERE nonce_hash = convert_to(\(nonce), 'UTF8')") == 0)
        let unscoped = try await harness.call(
            "POST", "/v1/login-nonces", json: ["owner": "o"], key: harness.base.sessionsKey)
        #expect(unscoped.status == 201)
    }
}
