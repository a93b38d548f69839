import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import Postgres
import Testing
import TestSupport

/// `PUT /v1/sessions/{id}/authentication-token` (iOS SDK 18.1's Limited Login refresh), end to end over HTTP with
/// the emulator as Limited Login's Facebook and a real database: a refreshed token replaces the stored one with its
/// profile, picture, expiry and events; every check of a login still applies except the nonce; `wrong_subject` and
/// `not_newer`; the sessions that cannot be refreshed; refreshes racing on two instances; the device-key binding.
/// Every refusal leaves the session's JSON, its stored row, the events feed and the picture cache as they were.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct LimitedLoginSessionRefreshTests {
    /// A limited session of a new user for `owner`, bound to `deviceKey` when given: the session's id, the user,
    /// and the login token's `iat`.
    static func limitedSession(_ harness: LimitedLoginHarness, owner: String = "o1", deviceKey: String? = nil)
        async throws -> (id: String, user: EmulatedUser, issuedAt: Int64)
    {
        let user = try harness.user()
        var request = AuthenticationTokenRequest(
            appID: harness.facebookAppID, userID: user.id, nonce: try await harness.nonce(owner: owner))
        request.deviceKeyThumbprint = deviceKey
        let minted = try harness.emulator.mintAuthenticationToken(request)
        let reply = try await harness.login(owner: owner, token: minted.token)
        guard reply.status == 201, let id = reply.json["id"] as? String else {
            throw TestSetupError("limited login answered \(reply.status): \(reply.text)")
        }
        return (id, user, minted.issuedAt)
    }

    /// A token as the SDK's refresh would bring it: the SDK's own nonce (a UUID), `iat` `issuedAt`, adjusted.
    static func refreshed(
        _ harness: LimitedLoginHarness, _ userID: String, issuedAt: Int64,
        _ adjust: (inout AuthenticationTokenRequest) -> Void = { _ in }
    ) throws -> MintedAuthenticationToken {
        var request = AuthenticationTokenRequest(appID: harness.facebookAppID, userID: userID, nonce: UUID().uuidString)
        request.issuedAt = issuedAt
        adjust(&request)
        return try harness.emulator.mintAuthenticationToken(request)
    }

    /// Everything a refusal must leave as it was: the session's JSON, its stored token, `iat`, binding and change
    /// time, the events feed and the picture cache. Compared whole, never printed (the row holds the sealed token).
    static func footprint(_ harness: LimitedLoginHarness, _ id: String) async throws -> [String] {
        let status = try await harness.call("GET", "/v1/sessions/\(id)")
        let feed = try await harness.call("GET", "/v1/events")
        let row = try #require(try await harness.base.rows(
            """
            SELECT coalesce(encode(token_box, 'hex'), '') AS box, coalesce(token_issued_at::text, '') AS iat,
                coalesce(token_binding, '') AS binding, updated_at::text AS updated,
                (SELECT count(*) FROM events)::text AS events, (SELECT count(*) FROM picture_cache)::text AS pictures
            FROM sessions WHERE id = \(id)
            """
        ).first)
        return [status.text, feed.text] + (try ["box", "iat", "binding", "updated", "events", "pictures"].map {
            try row.decode($0, as: String.self)
        })
    }

    /// Sends `token` (or `json`/`rawBody` as the body) to session `id`'s refresh; expects `status` with `code` (and
    /// `reason`, and `field`), and nothing changed.
    static func refused(
        _ harness: LimitedLoginHarness, _ id: String, token: String? = nil, json: Any? = nil, rawBody: String? = nil,
        key: String? = nil, path: String? = nil, status: Int = 422, code: String = "authentication_token_invalid",
        reason: String? = nil, field: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let before = try await footprint(harness, id)
        let body: Any? = token.map { ["authentication_token": $0] } ?? json
        let reply = try await harness.call(
            "PUT", path ?? "/v1/sessions/\(id)/authentication-token", json: body, rawBody: rawBody, key: key)
        let error = reply.json["error"] as? [String: Any] ?? [:]
        #expect(reply.status == status, "\(reason ?? code): \(reply.text)", sourceLocation: sourceLocation)
        #expect(error["code"] as? String == code, "\(reply.text)", sourceLocation: sourceLocation)
        if let reason { #expect(error["reason"] as? String == reason, "\(reply.text)", sourceLocation: sourceLocation) }
        if let field { #expect(error["field"] as? String == field, "\(reply.text)", sourceLocation: sourceLocation) }
        if let token, token.utf8.count >= 40 {
            #expect(!reply.text.contains(token.prefix(40)), "the token came back", sourceLocation: sourceLocation)
        }
        let after = try await footprint(harness, id)
        #expect(after == before, "a refused refresh changed something", sourceLocation: sourceLocation)
    }

    /// The token's `iat`, as stored.
    static func storedIssuedAt(_ harness: LimitedLoginHarness, _ id: String) async throws -> Date? {
        try await harness.base.rows("SELECT token_issued_at FROM sessions WHERE id = \(id)").first?
            .decode("token_issued_at", as: Date?.self)
    }

    @Test func aRefreshedTokenFromTheEmulatorsDirectRefreshReplacesTheStoredOne() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (id, user, loginIssuedAt) = try await Self.limitedSession(harness, deviceKey: "device-key-1")
        let loginToken = try await harness.base.store.sessionWithToken(id: id, appID: harness.base.app.id)?.token ?? ""
        // The picture of the login's token is fetched and cached.
        let loginPicture = try await harness.call("GET", "/v1/sessions/\(id)/picture/description")
        #expect(loginPicture.status == 200, "\(loginPicture.text)")
        #expect(harness.emulator.callCount(.cdn) == 1)
        // Later, the person changed their name at Facebook; the SDK refreshes (directly, with a DPoP proof) and
        // gets a new picture URL too.
        harness.emulator.advanceClock(by: 5)
        _ = try harness.emulator.updateUser(user.id) {
            $0.firstName = "Amazing"
            $0.name = "Amazing Grace Hopper"
        }
        let response = try await harness.base.client.execute(
            ClientRequest(
                method: "POST", url: harness.emulator.baseURL + "/limited_login/refresh/",
                headers: [("Content-Type", "application/x-www-form-urlencoded"), ("DPoP", "a-device-key-proof")],
                body: Array(
                    ("id_token_hint=" + TestForm.encode(loginToken) + "&app_id=" + harness.facebookAppID).utf8)))
        #expect(response.status == 200)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        let token = try #require(answer["id_token"] as? String)
        let claims = try #require(
            try JSONSerialization.jsonObject(with: Data(ForgedToken.parts(token).payload.utf8)) as? [String: Any])
        let feedBefore = try await harness.call("GET", "/v1/events")
        let cursor = try #require(feedBefore.json["next_cursor"] as? String)

        let reply = try await harness.call("PUT", "/v1/sessions/\(id)/authentication-token", json: ["authentication_token": token])
        #expect(reply.status == 200, "\(reply.text)")
        #expect(!reply.text.contains(token.prefix(40)))
        #expect(reply.json["id"] as? String == id && reply.json["login_kind"] as? String == "limited")
        #expect(reply.json["state"] as? String == "open" && reply.json["validation"] as? String == "fresh")
        let profile = try #require(reply.json["profile"] as? [String: Any])
        #expect(profile["first_name"] as? String == "Amazing" && profile["name"] as? String == "Amazing Grace Hopper")
        #expect(profile["picture_url"] as? String == claims["picture"] as? String)
        #expect(profile["picture_url"] as? String != (loginPicture.json["url"] as? String))
        let expiry = try #require(
            ISO8601DateFormatter.withFraction.date(from: (reply.json["token"] as? [String: Any])?["expires_at"] as? String ?? ""))
        #expect(abs(expiry.timeIntervalSince1970 - (claims["exp"] as? Double ?? 0)) < 1)
        // Stored: the new token (sealed), its iat, the same binding.
        #expect(try await harness.base.store.sessionWithToken(id: id, appID: harness.base.app.id)?.token == token)
        let storedIssuedAt = try #require(try await Self.storedIssuedAt(harness, id))
        #expect(storedIssuedAt.timeIntervalSince1970 == claims["iat"] as? Double)
        #expect(storedIssuedAt.timeIntervalSince1970 > Double(loginIssuedAt))
        // The feed: token.changed (same user, same device key), profile.changed naming the fields.
        let feed = try await harness.call("GET", "/v1/events?after=\(cursor)")
        let events = try #require(feed.json["events"] as? [[String: Any]])
        #expect(events.map { $0["type"] as? String } == ["token.changed", "profile.changed"], "\(feed.text)")
        let changed = try #require(events.first?["data"] as? [String: Any])
        #expect(changed["user_changed"] as? Bool == false && changed["binding_changed"] as? Bool == false)
        #expect(changed["login_kind"] as? String == "limited")
        #expect((events.last?["data"] as? [String: Any])?["fields"] as? [String] == ["name", "first_name"])
        #expect(events.allSatisfy { $0["session_id"] as? String == id })
        // Status shows the same; the picture now comes from the new URL.
        let status = try await harness.call("GET", "/v1/sessions/\(id)")
        #expect((status.json["profile"] as? [String: Any])?["first_name"] as? String == "Amazing")
        let picture = try await harness.call("GET", "/v1/sessions/\(id)/picture/description")
        #expect(picture.status == 200 && picture.json["url"] as? String == claims["picture"] as? String, "\(picture.text)")
        #expect(harness.emulator.callCount(.cdn) == 2)
        let bytes = try await harness.call("GET", "/v1/sessions/\(id)/picture")
        #expect(bytes.status == 200 && bytes.header("Content-Type") == "image/png")
        // The same token again is a replay.
        try await Self.refused(harness, id, token: token, reason: "not_newer")
    }

    @Test func everyCheckOfALoginAppliesButTheNonce() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (id, user, loginIssuedAt) = try await Self.limitedSession(harness)
        let newer = loginIssuedAt + 5
        let good = try Self.refreshed(harness, user.id, issuedAt: newer).token
        let (header, payload, signature) = ForgedToken.parts(good)
        // Not a compact JWS; over 16 KiB.
        try await Self.refused(harness, id, token: "not.a-token", reason: "malformed")
        try await Self.refused(harness, id, token: String(repeating: "a", count: 16_400), reason: "malformed")
        // alg none, HS256 with the public key as secret, RS512 over a genuine signature.
        try await Self.refused(
            harness, id, token: ForgedToken.compact(header: #"{"alg":"none","typ":"JWT"}"#, payload: payload, signature: [0]),
            reason: "unsupported_algorithm")
        let kid = try #require(harness.emulator.signingKeyIDs.first)
        let set = try await harness.base.client.execute(.init(url: harness.emulator.limitedJWKSURL))
        try await Self.refused(harness, id, token: ForgedToken.hs256(good, kid: kid, secret: set.body), reason: "unsupported_algorithm")
        try await Self.refused(
            harness, id,
            token: ForgedToken.compact(
                header: header.replacingOccurrences(of: #""alg":"RS256""#, with: #""alg":"RS512""#), payload: payload,
                signature: signature),
            reason: "unsupported_algorithm")
        // An unknown kid, no kid, a key outside the set, a corrupted signature.
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.keyID = .value("0123456789") }.token,
            reason: "unknown_key")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.keyID = .omitted }.token,
            reason: "unknown_key")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.signer = .unlisted }.token,
            reason: "bad_signature")
        var flipped = signature
        flipped[7] ^= 0x10
        try await Self.refused(
            harness, id, token: ForgedToken.compact(header: header, payload: payload, signature: flipped), reason: "bad_signature")
        // The claims: issuer, audience, expiry, issued in the future, missing ones.
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.issuer = "https://evil.example" }.token,
            reason: "wrong_issuer")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.audience = "999000999" }.token,
            reason: "wrong_audience")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.expiresIn = -120 }.token,
            reason: "expired")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + 600).token,
            reason: "not_yet_valid")
        for claim in ["sub", "jti", "iat", "exp", "iss", "aud"] {
            try await Self.refused(
                harness, id, token: try Self.refreshed(harness, user.id, issuedAt: newer) { $0.omittedClaims = [claim] }.token,
                reason: "missing_claim")
        }
        // A cnf that is not an object, a jkt that is not a string: malformed.
        let cnfPayload = payload.replacingOccurrences(of: #""nonce":"#, with: #""cnf":"key","nonce":"#)
        let cnfToken = try Self.refreshed(harness, user.id, issuedAt: newer) { $0.rawPayload = cnfPayload }.token
        try await Self.refused(harness, id, token: cnfToken, reason: "malformed")
        // The nonce is the SDK's: a token without one, or with one this service never issued, is taken.
        let noNonce = try Self.refreshed(harness, user.id, issuedAt: newer) { $0.omittedClaims = ["nonce"] }.token
        let taken = try await harness.call("PUT", "/v1/sessions/\(id)/authentication-token", json: ["authentication_token": noNonce])
        #expect(taken.status == 200, "\(taken.text)")
        let foreignNonce = try Self.refreshed(harness, user.id, issuedAt: newer + 1).token
        let takenToo = try await harness.call(
            "PUT", "/v1/sessions/\(id)/authentication-token", json: ["authentication_token": foreignNonce])
        #expect(takenToo.status == 200, "\(takenToo.text)")
    }

    @Test func anotherPersonsReplayedOrOlderTokensAreRefused() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (id, user, loginIssuedAt) = try await Self.limitedSession(harness)
        // Another person's valid token for this app.
        let other = try harness.user("Mallory Mal")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, other.id, issuedAt: loginIssuedAt + 5).token,
            reason: "wrong_subject")
        // The stored token itself, a token of the same second, an older one.
        let stored = try #require(try await harness.base.store.sessionWithToken(id: id, appID: harness.base.app.id)?.token)
        try await Self.refused(harness, id, token: stored, reason: "not_newer")
        try await Self.refused(harness, id, token: try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt).token, reason: "not_newer")
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt - 100).token, reason: "not_newer")
        // After a refresh, the token it replaced is older.
        let second = try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + 2)
        let third = try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + 3)
        #expect(try await harness.call("PUT", "/v1/sessions/\(id)/authentication-token", json: ["authentication_token": third.token]).status == 200)
        try await Self.refused(harness, id, token: second.token, reason: "not_newer")
        try await Self.refused(harness, id, token: stored, reason: "not_newer")
        // Wrong subject is named before not newer.
        try await Self.refused(
            harness, id, token: try Self.refreshed(harness, other.id, issuedAt: loginIssuedAt).token, reason: "wrong_subject")
    }

    @Test func sessionsThatCannotBeRefreshedAndBodiesThatAreNotARefresh() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (id, user, loginIssuedAt) = try await Self.limitedSession(harness)
        let token = try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + 5).token
        // A standard session of the same person: 409 not_limited.
        let (ada, standardToken) = try harness.base.userToken()
        let standard = try await harness.call("POST", "/v1/sessions", json: ["owner": "o2", "access_token": standardToken])
        let standardID = try #require(standard.json["id"] as? String)
        try await Self.refused(
            harness, standardID, token: try Self.refreshed(harness, ada.id, issuedAt: loginIssuedAt + 5).token, status: 409,
            code: "not_limited")
        // Unknown, malformed and another app's ids: 404.
        let unknown = "ses_" + String(repeating: "A", count: 22)
        try await Self.refused(
            harness, id, token: token, path: "/v1/sessions/\(unknown)/authentication-token", status: 404, code: "session_not_found")
        try await Self.refused(
            harness, id, token: token, path: "/v1/sessions/not-a-session/authentication-token", status: 404,
            code: "session_not_found")
        let otherAppsToken = try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + 5) { $0.audience = "777000111" }
        try await Self.refused(
            harness, id, token: otherAppsToken.token, key: harness.otherKey, status: 404, code: "session_not_found")
        // No key, a key without the sessions scope.
        let eventsOnly = SecretsTranscript.noted(
            "api key", try await harness.base.keys.addKey(appID: harness.base.app.id, scopes: [.events]).text)
        try await Self.refused(harness, id, token: token, key: eventsOnly, status: 403, code: "forbidden")
        try await Self.refused(harness, id, token: token, key: "fbs_not_a_key", status: 401, code: "unauthorized")
        // Bodies: not JSON, no field, a wrong type, an unknown field, an empty token.
        try await Self.refused(harness, id, rawBody: "{not json", status: 400, code: "invalid_request")
        try await Self.refused(harness, id, json: [String: Any](), status: 400, code: "invalid_request", field: "authentication_token")
        try await Self.refused(
            harness, id, json: ["authentication_token": 42], status: 400, code: "invalid_request", field: "authentication_token")
        try await Self.refused(
            harness, id, json: ["authentication_token": token, "owner": "o1"], status: 400, code: "invalid_request", field: "owner")
        try await Self.refused(harness, id, json: ["authentication_token": ""], reason: "malformed")
        // A closed session: 410 for a well-formed body; a malformed body is 400 whatever the session's state.
        #expect(try await harness.call("DELETE", "/v1/sessions/\(id)").status == 200)
        try await Self.refused(harness, id, token: token, status: 410, code: "session_closed")
        try await Self.refused(harness, id, rawBody: "{not json", status: 400, code: "invalid_request")
        // Another app's key gets 404 whatever it sends; a standard session is 409 once its body is well formed.
        try await Self.refused(harness, standardID, rawBody: "{not json", status: 400, code: "invalid_request")
        try await Self.refused(harness, standardID, token: token, status: 409, code: "not_limited")
        try await Self.refused(harness, standardID, json: ["x": 1], key: harness.otherKey, status: 404, code: "session_not_found")
        // Logging in keeps requiring this service's nonce: a refreshed token (the SDK's nonce) is no login.
        let login = try await harness.login(owner: "o1", token: token)
        #expect(login.status == 400 && login.errorCode == "invalid_nonce", "\(login.text)")
    }

    @Test func ofRefreshesRacingWithOneTokenOnTwoInstancesExactlyOneWins() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let second = try await LimitedLoginSecondInstance(harness)
        defer { second.stop() }
        let (id, user, loginIssuedAt) = try await Self.limitedSession(harness)
        for round in 1...6 {
            // The other instance holds the session in its exact cache before the refresh.
            let cached = try await second.call("GET", "/v1/sessions/\(id)")
            #expect(cached.status == 200)
            _ = try harness.emulator.updateUser(user.id) { $0.name = "Racer \(round)" }
            let token = try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + Int64(round)).token
            let replies = try await withThrowingTaskGroup(of: SessionHarness.Reply.self) { group in
                for attempt in 0..<4 {
                    group.addTask {
                        let path = "/v1/sessions/\(id)/authentication-token"
                        let body = ["authentication_token": token]
                        return attempt % 2 == 0
                            ? try await harness.call("PUT", path, json: body) : try await second.call("PUT", path, json: body)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == 200 }.count == 1, "round \(round): \(replies.map(\.status))")
            let losers = replies.filter { $0.status != 200 }
            #expect(losers.count == 3 && losers.allSatisfy { $0.status == 422 }, "round \(round): \(losers.map(\.text))")
            #expect(losers.allSatisfy { ($0.json["error"] as? [String: Any])?["reason"] as? String == "not_newer" })
            // Right after, both instances show the new profile (the other one's cache entry was announced away).
            for status in [try await second.call("GET", "/v1/sessions/\(id)"), try await harness.call("GET", "/v1/sessions/\(id)")] {
                #expect((status.json["profile"] as? [String: Any])?["name"] as? String == "Racer \(round)", "round \(round)")
            }
        }
        #expect(
            try await harness.count(
                "SELECT count(*)::int AS n FROM events WHERE type = 'token.changed' AND session_id = \(id)") == 1 + 6)
    }

    @Test func aNewDeviceKeyIsTakenStoredAndAnnounced() async throws {
        let harness = try await LimitedLoginHarness()
        defer { harness.stop() }
        let (id, user, loginIssuedAt) = try await Self.limitedSession(harness, deviceKey: "key-one")
        func binding() async throws -> String? {
            try await harness.base.rows("SELECT token_binding FROM sessions WHERE id = \(id)").first?
                .decode("token_binding", as: String?.self)
        }
        #expect(try await binding() == "key-one")
        var lastChanged: [Bool] = []
        for (step, key) in [(1, "key-one"), (2, "key-two"), (3, nil), (4, "key-three")] as [(Int64, String?)] {
            let token = try Self.refreshed(harness, user.id, issuedAt: loginIssuedAt + step) { $0.deviceKeyThumbprint = key }
            let reply = try await harness.call(
                "PUT", "/v1/sessions/\(id)/authentication-token", json: ["authentication_token": token.token])
            #expect(reply.status == 200, "\(reply.text)")
            #expect(try await binding() == key)
            let event = try #require(try await harness.base.rows(
                """
                SELECT data->>'binding_changed' AS changed FROM events
                WHERE type = 'token.changed' AND session_id = \(id) ORDER BY id DESC LIMIT 1
                """
            ).first)
            lastChanged.append(try event.decode("changed", as: String.self) == "true")
        }
        // The same key: no change; another key: changed; no key after a key: changed; a key after none: nothing
        // known to have changed.
        #expect(lastChanged == [false, true, true, false])
    }
}

extension LimitedLoginSecondInstance {
    /// A request to this instance with the harness's key.
    func call(_ method: String, _ path: String, json: Any? = nil) async throws -> SessionHarness.Reply {
        let response = try await harness.base.client.execute(
            ClientRequest(
                method: method, url: "http://127.0.0.1:\(server.port)\(path)",
                headers: [("Authorization", "Bearer \(harness.base.key)"), ("Content-Type", "application/json")],
                body: try json.map { Array(try JSONSerialization.data(withJSONObject: $0)) }))
        return SessionHarness.Reply(status: response.status, headers: response.headers, body: response.body)
    }
}
