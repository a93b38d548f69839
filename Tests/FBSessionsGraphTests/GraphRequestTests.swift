import FBSessionsCore
import FBSessionsGraph
import Foundation
import Support
import TestSupport
import Testing

@Suite("Requests carry what Graph expects: version, token, appsecret_proof, parameters")
struct GraphRequestTests {
    @Test("/me sends the user token with a correct appsecret_proof and the fields; the profile is parsed")
    func me() async throws {
        let script = PeerScript([json(200, GraphBodies.profile)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            let profile = try await client.me(
                fields: GraphProfile.defaultFields + ["picture.type(large)"], accessToken: Fixture.userToken,
                credentials: Fixture.credentials
            )
            let request = try #require(script.requests.first)
            #expect(request.method == "GET")
            #expect(request.route == "/v21.0/me")
            #expect(request.query["access_token"] == Fixture.userToken)
            #expect(request.query["appsecret_proof"] == Fixture.userTokenProof)
            #expect(Fixture.credentials.appSecretProof(for: Fixture.userToken) == Fixture.userTokenProof)
            #expect(
                request.query["fields"]
                    == "id,name,first_name,middle_name,last_name,email,link,picture,picture.type(large)"
            )
            #expect(request.header("Accept") == "application/json")
            #expect(profile.id == "10215241773831025")
            #expect(profile.name == "Jane Q Doe")
            #expect(profile.firstName == "Jane")
            #expect(profile.middleName == "Q")
            #expect(profile.lastName == "Doe")
            #expect(profile.email == "jane@example.com")
            #expect(profile.link == nil)
            #expect(profile.picture?.width == 50)
            #expect(profile.picture?.isSilhouette == false)
            #expect(profile.pictureURL?.hasPrefix("https://platform-lookaside.fbsbx.com/platform/profilepic/") == true)
        }
    }

