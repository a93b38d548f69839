import GraphVersions
import Foundation
import Testing

@testable import GraphEmulator

/// Exact error bodies, statuses and headers (docs/facebook-graph.md §2.4, §7, §12.5).
@Suite("Graph error bodies")
struct ErrorBodyTests {
    static let messages: [TokenInvalidation: String] = [
        .appNotInstalled: "Error validating access token: User 10215241773831025 has not authorized application"
            + " 1234567890.",
        .checkpointed: "Error validating access token: You cannot access the app till you log in to"
            + " www.facebook.com and follow the instructions given.",
        .passwordChanged: "Error validating access token: The session has been invalidated because the user changed"
            + " their password or Facebook has changed the session for security reasons.",
        .unconfirmedUser: "Error validating access token: Sessions for the user 10215241773831025 are not allowed"
            + " because the user is not a confirmed user.",
        .invalidatedByAPI: "Error validating access token: The session was invalidated explicitly using an API call.",
        .loggedOut: "Error validating access token: The session is invalid because the user logged out.",
        .dataAccessExpired: "The access token is invalid since the user hasn't engaged the app in longer than 90"
            + " days.",
    ]

    @Test(arguments: TokenInvalidation.allCases)
    func invalidatedTokenOnMe(reason: TokenInvalidation) async throws {
        let harness = try Harness()
        let token = try harness.token()
        try harness.emulator.invalidateToken(token, reason: reason)
        let reply = try await harness.send("GET", "/v25.0/me?access_token=\(token)")
        #expect(reply.status == 400)
        let error = try #require(reply.graphError)
        let message = try #require(error["message"]?.stringValue)
        if reason == .expired {
            let pattern = #/Error validating access token: Session has expired on (?<expiry>.+)\. (?<rest>.+)/#
            let match = try #require(message.wholeMatch(of: pattern), "\(message)")
            let date = #/[A-Z][a-z]+day, \d\d-[A-Z][a-z]{2}-\d\d \d\d:\d\d:\d\d P[SD]T/#
            let rest = #/The current time is (?<now>.+)\./#
            let now = try #require(String(match.rest).wholeMatch(of: rest)?.now)
            #expect(String(match.expiry).wholeMatch(of: date) != nil && String(now).wholeMatch(of: date) != nil)
        } else {
            #expect(message == Self.messages[reason])
        }
        #expect(error["type"]?.stringValue == "OAuthException")
        #expect(error["code"]?.intValue == 190)
        #expect(error["error_subcode"]?.intValue == Int64(reason.rawValue))
        let traceID = try #require(error["fbtrace_id"]?.stringValue)
        #expect(reply.header("x-fb-trace-id") == traceID)
        // Key order as Graph sends it.
        #expect(error.objectValue?.map(\.0) == ["message", "type", "code", "error_subcode", "fbtrace_id"])
        #expect(reply.header("www-authenticate") == #"OAuth "Facebook Platform" "invalid_token" ""# + message + "\"")
        #expect(reply.header("content-type") == "application/json; charset=UTF-8")
    }

    @Test func expiryFollowsTheClock() async throws {
        let harness = try Harness()
        let token = try harness.token()
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        harness.emulator.advanceClock(by: 2 * 3600)
        let reply = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(reply.status == 400)
        #expect(reply.graphError?["error_subcode"]?.intValue == 463)
        // A long-lived token lasts 60 days; one that never expires loses data access after 90 (493).
        let long = try harness.token(longLived: true)
        let forever = try harness.emulator.issueToken(appID: harness.app.id, userID: harness.user.id, expiresIn: 0)
        harness.emulator.advanceClock(by: 50 * 86400)
        #expect(try await harness.send("GET", "/me?access_token=\(long)").status == 200)
        harness.emulator.setClock(to: harness.emulator.now + 45 * 86400)
        let late = try await harness.send("GET", "/me?access_token=\(long)")
        #expect(late.graphError?["error_subcode"]?.intValue == 463)
        let stale = try await harness.send("GET", "/me?access_token=\(forever.accessToken)")
        #expect(stale.graphError?["error_subcode"]?.intValue == 493)
    }

