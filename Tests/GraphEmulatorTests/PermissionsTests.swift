import Testing

@testable import GraphEmulator

/// `GET|DELETE /{id}/permissions` (docs/facebook-graph.md §6, §12.9).
@Suite("Permissions edge")
struct PermissionsTests {
    @Test func listAndFilters() async throws {
        let harness = try Harness()
        let token = try harness.emulator.issueToken(
            appID: harness.app.id, userID: harness.user.id, granted: ["email"], declined: ["user_friends"],
            expired: ["user_link"]
        ).accessToken
        let all = try await harness.send("GET", "/v25.0/me/permissions?access_token=\(token)")
        #expect(
            all.text
                == #"{"data":[{"permission":"public_profile","status":"granted"},"#
                + #"{"permission":"email","status":"granted"},"#
                + #"{"permission":"user_friends","status":"declined"},{"permission":"user_link","status":"expired"}]}"#)
        let declined = try await harness.send("GET", "/me/permissions?status=declined&access_token=\(token)")
        #expect(declined.json?["data"]?.arrayValue?.count == 1)
        let email = try await harness.send("GET", "/me/permissions?permission=email&access_token=\(token)")
        #expect(email.json?["data"]?.arrayValue?.first?["status"]?.stringValue == "granted")
        let byPath = try await harness.send("GET", "/\(harness.user.id)/permissions/user_link?access_token=\(token)")
        #expect(byPath.json?["data"]?.arrayValue?.count == 1)
        let asApp = try await harness.send("GET", "/\(harness.user.id)/permissions?access_token=1234567890%7Cs3cret")
        #expect(asApp.json?["data"]?.arrayValue?.count == 4)
        // Data access expired: the call still works and granted permissions read as expired.
        try harness.emulator.invalidateToken(token, reason: .dataAccessExpired)
        let stale = try await harness.send("GET", "/me/permissions?status=expired&access_token=\(token)")
        #expect(stale.json?["data"]?.arrayValue?.count == 3)
    }

    @Test func revokeOne() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let reply = try await harness.send("DELETE", "/v25.0/me/permissions/email?access_token=\(token)")
        #expect(reply.status == 200)
        #expect(reply.text == #"{"success":true}"#)
        #expect(harness.emulator.token(token)?.granted.contains("email") == false)
        #expect(harness.emulator.token(token)?.declined == ["email"])
        let me = try await harness.send("GET", "/me?fields=email&access_token=\(token)")
        #expect(me.json?["email"] == nil)
        harness.emulator.answersBareTrueOnDelete = true
        let bare = try await harness.send("DELETE", "/me/permissions/user_link?access_token=\(token)")
        #expect(bare.text == "true")
    }

    @Test func revokeAllInvalidatesEveryToken() async throws {
        let harness = try Harness()
        let first = try harness.token()
        let second = try harness.token(longLived: true)
        let other = try harness.emulator.registerApp(id: "999", secret: "other")
        let elsewhere = try harness.emulator.issueToken(appID: other.id, userID: harness.user.id).accessToken
        let reply = try await harness.send("DELETE", "/me/permissions?access_token=\(first)")
        #expect(reply.text == #"{"success":true}"#)
        for token in [first, second] {
            let me = try await harness.send("GET", "/me?access_token=\(token)")
            #expect(me.status == 400)
            #expect(me.graphError?["error_subcode"]?.intValue == 458)
        }
        // Another app's token is untouched; the user is no longer visible to the app.
        #expect(try await harness.send("GET", "/me?access_token=\(elsewhere)").status == 200)
        let node = try await harness.send("GET", "/\(harness.user.id)?access_token=1234567890%7Cs3cret")
        #expect(node.graphError?["error_subcode"]?.intValue == 33)
    }

    @Test func anotherUsersPermissionsAreForbidden() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let friend = try harness.emulator.createUser(firstName: "Sam")
        _ = try harness.emulator.issueToken(appID: harness.app.id, userID: friend.id)
        let reply = try await harness.send("DELETE", "/\(friend.id)/permissions?access_token=\(token)")
        #expect(reply.status == 403)
        #expect(
            reply.text.hasPrefix(
                #"{"error":{"message":"(#200) The user hasn't authorized the application to perform this action","#
                    + #""type":"OAuthException","code":200,"#
            ))
        let byApp = try await harness.send("DELETE", "/\(friend.id)/permissions?access_token=1234567890%7Cs3cret")
        #expect(byApp.text == #"{"success":true}"#)
    }
}