    @Test("debug_token uses the app token APP_ID|APP_SECRET and no proof")
    func debugToken() async throws {
        let script = PeerScript([json(200, GraphBodies.debugValidShort)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            _ = try await client.debugToken(inputToken: Fixture.userToken, credentials: Fixture.credentials)
            let request = try #require(script.requests.first)
            #expect(request.route == "/v21.0/debug_token")
            #expect(request.query["input_token"] == Fixture.userToken)
            #expect(request.query["access_token"] == "\(Fixture.appID)|\(Fixture.appSecret)")
            #expect(request.query["appsecret_proof"] == nil)
        }
    }

    @Test("permissions are split into granted, declined and expired")
    func permissions() async throws {
        let script = PeerScript([json(200, GraphBodies.permissions)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            let permissions = try await client.permissions(
                accessToken: Fixture.userToken, credentials: Fixture.credentials
            )
            #expect(
                permissions
                    == GraphPermissions(
                        granted: ["public_profile", "email"], declined: ["user_friends"], expired: ["user_link"]))
            #expect(permissions.isGranted("email"))
            let request = try #require(script.requests.first)
            #expect(request.route == "/v21.0/me/permissions")
            #expect(request.query["appsecret_proof"] == Fixture.userTokenProof)
        }
    }

    @Test("revocation is DELETE /me/permissions with token and proof")
    func revoke() async throws {
        let script = PeerScript([json(200, #"{"success":true}"#)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            try await client.revokePermissions(accessToken: Fixture.userToken, credentials: Fixture.credentials)
            let request = try #require(script.requests.first)
            #expect(request.method == "DELETE")
            #expect(request.route == "/v21.0/me/permissions")
            #expect(request.query["access_token"] == Fixture.userToken)
            #expect(request.query["appsecret_proof"] == Fixture.userTokenProof)
        }
    }

    @Test("the code exchange sends client_id, the exact redirect_uri, client_secret and code, and no token")
    func exchangeCode() async throws {
        let script = PeerScript([json(200, GraphBodies.codeGrant)])
        let redirect = "https://app.example/cb?x=1&y=a b"
        try await withGraphPeer({ script.next($0) }) { _, client in
            let grant = try await client.exchangeCode(
                code: Fixture.code, redirectURI: redirect, credentials: Fixture.credentials
            )
            #expect(grant.accessToken == "EAAZAk38ShortLived")
            #expect(grant.tokenType == "bearer")
            #expect(grant.expiresIn == 4172)
            #expect(grant.expiresAt(from: Date(timeIntervalSince1970: 0)) == Date(timeIntervalSince1970: 4172))
            let request = try #require(script.requests.first)
            #expect(request.route == "/v21.0/oauth/access_token")
            #expect(
                request.query == [
                    "client_id": Fixture.appID, "redirect_uri": redirect, "client_secret": Fixture.appSecret,
                    "code": Fixture.code,
                ])
        }
    }

    @Test("the legacy form-encoded code exchange answer is read too")
    func legacyGrant() async throws {
        try await withGraphPeer({ _ in .text("access_token=EAAOld%7Cform&expires=5108") }) { _, client in
            let grant = try await client.exchangeCode(
                code: Fixture.code, redirectURI: "https://a.example/", credentials: Fixture.credentials
            )
            #expect(grant.accessToken == "EAAOld|form")
            #expect(grant.expiresIn == 5108)
        }
    }

    @Test("the long-lived exchange sends grant_type=fb_exchange_token")
    func exchangeLongLived() async throws {
        let script = PeerScript([json(200, GraphBodies.longLived)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            let grant = try await client.exchangeForLongLivedToken(
                accessToken: Fixture.userToken, credentials: Fixture.credentials
            )
            #expect(grant.accessToken == "EAALongLivedToken456")
            let request = try #require(script.requests.first)
            #expect(
                request.query == [
                    "grant_type": "fb_exchange_token", "client_id": Fixture.appID, "client_secret": Fixture.appSecret,
                    "fb_exchange_token": Fixture.userToken,
                ])
        }
    }

    @Test("the picture is asked with redirect=false and the size")
    func picture() async throws {
        let script = PeerScript([json(200, GraphBodies.picture)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            let picture = try await client.pictureURL(
                size: GraphPictureSize(kind: .large, width: 200, height: 200), accessToken: Fixture.userToken,
                credentials: Fixture.credentials
            )
            #expect(picture.width == 50)
            #expect(picture.height == 50)
            #expect(!picture.isSilhouette)
            #expect(picture.url.contains("asid=113457059789516"))
            let request = try #require(script.requests.first)
            #expect(request.route == "/v21.0/me/picture")
            #expect(request.query["redirect"] == "false")
            #expect(request.query["type"] == "large")
            #expect(request.query["width"] == "200")
            #expect(request.query["height"] == "200")
            #expect(request.query["appsecret_proof"] == Fixture.userTokenProof)
        }
    }

    @Test("get sends the path and query, and the client's own authentication overrides the caller's")
    func get() async throws {
        let script = PeerScript([json(200, #"{"data":[]}"#)])
        try await withGraphPeer({ script.next($0) }) { _, client in
            let body = try await client.get(
                path: "/me/accounts", query: [("limit", "5"), ("access_token", "forged")],
                authentication: .user(accessToken: Fixture.userToken), credentials: Fixture.credentials
            )
            #expect(String(decoding: body, as: UTF8.self) == #"{"data":[]}"#)
            let request = try #require(script.requests.first)
            #expect(request.route == "/v21.0/me/accounts")
            #expect(request.query["limit"] == "5")
            #expect(request.query["access_token"] == Fixture.userToken)
        }
    }

    @Test("the default version applies when the credentials name none; a malformed one or path is refused")
    func versions() async throws {
        let script = PeerScript([json(200, GraphBodies.permissions)])
        try await withGraphPeer({ script.next($0) }) { peer, client in
            let unversioned = GraphCredentials(appID: Fixture.appID, appSecret: Fixture.appSecret)
            _ = try await client.permissions(accessToken: Fixture.userToken, credentials: unversioned)
            let pinned = GraphCredentials(appID: Fixture.appID, appSecret: Fixture.appSecret, version: "v25.0")
            _ = try await client.permissions(accessToken: Fixture.userToken, credentials: pinned)
            #expect(script.requests.map(\.route) == ["/v21.0/me/permissions", "/v25.0/me/permissions"])
            let bad = GraphCredentials(appID: Fixture.appID, appSecret: Fixture.appSecret, version: "../x")
            let error = await graphError {
                try await client.permissions(accessToken: Fixture.userToken, credentials: bad)
            }
            #expect(error.map(ErrorClass.init) == .other)
            for path in ["../admin", "me/../x", "me?x=1", "", "me//x", "me/%2e"] {
                let pathError = await graphError {
                    try await client.get(path: path, query: [], authentication: .none, credentials: Fixture.credentials)
                }
                #expect(pathError.map(ErrorClass.init) == .other, "\(path)")
            }
            #expect(peer.requestCount == 2)
        }
    }

    @Test("configuration: https required, plain http only for loopback with the switch")
    func configuration() throws {
        #expect(throws: GraphClient.ConfigurationError.self) {
            try GraphClient(configuration: .init(baseURL: "http://127.0.0.1:9"))
        }
        #expect(throws: GraphClient.ConfigurationError.self) {
            try GraphClient(configuration: .init(baseURL: "http://graph.example.com", allowsPlainHTTP: true))
        }
        #expect(throws: GraphClient.ConfigurationError.self) {
            try GraphClient(configuration: .init(baseURL: "ftp://graph.facebook.com"))
        }
        #expect(throws: GraphClient.ConfigurationError.self) {
            try GraphClient(configuration: .init(defaultVersion: "21"))
        }
        let secure = try GraphClient()
        secure.shutdown()
        let loopback = try GraphClient(configuration: .init(baseURL: "http://localhost:8089/", allowsPlainHTTP: true))
        loopback.shutdown()
        let settings = try Settings.parse(["FBS_GRAPH_URL": "http://127.0.0.1:7000", "FBS_GRAPH_TIMEOUT": "2.5"]).get()
        let derived = GraphClient.Configuration(settings: settings)
        #expect(derived.allowsPlainHTTP)
        #expect(derived.timeout == .milliseconds(2500))
        #expect(derived.defaultVersion == Settings.defaultGraphVersion)
        let production = GraphClient.Configuration(settings: try Settings.parse([:]).get())
        #expect(!production.allowsPlainHTTP)
        #expect(production.baseURL == "https://graph.facebook.com")
    }

    @Test("Every answer's facebook-api-version reaches the observer with the app and the version asked for")
    func servedVersionsAreObserved() async throws {
        let seen = Locked<[[String]]>([])
        let script = PeerScript([
            json(200, GraphBodies.profile, headers: [("facebook-api-version", "v22.0")]),
            json(200, GraphBodies.profile, headers: [("facebook-api-version", "v22.0; drop table")]),
            json(200, GraphBodies.profile),
        ])
        try await withGraphPeer(servedVersions: { app, requested, served in seen.withLock { $0.append([app, requested, served]) } }) {
            script.next($0)
        } _: { _, client in
            for _ in 0..<3 {
                _ = try await client.me(
                    fields: GraphProfile.defaultFields, accessToken: Fixture.userToken, credentials: Fixture.credentials)
            }
        }
        #expect(seen.withLock { $0 } == [[Fixture.appID, "v21.0", "v22.0"]], "a malformed or missing header is not reported")
    }
}