    @Test func malformedAndMissingTokens() async throws {
        let harness = try Harness()
        let garbage = try await harness.send("GET", "/me?access_token=not-a-token")
        #expect(garbage.status == 400)
        #expect(
            garbage.text.hasPrefix(
                #"{"error":{"message":"Invalid OAuth access token - Cannot parse access token","#
                    + #""type":"OAuthException","code":190,"fbtrace_id":""#
            ))
        #expect(garbage.graphError?["error_subcode"] == nil)
        let unknown = try await harness.send("GET", "/me?access_token=EAA" + String(repeating: "x", count: 100))
        #expect(unknown.graphError?["message"]?.stringValue == "The access token could not be decrypted")
        let badApp = try await harness.send("GET", "/me?access_token=1234567890%7Cwrong")
        #expect(badApp.graphError?["message"]?.stringValue == "Invalid OAuth access token signature.")

        let missing = try await harness.send("GET", "/v25.0/me")
        #expect(missing.status == 400)
        let message = "An active access token must be used to query information about the current user."
        #expect(missing.graphError?["message"]?.stringValue == message)
        #expect(missing.graphError?["code"]?.intValue == 2500)
        #expect(
            missing.header("www-authenticate") == #"OAuth "Facebook Platform" "invalid_request" ""# + message + "\"")
        let appOnMe = try await harness.send("GET", "/me?access_token=1234567890%7Cs3cret")
        #expect(appOnMe.graphError?["code"]?.intValue == 2500)

