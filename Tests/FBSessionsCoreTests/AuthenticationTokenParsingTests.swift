import Crypto
import FBSessionsCore
import Foundation
import Testing
import TestSupport

/// The parsers of Limited Login, without sockets or a database: the compact JWS, the claims, the key set, and the
/// order in which ``LimitedLogin/verify(_:app:)`` refuses (with a key source of the test's own).
@Suite struct AuthenticationTokenParsingTests {
    static let signer = try? RSAPrivateKey.generate()

    static func part(_ text: String) -> String { Base64URL.encode(Array(text.utf8)) }

    static func signed(header: String = #"{"alg":"RS256","kid":"k1","typ":"JWT"}"#, payload: String) throws -> String {
        let input = part(header) + "." + part(payload)
        let key = try #require(signer)
        return input + "." + Base64URL.encode(try key.rs256Signature(for: Array(input.utf8)))
    }

    static func claims(now: Date = Date(), _ changes: [String: Any?] = [:]) throws -> String {
        var claims: [String: Any] = [
            "iss": "https://www.facebook.com", "aud": "4242", "sub": "10229384756", "jti": "V4qN.abc",
            "iat": Int(now.timeIntervalSince1970), "exp": Int(now.timeIntervalSince1970) + 3600,
            "nonce": LoginNonce.newText(), "given_name": "Ada", "family_name": "Lovelace", "name": "Ada Lovelace",
            "email": "ada@example.com", "picture": "https://platform-lookaside.fbsbx.com/platform/profilepic/?asid=1&height=100&width=100&ext=1&hash=A",
        ]
        for (key, value) in changes {
            if let value { claims[key] = value } else { claims.removeValue(forKey: key) }
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test func theCompactSerializationIsParsedStrictly() throws {
        let token = try Self.signed(payload: try Self.claims())
        let jws = try CompactJWS(parsing: token)
        #expect(jws.algorithm == "RS256" && jws.keyID == "k1")
        #expect(jws.signingInput == Array(token.split(separator: ".").prefix(2).joined(separator: ".").utf8))
        #expect(jws.signature.count == 256)
        let pieces = token.split(separator: ".").map(String.init)
        let bad = [
            "", ".", "..", "...", pieces[0], pieces[0] + "." + pieces[1], token + "." + pieces[2],
            pieces[0] + ".." + pieces[2], "." + pieces[1] + "." + pieces[2], pieces[0] + "." + pieces[1] + ".",
            token + "=", pieces[0] + "=." + pieces[1] + "." + pieces[2], token.replacingOccurrences(of: "-", with: "+") + "/",
            token + " ", "\t" + token, pieces[0] + "." + pieces[1] + ".!" + pieces[2],
            String(repeating: "a", count: CompactJWS.maxLength + 1),
            Self.part("[]") + "." + pieces[1] + "." + pieces[2], Self.part("null") + "." + pieces[1] + "." + pieces[2],
            Self.part(#"{"alg":1}"#) + "." + pieces[1] + "." + pieces[2],
            Self.part(#"{"kid":"k1"}"#) + "." + pieces[1] + "." + pieces[2],
            Self.part(#"{"alg":"RS256","kid":["k1"]}"#) + "." + pieces[1] + "." + pieces[2],
            Self.part(#"{"alg":"RS256","crit":["b64"],"b64":false}"#) + "." + pieces[1] + "." + pieces[2],
            Self.part(String(repeating: "[", count: 20) + String(repeating: "]", count: 20)) + "." + pieces[1] + "." + pieces[2],
        ]
        for text in bad {
            #expect(throws: AuthenticationTokenError.malformed, "\(text.prefix(60))") { try CompactJWS(parsing: text) }
        }
        // Non-canonical final bits are not base64url (one byte has many encodings otherwise).
        #expect(throws: AuthenticationTokenError.malformed) {
            try CompactJWS(parsing: pieces[0] + "." + pieces[1] + "." + String(pieces[2].dropLast()) + "B")
        }
        // Headers other than alg, kid and crit are ignored (never followed: jku, x5u, jwk).
        let extra = Self.part(#"{"alg":"RS256","kid":"k1","jku":"https://evil.example/jwks","x5u":"x"}"#)
        #expect(try CompactJWS(parsing: extra + "." + pieces[1] + "." + pieces[2]).keyID == "k1")
    }

    @Test func claimsAreReadStrictlyAndChecked() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let claims = try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims(now: now).utf8))
        #expect(claims.subject == "10229384756" && claims.audience == "4242" && claims.tokenID == "V4qN.abc")
        #expect(claims.profile.firstName == "Ada" && claims.profile.lastName == "Lovelace")
        #expect(claims.profile.pictureURL?.hasPrefix("https://platform-lookaside.fbsbx.com/") == true)
        #expect(claims.permissions.granted == ["public_profile", "email"])
        try claims.check(audience: "4242", now: now, leeway: 60)
        #expect(throws: AuthenticationTokenError.wrongAudience) { try claims.check(audience: "4243", now: now, leeway: 60) }
        try claims.check(audience: "4242", now: now.addingTimeInterval(3659), leeway: 60)
        #expect(throws: AuthenticationTokenError.expired) {
            try claims.check(audience: "4242", now: now.addingTimeInterval(3660), leeway: 60)
        }
        try claims.check(audience: "4242", now: now.addingTimeInterval(-60), leeway: 60)
        #expect(throws: AuthenticationTokenError.notYetValid) {
            try claims.check(audience: "4242", now: now.addingTimeInterval(-61), leeway: 60)
        }
        for issuer in ["https://limited.facebook.com"] {
            let other = try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims(now: now, ["iss": issuer]).utf8))
            try other.check(audience: "4242", now: now, leeway: 60)
        }
        for issuer in ["https://facebook.com", "https://m.facebook.com", "https://www.facebook.com.evil.example", "HTTPS://WWW.FACEBOOK.COM"] {
            let other = try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims(now: now, ["iss": issuer]).utf8))
            #expect(throws: AuthenticationTokenError.wrongIssuer) { try other.check(audience: "4242", now: now, leeway: 60) }
        }
        for name in ["iss", "aud", "sub", "jti", "exp", "iat", "nonce"] {
            #expect(throws: AuthenticationTokenError.missingClaim(name)) {
                try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims([name: nil]).utf8))
            }
        }
        #expect(throws: AuthenticationTokenError.missingClaim("sub")) {
            try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims(["sub": ""]).utf8))
        }
        for (name, value) in [
            ("exp", "1" as Any), ("iat", true as Any), ("aud", ["4242"] as Any), ("sub", 7 as Any),
            ("email", 1 as Any), ("picture", ["x"] as Any), ("exp", 1e300 as Any),
        ] {
            #expect(throws: AuthenticationTokenError.malformed, "\(name)") {
                try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims([name: value]).utf8))
            }
        }
        for payload in ["[]", "null", "1", #""x""#, "", "{", #"{"a":"\u"}"#] {
            #expect(throws: AuthenticationTokenError.malformed, "\(payload)") {
                try AuthenticationTokenClaims(verifiedPayload: Array(payload.utf8))
            }
        }
        // Permission-bearing claims show as permissions; null ones do not.
        let more = try AuthenticationTokenClaims(
            verifiedPayload: Array(try Self.claims(["user_friends": ["1"], "user_gender": NSNull(), "email": nil]).utf8))
        #expect(more.permissions.granted == ["public_profile", "user_friends"])
    }

    @Test func aRefreshReadsTheClaimsWithoutTheNonceAndTheDeviceKeyBinding() throws {
        func read(_ changes: [String: Any?], _ rule: AuthenticationTokenClaims.NonceRule) throws -> AuthenticationTokenClaims {
            try AuthenticationTokenClaims(verifiedPayload: Array(try Self.claims(changes).utf8), nonceRule: rule)
        }
        // A login needs the nonce; a refresh takes a token without one, or with the SDK's own.
        #expect(throws: AuthenticationTokenError.missingClaim("nonce")) { try read(["nonce": nil], .required) }
        #expect(try read(["nonce": nil], .notChecked).nonce == nil)
        #expect(try read(["nonce": "6F9619FF-8B86-D011-B42D-00C04FC964FF"], .notChecked).nonce != nil)
        #expect(throws: AuthenticationTokenError.malformed) { try read(["nonce": 7], .notChecked) }
        // cnf.jkt: optional; cnf must be an object and jkt a non-empty string; other members of cnf are ignored.
        #expect(try read(["cnf": ["jkt": "NzbLsXh8"]], .notChecked).deviceKeyThumbprint == "NzbLsXh8")
        #expect(try read(["cnf": ["x5t#S256": "abc"]], .notChecked).deviceKeyThumbprint == nil)
        #expect(try read(["cnf": NSNull()], .notChecked).deviceKeyThumbprint == nil)
        #expect(try read([:], .required).deviceKeyThumbprint == nil)
        for cnf in ["key", ["jkt": 1], ["jkt": ""], ["jkt": ["a"]]] as [Any] {
            #expect(throws: AuthenticationTokenError.malformed, "\(cnf)") { try read(["cnf": cnf], .notChecked) }
        }
        // What a refresh names a refusal, and when the binding counts as changed.
        let record = RefreshRecord(
            claims: try read(["cnf": ["jkt": "new-key"]], .notChecked), token: "t", sessionID: "ses_x", appID: "app")
        #expect(record.refusal(storedUserID: "10229384756") == .notNewer)
        #expect(record.refusal(storedUserID: "someone-else") == .wrongSubject)
        #expect(record.changesBinding(from: "old-key") && !record.changesBinding(from: "new-key"))
        #expect(!record.changesBinding(from: nil))
        let unbound = RefreshRecord(claims: try read([:], .notChecked), token: "t", sessionID: "ses_x", appID: "app")
        #expect(unbound.changesBinding(from: "old-key") && !unbound.changesBinding(from: nil))
        #expect(AuthenticationTokenError.wrongSubject.reason == "wrong_subject" && AuthenticationTokenError.notNewer.reason == "not_newer")
    }

    @Test func keySetsKeepOnlyUsableRS256Keys() throws {
        let key = try #require(Self.signer).publicKey
        let n = Base64URL.encode(key.modulus)
        let good = #"{"kid":"a","kty":"RSA","alg":"RS256","use":"sig","n":"\#(n)","e":"AQAB"}"#
        let document = """
            {"keys":[\(good),
            {"kid":"b","kty":"EC","crv":"P-256","x":"AA","y":"AA"},
            {"kid":"c","kty":"RSA","alg":"RS512","n":"\(n)","e":"AQAB"},
            {"kid":"d","kty":"RSA","use":"enc","n":"\(n)","e":"AQAB"},
            {"kid":"e","kty":"RSA","n":"AQAB","e":"AQAB"},
            {"kid":"f","kty":"RSA","n":"\(n)=","e":"AQAB"},
            {"kty":"RSA","n":"\(n)","e":"AQAB"},
            {"kid":"a","kty":"RSA","n":"\(Base64URL.encode(try RSAPrivateKey.generate().publicKey.modulus))","e":"AQAB"},
            {"kid":"g","kty":"RSA","n":"\(n)","e":"AQAB"},
            7, null, "x", [],
            {"kid":9,"kty":"RSA","n":"\(n)","e":"AQAB"}],
            "other":true}
            """
        let set = try JSONWebKeySet(parsing: Array(document.utf8))
        #expect(Set(set.keys.keys) == ["a", "g"])
        #expect(set.keys["a"]?.modulus == key.modulus)  // the first "a" wins
        #expect(set.entryCount == 14)
        for bad in ["", "[]", "{}", #"{"keys":{}}"#, #"{"keys":"x"}"#, "null", String(repeating: "[", count: 50)] {
            #expect(throws: JSONWebKeySetError.malformed, "\(bad)") { try JSONWebKeySet(parsing: Array(bad.utf8)) }
        }
        #expect(try JSONWebKeySet(parsing: Array(#"{"keys":[]}"#.utf8)).keys.isEmpty)
    }

    @Test func verificationRefusesInTheContractsOrder() async throws {
        let signer = try #require(Self.signer)
        let source = ScriptedKeySource(.success(SigningKeyFetch(keys: JSONWebKeySet(keys: ["k1": signer.publicKey]), maxAge: nil)))
        let app = App(id: "app_1", name: "t", facebookAppID: "4242", redirectURIs: [], requiredPermissions: [], createdAt: Date())
        let login = LimitedLogin(
            sessions: .unused(), nonces: UnusedNonceStore(), keys: SigningKeyCache(source: source))
        let good = try Self.signed(payload: try Self.claims())
        #expect(try await login.verify(good, app: app).subject == "10229384756")
        func refusal(_ token: String) async -> AuthenticationTokenError? {
            do {
                _ = try await login.verify(token, app: app)
                return nil
            } catch let error as AuthenticationTokenError {
                return error
            } catch {
                return nil
            }
        }
        // Each check before the next: an expired token with a bad signature is a bad signature, and so on.
        let expiredAndForeign = try Self.claims(["exp": 1, "aud": "1"])
        #expect(await refusal(try Self.signed(payload: expiredAndForeign)) == .wrongAudience)
        var flipped = Array(good.utf8)
        flipped[flipped.count - 3] = flipped[flipped.count - 3] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(await refusal(String(decoding: flipped, as: UTF8.self)) == .badSignature)
        #expect(await refusal(try Self.signed(header: #"{"alg":"RS256","kid":"k2"}"#, payload: expiredAndForeign)) == .unknownKey)
        #expect(await refusal(try Self.signed(header: #"{"alg":"none","kid":"k2"}"#, payload: expiredAndForeign)) == .unsupportedAlgorithm)
        #expect(await refusal(try Self.signed(header: #"{"alg":"RS256"}"#, payload: "[]")) == .unknownKey)
        #expect(await refusal(try Self.signed(payload: "[]")) == .malformed)
        #expect(await refusal(try Self.signed(payload: try Self.claims(["iss": "x", "sub": nil]))) == .missingClaim("sub"))
        #expect(await refusal(try Self.signed(payload: try Self.claims(["iss": "x"]))) == .wrongIssuer)
        #expect(await refusal(try Self.signed(payload: try Self.claims(["exp": 1]))) == .expired)
        #expect(source.callCount == 1)
    }
}

/// A nonce store for verification tests that never store.
struct UnusedNonceStore: LoginNonceStore {
    func saveNonce(hash: [UInt8], appID: String, owner: String, slot: Int?, lifetime: Double) async throws -> LoginNonce {
        throw ServiceError.databaseUnavailable
    }
}
