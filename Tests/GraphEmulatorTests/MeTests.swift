import Testing

@testable import GraphEmulator

/// `GET /me` and `GET /{user-id}`: fields selection and permission rules (docs/facebook-graph.md §2, §12.4).
@Suite("Me and user nodes")
struct MeTests {
    @Test func defaultFieldsAreNameAndID() async throws {
        let harness = try Harness()
        let reply = try await harness.send("GET", "/v25.0/me?access_token=\(try harness.token())")
        #expect(reply.status == 200)
        #expect(reply.text == #"{"name":"Jane Q Doe","id":"10215241773831025"}"#)
    }

    @Test func selectionKeepsOrderAndAddsID() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let reply = try await harness.send(
            "GET", "/me?fields=\(encoded("name,email,first_name,middle_name,last_name,link"))&access_token=\(token)")
        let members = try #require(reply.json?.objectValue)
        #expect(members.map(\.0) == ["name", "email", "first_name", "middle_name", "last_name", "link", "id"])
        #expect(reply.json?["email"]?.stringValue == "jane@example.com")
        // Graph escapes slashes; a JSON parser reads them back.
        #expect(reply.text.contains(#"https:\/\/www.facebook.com\/app_scoped_user_id\/10215241773831025\/"#))
        #expect(reply.json?["link"]?.stringValue == "https://www.facebook.com/app_scoped_user_id/10215241773831025/")
        let formats = try await harness.send("GET", "/me?fields=id,name_format,short_name&access_token=\(token)")
        #expect(
            formats.text == #"{"id":"10215241773831025","name_format":"{first} {middle} {last}","short_name":"Jane"}"#)
    }

    @Test func emailAndLinkNeedTheirPermissions() async throws {
        let harness = try Harness()
        let token = try harness.token(granted: ["public_profile"])
        let reply = try await harness.send("GET", "/me?fields=id,email,link&access_token=\(token)")
        #expect(reply.text == #"{"id":"10215241773831025"}"#)
        // A user without an email: left out even with the permission; empty names are left out too.
        try harness.emulator.updateUser(harness.user.id) {
            $0.email = nil
            $0.middleName = ""
        }
        let full = try harness.token()
        let second = try await harness.send("GET", "/me?fields=email,middle_name,first_name&access_token=\(full)")
        #expect(second.text == #"{"first_name":"Jane","id":"10215241773831025"}"#)
    }

    @Test func pictureFieldWithModifiers() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let large = try await harness.send("GET", "/me?fields=\(encoded("picture.type(large)"))&access_token=\(token)")
        let data = try #require(large.json?["picture"]?["data"])
        #expect(data.objectValue?.map(\.0) == ["height", "is_silhouette", "url", "width"])
        #expect(data["width"]?.intValue == 200 && data["height"]?.intValue == 200)
        #expect(data["is_silhouette"]?.boolValue == false)
        let url = try #require(data["url"]?.stringValue)
        #expect(
            url.hasPrefix(harness.base + "/__cdn/platform/profilepic/?asid=10215241773831025&height=200&width=200&ext=")
        )
        let sized = try await harness.send(
            "GET", "/me?fields=\(encoded("picture.width(120).height(80){url,width}"))&access_token=\(token)")
        let sizedData = try #require(sized.json?["picture"]?["data"])
        #expect(sizedData.objectValue?.map(\.0) == ["url", "width"])
        #expect(sizedData["width"]?.intValue == 120)
        let bad = try await harness.send("GET", "/me?fields=\(encoded("picture.type(huge)"))&access_token=\(token)")
        #expect(bad.status == 400)
    }

    @Test func otherUsersAndAppTokens() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let friend = try harness.emulator.createUser(firstName: "Sam", lastName: "Roe", email: "sam@example.com")
        // Not yet a user of the app: invisible.
        let hidden = try await harness.send("GET", "/\(friend.id)?access_token=\(token)")
        #expect(hidden.graphError?["error_subcode"]?.intValue == 33)
        _ = try harness.emulator.issueToken(appID: harness.app.id, userID: friend.id, granted: ["email"])
        let seen = try await harness.send("GET", "/\(friend.id)?fields=name,email&access_token=\(token)")
        #expect(seen.text == #"{"name":"Sam Roe","id":"\#(friend.id)"}"#)
        // The app token reads what the user granted the app.
        let appView = try await harness.send("GET", "/\(friend.id)?fields=email&access_token=1234567890%7Cs3cret")
        #expect(appView.json?["email"]?.stringValue == "sam@example.com")
        let own = try await harness.send("GET", "/\(harness.user.id)?fields=email&access_token=\(token)")
        #expect(own.json?["email"]?.stringValue == "jane@example.com")
    }

    @Test func pageTokenIsThePage() async throws {
        let harness = try Harness()
        let page = try harness.emulator.issuePageToken(
            appID: harness.app.id, userID: harness.user.id, pageID: "555", pageName: "Jane's Bakery")
        let reply = try await harness.send("GET", "/me?access_token=\(page.accessToken)")
        #expect(reply.json?["id"]?.stringValue == "555")
        #expect(reply.json?["name"]?.stringValue == "Jane's Bakery")
        let email = try await harness.send("GET", "/me?fields=email&access_token=\(page.accessToken)")
        #expect(
            email.graphError?["message"]?.stringValue
                == "(#100) Tried accessing nonexisting field (email) on node type (Page)")
    }

    @Test func permissionsFieldExpansion() async throws {
        let harness = try Harness()
        let token = try harness.emulator.issueToken(
            appID: harness.app.id, userID: harness.user.id, granted: ["email"], declined: ["user_link"]
        ).accessToken
        let reply = try await harness.send("GET", "/me?fields=id,permissions&access_token=\(token)")
        #expect(
            reply.text
                == #"{"id":"10215241773831025","permissions":{"data":["#
                + #"{"permission":"public_profile","status":"granted"},"#
                + #"{"permission":"email","status":"granted"},{"permission":"user_link","status":"declined"}]}}"#)
    }
}
