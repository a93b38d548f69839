import Crypto
import FBSessionsCore
import Foundation
import GraphEmulator
import Support
import TestSupport
import Testing

@testable import FBSessionsGraph

/// Limited Login's client over real HTTP: the key set's answer read strictly (status, body, `Cache-Control`,
/// size), every broken answer a failure the cache survives, the uninstall's answers classified, and no token in
/// what goes wrong.
@Suite struct LimitedLoginClientTests {
    static func client(_ base: String, timeout: Duration = .seconds(2)) throws -> LimitedLoginClient {
        try LimitedLoginClient(
            configuration: .init(
                jwksURL: base + "/.well-known/oauth/openid/jwks/", uninstallURL: base + "/platform/uninstall/",
                timeout: timeout, allowsPlainHTTP: true))
    }

    @Test func cacheControlGivesTheMaxAge() {
        #expect(CacheControl.maxAge(["public, max-age=3600"]) == 3600)
        #expect(CacheControl.maxAge(["max-age=\"120\""]) == 120)
        #expect(CacheControl.maxAge(["private", "MAX-AGE = 60"]) == 60)
        #expect(CacheControl.maxAge(["s-maxage=10"]) == nil)
        #expect(CacheControl.maxAge(["max-age=abc", "max-age=-1"]) == nil)
        #expect(CacheControl.maxAge(["max-age=99999999999"]) == nil)
        #expect(CacheControl.maxAge(["max-age=300, no-cache"]) == 0)
        #expect(CacheControl.maxAge(["no-store"]) == 0)
        #expect(CacheControl.maxAge([]) == nil)
    }

    @Test func theKeySetIsFetchedWithItsMaxAge() async throws {
        let emulator = Emulator()
        let server = try emulator.start()
        defer { server.shutdown(gracePeriod: 0) }
        let client = try Self.client(emulator.baseURL)
        defer { client.shutdown() }
        emulator.keySetMaxAge = 900
        let fetched = try await client.signingKeys()
        #expect(fetched.maxAge == 900)
        #expect(Set(fetched.keys.keys.keys) == Set(emulator.signingKeyIDs))
        emulator.keySetMaxAge = nil
        #expect(try await client.signingKeys().maxAge == nil)
    }

    @Test func everyBrokenAnswerIsAFailure() async throws {
        let answers: [PeerAction] = [
            .respond(status: 500), .text("{\"keys\":[]}", status: 404), .text("<html>no</html>"), .text("[]"),
            .text(#"{"keys":"x"}"#), .closeWithoutResponse, .partialBody(declaredLength: 100, sent: Array("{\"ke".utf8)),
            .respond(status: 200, body: [UInt8](repeating: 0x20, count: 300 * 1024)),
            .redirect(to: "https://evil.example/jwks"), .delayThenRespond(seconds: 3, status: 200, body: Array(#"{"keys":[]}"#.utf8)),
            .text(String(repeating: "[", count: 100_000)),
        ]
        for action in answers {
            let peer = try ScriptedPeer { _ in action }
            defer { peer.stop() }
            let client = try Self.client(peer.baseURL, timeout: .seconds(1))
            defer { client.shutdown() }
            let started = ContinuousClock.now
            await #expect(throws: LimitedLoginClientError.self, "\(action)") { _ = try await client.signingKeys() }
            #expect(ContinuousClock.now - started < .seconds(2), "\(action) outlasted the timeout")
        }
        let empty = try ScriptedPeer { _ in .text(#"{"keys":[]}"#) }
        defer { empty.stop() }
        let client = try Self.client(empty.baseURL)
        defer { client.shutdown() }
        #expect(try await client.signingKeys().keys.keys.isEmpty)
    }

    @Test func uninstallSendsIDTokenAndAppIDOnceAndClassifiesTheAnswer() async throws {
        let seen = Recorded()
        let cases: [(PeerAction, LimitedUninstallError?)] = [
            (.text(#"{"success":true}"#), nil), (.text("true"), nil), (.respond(status: 204), nil),
            (.text(#"{"success":false}"#), .unavailable), (.text("false"), .unavailable),
            (.text(#"{"error":{"message":"Invalid id_token.","type":"OAuthException","code":190}}"#, status: 400), .refused),
            (.text(#"{"error":{"message":"x","code":2,"is_transient":true}}"#, status: 400), .unavailable),
            (.respond(status: 403), .refused), (.respond(status: 429), .unavailable), (.respond(status: 408), .unavailable),
            (.respond(status: 502), .unavailable), (.closeWithoutResponse, .unavailable),
        ]
        for (action, expected) in cases {
            let peer = try ScriptedPeer { request in
                seen.add(request)
                return action
            }
            defer { peer.stop() }
            let client = try Self.client(peer.baseURL)
            defer { client.shutdown() }
            do {
                try await client.uninstall(authenticationToken: "eyJ.tok+en/=", facebookAppID: "4242")
                #expect(expected == nil, "\(action)")
            } catch let error as LimitedUninstallError {
                #expect(error == expected, "\(action)")
                #expect(!String(describing: error).contains("eyJ"))
            }
        }
        let first = try #require(seen.requests.first)
        #expect(first.method == "POST" && first.path == "/platform/uninstall/")
        #expect(first.header("Content-Type") == "application/x-www-form-urlencoded")
        #expect(first.bodyText == "id_token=eyJ.tok%2Ben%2F%3D&app_id=4242")
        #expect(seen.requests.count == cases.count)  // never sent twice, a dropped connection included
    }

    @Test func urlsMustBeHTTPSUnlessLoopbackHTTPIsAllowed() throws {
        #expect(throws: GraphClient.ConfigurationError.self) {
            try LimitedLoginClient(configuration: .init(jwksURL: "http://limited.facebook.com/jwks/"))
        }
        #expect(throws: GraphClient.ConfigurationError.self) {
            try LimitedLoginClient(configuration: .init(uninstallURL: "ftp://x/"))
        }
        #expect(throws: GraphClient.ConfigurationError.self) {
            try LimitedLoginClient(configuration: .init(jwksURL: "http://10.0.0.1/jwks/", allowsPlainHTTP: true))
        }
        let fine = try LimitedLoginClient()
        fine.shutdown()
    }
}

/// Requests a scripted peer saw.
final class Recorded: Sendable {
    private let seen = Locked<[PeerRequest]>([])
    var requests: [PeerRequest] { seen.withLock { $0 } }
    func add(_ request: PeerRequest) { seen.withLock { $0.append(request) } }
}