        let node = try await harness.send("GET", "/\(harness.user.id)")
        #expect(node.graphError?["message"]?.stringValue == "An access token is required to request this resource.")
        #expect(node.graphError?["code"]?.intValue == 104)
    }

    @Test func nodeAndPathErrors() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let field = try await harness.send("GET", "/me?fields=id,foo&access_token=\(token)")
        #expect(field.status == 400)
        #expect(
            field.graphError?["message"]?.stringValue
                == "(#100) Tried accessing nonexisting field (foo) on node type (User)")
        #expect(field.graphError?["code"]?.intValue == 100)

        let stranger = try await harness.send("GET", "/123?access_token=\(token)")
        #expect(stranger.status == 400)
        let error = try #require(stranger.graphError)
        #expect(
            error["message"]?.stringValue
                == "Unsupported get request. Object with ID '123' does not exist, cannot be loaded due to missing"
                + " permissions, or does not support this operation. Please read the Graph API documentation at"
                + " https://developers.facebook.com/docs/graph-api")
        #expect(error["type"]?.stringValue == "GraphMethodException")
        #expect(error["code"]?.intValue == 100)
        #expect(error["error_subcode"]?.intValue == 33)
        #expect(stranger.header("www-authenticate") == nil)

        let edge = try await harness.send("GET", "/me/feed?access_token=\(token)")
        #expect(edge.graphError?["message"]?.stringValue == "Unknown path components: /feed")
        #expect(edge.graphError?["code"]?.intValue == 2500)

        let syntax = try await harness.send("GET", "/me?fields=picture.type(large&access_token=\(token)")
        #expect(syntax.graphError?["code"]?.intValue == 2500)
        let badEncoding = try await harness.send("GET", "/me?fields=%zz&access_token=\(token)")
        #expect(badEncoding.graphError?["code"]?.intValue == 100)
    }

    @Test func versionsAndHeaders() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.setClock(to: 1_796_601_600)  // 2026-12-07
        let current = try await harness.send("GET", "/v25.0/me?access_token=\(token)")
        #expect(current.header("facebook-api-version") == "v25.0")
        let unversioned = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(unversioned.header("facebook-api-version") == "v25.0")
        let expired = try await harness.send("GET", "/v19.0/me?access_token=\(token)")
        #expect(expired.status == 200)
        #expect(expired.header("facebook-api-version") == "v21.0")
        let bogus = try await harness.send("GET", "/v2.80/me?access_token=\(token)")
        #expect(bogus.graphError?["message"]?.stringValue == "Unknown path components: /me")
        for name in [
            "x-fb-trace-id", "x-fb-rev", "x-fb-request-id", "x-fb-debug", "etag", "strict-transport-security",
        ] {
            #expect(current.header(name) != nil, "missing \(name)")
        }
        #expect(current.header("cache-control") == "private, no-cache, no-store, must-revalidate")
        #expect(current.header("pragma") == "no-cache")
        #expect(current.header("expires") == "Sat, 01 Jan 2000 00:00:00 GMT")
        #expect(current.header("access-control-allow-origin") == "*")
        #expect(current.header("x-app-usage") == #"{"call_count":0,"total_cputime":0,"total_time":0}"#)
    }

    /// Every version of Meta's table, on the emulator's clock: served as itself from its release through its last
    /// day; after that by the oldest version still served that day, which the header names; before its release,
    /// like a version Graph never had.
    @Test func everyVersionOfTheTableOnTheEmulatorsClock() async throws {
        let harness = try Harness()
        let table = GraphVersionTable.meta
        /// `GET /{version}/me` at `unixSeconds` on the emulator's clock, with a token issued then.
        func me(_ version: GraphVersion, at unixSeconds: Double) async throws -> Reply {
            harness.emulator.setClock(to: Int64(unixSeconds))
            return try await harness.send("GET", "/\(version)/me?access_token=\(try harness.token())")
        }
        for release in table.releases {
            let first = try await me(release.version, at: release.released.unixSeconds + 43_200)
            #expect(first.status == 200 && first.header("facebook-api-version") == release.version.description)
            let early = try await me(release.version, at: release.released.adding(days: -1).unixSeconds + 43_200)
            #expect(early.graphError?["message"]?.stringValue == "Unknown path components: /me", "\(release.version)")
            guard let until = release.availableUntil else { continue }
            let last = try await me(release.version, at: until.unixSeconds + 86_399)
            #expect(last.header("facebook-api-version") == release.version.description, "last day of \(release.version)")
            let after = until.adding(days: 1)
            let retired = try await me(release.version, at: after.unixSeconds)
            let expected = table.servingVersion(for: release.version, on: after)
            #expect(retired.status == 200, "\(release.version) after its last day")
            #expect(expected != nil && expected != release.version)
            #expect(retired.header("facebook-api-version") == expected?.description, "\(release.version) after its last day")
        }
        // v21.0, the old default, on 2027-01-22: answered by v22.0.
        let v21 = try await me(GraphVersion(major: 21, minor: 0), at: 1_800_576_000)
        #expect(v21.status == 200 && v21.header("facebook-api-version") == "v22.0")
        #expect(v21.json?["id"]?.stringValue == harness.user.id)
    }

    @Test func tokenInHeaderOrFormBody() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let bearer = try await harness.send("GET", "/me", headers: [("Authorization", "Bearer \(token)")])
        #expect(bearer.status == 200)
        let oauth = try await harness.send("GET", "/me", headers: [("Authorization", "OAuth \(token)")])
        #expect(oauth.status == 200)
        let form = try await harness.send("POST", "/v25.0/me", body: "method=GET&access_token=\(token)")
        #expect(form.status == 200)
        #expect(form.json?["id"]?.stringValue == harness.user.id)
        let json = try await harness.send(
            "POST", "/v25.0/me", body: #"{"method":"GET","access_token":"\#(token)","fields":"id"}"#,
            headers: [("Content-Type", "application/json")])
        #expect(json.text == #"{"id":"10215241773831025"}"#)
        let post = try await harness.send("POST", "/v25.0/me", body: "access_token=\(token)")
        #expect(post.graphError?["message"]?.stringValue?.hasPrefix("Unsupported post request.") == true)
    }

    @Test func subcodeCanBeLeftOut() async throws {
        let harness = try Harness()
        let token = try harness.token()
        try harness.emulator.invalidateToken(token, reason: .passwordChanged)
        harness.emulator.omitsErrorSubcode = true
        let reply = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(reply.graphError?["code"]?.intValue == 190)
        #expect(reply.graphError?["error_subcode"] == nil)
    }
}
