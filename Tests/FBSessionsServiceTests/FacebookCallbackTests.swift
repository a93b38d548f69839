import Crypto
import FBSessionsCore
import Foundation
import Postgres
import Testing
import TestSupport

/// Facebook's deauthorize and data-deletion callbacks over HTTP with a real database: valid requests close or
/// erase the user's sessions with events; every bad `signed_request` is a 400 that changes nothing.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct FacebookCallbackTests {
    /// Ada in two owners, Bob in one; returns the session ids.
    static func seed(_ harness: LoginFlowHarness) async throws -> (ada: String, adaOther: String, bob: String, adaUser: String) {
        let ada = try harness.base.userToken(name: "Ada A")
        let bob = try harness.base.userToken(name: "Bob B")
        let first = try await harness.call("POST", "/v1/sessions", json: ["owner": "o1", "access_token": ada.token])
        let second = try await harness.call("POST", "/v1/sessions", json: ["owner": "o2", "access_token": ada.token])
        let third = try await harness.call("POST", "/v1/sessions", json: ["owner": "o1", "access_token": bob.token])
        return (
            try #require(first.json["id"] as? String), try #require(second.json["id"] as? String),
            try #require(third.json["id"] as? String), ada.user.id
        )
    }

    @Test func deauthorizeClosesTheUsersSessionsInEveryOwner() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let (ada, adaOther, bob, adaUser) = try await Self.seed(harness)
        let secret = harness.base.facebookApp.secret
        let request = LoginFlowHarness.sign(LoginFlowHarness.payload(userID: adaUser), secret: secret)
        let reply = try await harness.callback("/v1/facebook/deauthorize", signedRequest: request)
        #expect(reply.status == 200 && reply.json["sessions_closed"] as? Int == 2, "\(reply.text)")
        for id in [ada, adaOther] {
            let session = try await harness.call("GET", "/v1/sessions/\(id)").json
            #expect(session["state"] as? String == "closed" && session["closed_reason"] as? String == "app_removed")
            #expect(session["token"] is NSNull && session["profile"] is NSNull)
        }
        #expect(try await harness.call("GET", "/v1/sessions/\(bob)").json["state"] as? String == "open")
        let closed = try await harness.base.rows(
            "SELECT session_id, data->>'reason' AS reason FROM events WHERE type = 'session.closed' ORDER BY id")
        #expect(try closed.map { try $0.decode("session_id", as: String.self) }.sorted() == [ada, adaOther].sorted())
        #expect(try closed.allSatisfy { try $0.decode("reason", as: String.self) == "app_removed" })
        // Facebook may call again: nothing left to close.
        let again = try await harness.callback("/v1/facebook/deauthorize", signedRequest: request)
        #expect(again.status == 200 && again.json["sessions_closed"] as? Int == 0)

        // The route may name the app; a numeric user_id works too.
        let bobUser = try #require(try await harness.call("GET", "/v1/sessions/\(bob)").json["facebook_user_id"] as? String)
        let numeric = LoginFlowHarness.sign(
            #"{"algorithm":"hmac-sha256","issued_at":1700000000,"user_id":\#(bobUser)}"#, secret: secret)
        let named = try await harness.callback(
            "/v1/facebook/\(harness.base.facebookApp.id)/deauthorize", signedRequest: numeric)
        #expect(named.status == 200 && named.json["sessions_closed"] as? Int == 1, "\(named.text)")
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions WHERE state <> 'closed'") == 0)
    }

    @Test func dataDeletionErasesAndAnswersAStatusLink() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let (ada, adaOther, bob, adaUser) = try await Self.seed(harness)
        // A revocation left pending for Ada holds her token; deletion must drop it.
        _ = try await harness.base.rows(
            """
            INSERT INTO pending_revocations (session_id, app_id, token_key_id, token_box)
            SELECT id, app_id, token_key_id, token_box FROM sessions WHERE id = \(ada)
            """)
        let request = LoginFlowHarness.sign(LoginFlowHarness.payload(userID: adaUser), secret: harness.base.facebookApp.secret)
        let reply = try await harness.callback("/v1/facebook/data-deletion", signedRequest: request)
        #expect(reply.status == 200, "\(reply.text)")
        let code = try #require(reply.json["confirmation_code"] as? String)
        #expect(code.utf8.count == 32 && code.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(reply.json["url"] as? String == "https://sessions.example/v1/facebook/data-deletion/\(code)")
        #expect(Set(reply.json.keys) == ["url", "confirmation_code"])

        for id in [ada, adaOther] {
            let session = try await harness.call("GET", "/v1/sessions/\(id)").json
            #expect(session["state"] as? String == "closed" && session["closed_reason"] as? String == "data_deletion")
        }
        #expect(try await harness.count(
            "SELECT count(*) AS n FROM sessions WHERE facebook_user_id = \(adaUser) AND (token_box IS NOT NULL OR profile IS NOT NULL)") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM pending_revocations") == 0)
        #expect(try await harness.call("GET", "/v1/sessions/\(bob)").json["state"] as? String == "open")
        #expect(try await harness.count(
            "SELECT count(*) AS n FROM events WHERE type = 'session.closed' AND data->>'reason' = 'data_deletion'") == 2)

        // The status link needs no key and shows the code, the status and the times; nothing about the person.
        let status = try await harness.publicGet("/v1/facebook/data-deletion/\(code)")
        #expect(status.status == 200 && status.json["status"] as? String == "completed", "\(status.text)")
        #expect(status.json["confirmation_code"] as? String == code && status.json["completed_at"] is String)
        #expect(!status.text.contains(adaUser) && !status.text.contains("Ada"))
        let page = try await harness.publicGet("/v1/facebook/data-deletion/\(code)", accept: "text/html,*/*")
        #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true && page.text.contains(code))
        for unknown in [String(repeating: "0", count: 32), "not-a-code", String(repeating: "a", count: 65)] {
            let missing = try await harness.publicGet("/v1/facebook/data-deletion/\(unknown)")
            #expect(missing.status == 404 && missing.errorCode == "not_found", "\(unknown)")
        }

        // The app-named path, for a user with no session: recorded all the same.
        let nobody = LoginFlowHarness.sign(LoginFlowHarness.payload(userID: "123"), secret: harness.base.facebookApp.secret)
        let named = try await harness.callback("/v1/facebook/\(harness.base.facebookApp.id)/data-deletion", signedRequest: nobody)
        #expect(named.status == 200 && named.json["confirmation_code"] as? String != code)
        #expect(try await harness.count("SELECT count(*) AS n FROM data_deletions") == 2)
    }

    @Test func badSignedRequestsAre400AndChangeNothing() async throws {
        let harness = try await LoginFlowHarness()
        defer { harness.stop() }
        let (_, _, _, adaUser) = try await Self.seed(harness)
        let secret = harness.base.facebookApp.secret
        let good = LoginFlowHarness.sign(LoginFlowHarness.payload(userID: adaUser), secret: secret)
        let parts = good.split(separator: ".").map(String.init)
        var flipped = try #require(Base64URL.decode(parts[0]))
        flipped[0] ^= 1
        let otherPayload = Base64URL.encode(Array(LoginFlowHarness.payload(userID: "999").utf8))
        let bomb = String(repeating: "[", count: 2000) + String(repeating: "]", count: 2000)
        let cases: [(String, String)] = [
            ("tampered payload", parts[0] + "." + otherPayload),
            ("tampered signature", Base64URL.encode(flipped) + "." + parts[1]),
            ("another secret", LoginFlowHarness.sign(LoginFlowHarness.payload(userID: adaUser), secret: "not-the-secret")),
            ("wrong algorithm", LoginFlowHarness.sign(LoginFlowHarness.payload(userID: adaUser, algorithm: "HMAC-SHA1"), secret: secret)),
            ("no algorithm", LoginFlowHarness.sign(#"{"user_id":"\#(adaUser)"}"#, secret: secret)),
            ("no user", LoginFlowHarness.sign(#"{"algorithm":"HMAC-SHA256"}"#, secret: secret)),
            ("bad user", LoginFlowHarness.sign(#"{"algorithm":"HMAC-SHA256","user_id":"1 OR 1=1"}"#, secret: secret)),
            ("boolean user", LoginFlowHarness.sign(#"{"algorithm":"HMAC-SHA256","user_id":true}"#, secret: secret)),
            ("not JSON", LoginFlowHarness.sign("user_id=1", secret: secret)),
            ("JSON array", LoginFlowHarness.sign(#"["HMAC-SHA256"]"#, secret: secret)),
            ("JSON bomb", LoginFlowHarness.sign(#"{"algorithm":"HMAC-SHA256","user_id":"1","x":\#(bomb)}"#, secret: secret)),
            ("non-base64", "!!!!.@@@@"),
            ("standard base64", parts[0].replacingOccurrences(of: "_", with: "/") + "+." + parts[1]),
            ("one part", parts[1]),
            ("three parts", good + ".x"),
            ("short signature", Base64URL.encode([1, 2, 3]) + "." + parts[1]),
            ("oversized", parts[0] + "." + String(repeating: "A", count: 9000)),
            ("empty", ""),
        ]
        let eventsBefore = try await harness.count("SELECT count(*) AS n FROM events")
        for path in ["deauthorize", "data-deletion", "\(harness.base.facebookApp.id)/deauthorize", "\(harness.base.facebookApp.id)/data-deletion"] {
            for (name, request) in cases {
                let reply = try await harness.callback("/v1/facebook/\(path)", signedRequest: request)
                #expect(reply.status == 400 && reply.errorCode == "invalid_signed_request", "\(path): \(name): \(reply.text)")
            }
            // Valid for this app, sent to an app that is not registered here (or to another app's path).
            for app in ["123456789", harness.otherApp.facebookAppID, "abc"] {
                let path = path.replacingOccurrences(of: harness.base.facebookApp.id, with: app)
                guard path.contains(app) else { continue }
                let reply = try await harness.callback("/v1/facebook/\(path)", signedRequest: good)
                #expect(reply.status == 400 && reply.errorCode == "invalid_signed_request", "\(path)")
            }
            let missing = try await harness.postForm("/v1/facebook/\(path)", "other=1")
            #expect(missing.status == 400 && missing.errorCode == "invalid_signed_request")
            let twice = try await harness.postForm("/v1/facebook/\(path)", "signed_request=\(good)&signed_request=\(good)")
            #expect(twice.status == 400 && twice.errorCode == "invalid_signed_request")
            let badEncoding = try await harness.postForm("/v1/facebook/\(path)", "signed_request=%zz")
            #expect(badEncoding.status == 400 && badEncoding.errorCode == "invalid_request")
            let json = try await harness.postForm("/v1/facebook/\(path)", #"{"signed_request":"\#(good)"}"#, contentType: "application/json")
            #expect(json.status == 415)
            let huge = try await harness.postForm("/v1/facebook/\(path)", "signed_request=" + String(repeating: "A", count: 70_000))
            #expect(huge.status == 413)
        }
        #expect(try await harness.count("SELECT count(*) AS n FROM sessions WHERE state <> 'closed'") == 3)
        #expect(try await harness.count("SELECT count(*) AS n FROM events") == eventsBefore)
        #expect(try await harness.count("SELECT count(*) AS n FROM data_deletions") == 0)
    }
}

/// `signed_request` parsing without a network or database.
@Suite struct SignedRequestTests {
    @Test func parsesFacebooksShape() throws {
        let secret = "app-secret"
        let text = LoginFlowHarness.sign(
            #"{"algorithm":"HMAC-SHA256","expires":1291840400,"issued_at":1291836800,"user_id":"218471"}"#, secret: secret)
        let envelope = try SignedRequest.Envelope(parsing: text)
        #expect(envelope.isSigned(withSecret: secret) && !envelope.isSigned(withSecret: secret + "x"))
        let request = try envelope.contents()
        #expect(request.userID == "218471" && request.issuedAt == Date(timeIntervalSince1970: 1_291_836_800))
        // Facebook pads the signature with "=" at times; base64url with padding is accepted.
        let padded = text.replacingOccurrences(of: ".", with: "=.")
        #expect(try SignedRequest.Envelope(parsing: padded).isSigned(withSecret: secret))
    }

    @Test func boundsNestingBeforeParsing() throws {
        let deep = String(repeating: #"{"a":"#, count: 9) + "1" + String(repeating: "}", count: 9)
        let text = LoginFlowHarness.sign(#"{"algorithm":"HMAC-SHA256","user_id":"1","x":\#(deep)}"#, secret: "s")
        #expect(throws: SignedRequestError.invalidPayload) { try SignedRequest.Envelope(parsing: text).contents() }
        // Brackets inside strings do not count.
        let quoted = LoginFlowHarness.sign(#"{"algorithm":"HMAC-SHA256","user_id":"1","x":"[[[[[[[[[[[[\"]]"}"#, secret: "s")
        #expect(try SignedRequest.Envelope(parsing: quoted).contents().userID == "1")
        #expect(throws: SignedRequestError.tooLarge) {
            try SignedRequest.Envelope(parsing: String(repeating: "a", count: SignedRequest.maxLength + 1))
        }
    }
}
