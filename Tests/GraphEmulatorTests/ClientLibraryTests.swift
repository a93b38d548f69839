import Testing

@testable import GraphEmulator

/// What real client libraries (facebook-sdk, requests-oauthlib) ask of Graph beyond the session manager's calls:
/// multiple-ID reads, the app node with an app token, aliases, and a dialog that refuses unregistered redirect
/// URIs as strict mode does (docs/facebook-graph.md §2.5, §2.6, §4.1).
@Suite("Graph for client libraries")
struct ClientLibraryTests {
    @Test func multipleIDsAreReadInOneRequestKeyedAsAsked() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let other = try harness.emulator.createUser(id: "10000000000000077", firstName: "Ola", lastName: "Nord")
        _ = try harness.emulator.issueToken(appID: harness.app.id, userID: other.id)
        let reply = try await harness.send(
            "GET", "/v25.0/?ids=\(encoded("me,10000000000000077,me"))&fields=id,name&access_token=\(token)")
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json?.objectValue?.map(\.0) == ["me", "10000000000000077"])
        #expect(reply.json?["me"]?["id"]?.stringValue == harness.user.id)
        #expect(reply.json?["me"]?["name"]?.stringValue == "Jane Q Doe")
        #expect(reply.json?["10000000000000077"]?["name"]?.stringValue == "Ola Nord")
        // Without fields, each node has its defaults; without a version, the default version serves.
        let defaults = try await harness.send("GET", "/?ids=me&access_token=\(token)")
        #expect(defaults.text == #"{"me":{"name":"Jane Q Doe","id":"10215241773831025"}}"#)
        #expect(harness.emulator.callCount(.user) == 2)
    }

    @Test func oneBadNameFailsTheWholeMultipleIDRead() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let unknown = try await harness.send("GET", "/?ids=me,123&access_token=\(token)")
        #expect(unknown.status == 400 && unknown.graphError?["code"]?.intValue == 100)
        #expect(unknown.graphError?["error_subcode"]?.intValue == 33)
        let alias = try await harness.send("GET", "/?ids=me,somebody.else&access_token=\(token)")
        #expect(alias.status == 400 && alias.graphError?["code"]?.intValue == 803)
        #expect(alias.graphError?["message"]?.stringValue
            == "(#803) Some of the aliases you requested do not exist: somebody.else")
        let empty = try await harness.send("GET", "/?ids=me,,me&access_token=\(token)")
        #expect(empty.status == 400 && empty.graphError?["code"]?.intValue == 100)
        let anonymous = try await harness.send("GET", "/?ids=\(harness.user.id)")
        #expect(anonymous.status == 400 && anonymous.graphError?["code"]?.intValue == 104)
        // An alias on its own path is the same 803.
        let single = try await harness.send("GET", "/v25.0/somebody.else?access_token=\(token)")
        #expect(single.status == 400 && single.graphError?["code"]?.intValue == 803)
    }

    @Test func theAppNodeAnswersItsOwnAppToken() async throws {
        let harness = try Harness()
        let appToken = try harness.emulator.appToken(for: harness.app.id)
        for token in [appToken, harness.app.appAccessToken] {
            let reply = try await harness.send("GET", "/v25.0/\(harness.app.id)?access_token=\(encoded(token))")
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json?.objectValue?.map(\.0) == ["link", "name", "id"])
            #expect(reply.json?["name"]?.stringValue == "Test App" && reply.json?["id"]?.stringValue == "1234567890")
            #expect(reply.json?["link"]?.stringValue == "https://www.facebook.com/games/?app_id=1234567890")
        }
        let chosen = try await harness.send("GET", "/\(harness.app.id)?fields=name,category&access_token=\(encoded(appToken))")
        #expect(chosen.text == #"{"name":"Test App","id":"1234567890"}"#)
        let unknownField = try await harness.send("GET", "/\(harness.app.id)?fields=secret&access_token=\(encoded(appToken))")
        #expect(unknownField.status == 400)
        #expect(unknownField.graphError?["message"]?.stringValue
            == "(#100) Tried accessing nonexisting field (secret) on node type (Application)")
        // In a multiple-ID read too.
        let both = try await harness.send("GET", "/?ids=\(harness.app.id)&access_token=\(encoded(appToken))")
        #expect(both.json?[harness.app.id]?["name"]?.stringValue == "Test App")
        // Another app's app token does not read this app's node.
        let other = try harness.emulator.registerApp(id: "999", secret: "other")
        let foreign = try await harness.send("GET", "/\(harness.app.id)?access_token=\(encoded(other.appAccessToken))")
        #expect(foreign.status == 400 && foreign.graphError?["error_subcode"]?.intValue == 33)
    }

    @Test func theDialogRefusesEveryUnregisteredRedirectURI() async throws {
        let harness = try Harness()
        func dialog(_ app: String, _ redirect: String) async throws -> Reply {
            try await harness.send("GET", "/v25.0/dialog/oauth?client_id=\(app)&redirect_uri=\(encoded(redirect))&state=s")
        }
        #expect(try await dialog("1234567890", "https://app.example/callback").status == 200)
        for near in [
            "https://app.example/callback/", "https://app.example/Callback", "http://app.example/callback",
            "https://app.example/callback?x=1", "https://app.example:443/callback", "https://evil.example/callback",
        ] {
            let blocked = try await dialog("1234567890", near)
            #expect(blocked.status == 400 && blocked.text.contains("URL Blocked"), "\(near)")
        }
        // An app with no valid OAuth redirect URI blocks every redirect (strict mode has no "any" default).
        _ = try harness.emulator.registerApp(id: "555", secret: "five")
        let none = try await dialog("555", "https://app.example/callback")
        #expect(none.status == 400 && none.text.contains("URL Blocked"))
        // The approve form is checked the same way: no code for an unregistered URI.
        let post = try await harness.send(
            "POST", "/v25.0/dialog/oauth",
            body: "client_id=555&redirect_uri=\(encoded("https://app.example/callback"))&state=s&user_id=\(harness.user.id)&action=approve")
        #expect(post.status == 400 && post.header("Location") == nil)
    }

    @Test func theDemoAppRegistersItsCallbackAndAnyOthersAsked() async throws {
        let emulator = Emulator()
        let server = try emulator.start()
        defer { server.shutdown(gracePeriod: 0) }
        let seed = emulator.seedDemo(redirectURIs: ["http://127.0.0.1:4444/callback"])
        #expect(seed.app.redirectURIs == [Emulator.demoRedirectURI, "http://127.0.0.1:4444/callback"])
        // Seeding again (the control API's reseed) keeps what was registered.
        #expect(emulator.seedDemo().app.redirectURIs == [Emulator.demoRedirectURI, "http://127.0.0.1:4444/callback"])
        #expect(Emulator.demoRedirectURI == "http://127.0.0.1:3000/callback")
    }
}
