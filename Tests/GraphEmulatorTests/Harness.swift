import Crypto
import Foundation
import HTTPClient
import HTTPServer
import Testing

@testable import GraphEmulator

/// A running emulator with an app and a user, a client, and request helpers. Each test makes its own, so tests
/// can run in parallel.
final class Harness: Sendable {
    let emulator: Emulator
    let server: Server
    let client: Client
    let app: EmulatedApp
    let user: EmulatedUser

    init(configuration: Emulator.Configuration = Emulator.Configuration(), requiresProof: Bool = false) throws {
        emulator = Emulator(configuration: configuration)
        server = try emulator.start()
        client = try Client(configuration: .init(timeout: .seconds(10)))
        app = try emulator.registerApp(
            id: "1234567890", secret: "s3cret", name: "Test App", requiresProof: requiresProof,
            clientToken: "client-tok", redirectURIs: ["https://app.example/callback"])
        user = try emulator.createUser(
            id: "10215241773831025", firstName: "Jane", middleName: "Q", lastName: "Doe", email: "jane@example.com",
            link: "https://www.facebook.com/app_scoped_user_id/10215241773831025/")
    }

    deinit {
        client.shutdown()
        server.shutdown(gracePeriod: 1)
    }

    var base: String { emulator.baseURL }

    /// Sends a request to `path` (relative to the emulator's base URL).
    func send(
        _ method: String = "GET", _ path: String, body: String? = nil, headers: [(String, String)] = []
    ) async throws -> Reply {
        var headers = headers
        if body != nil, !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
        }
        let response = try await client.execute(
            ClientRequest(method: method, url: base + path, headers: headers, body: body.map { Array($0.utf8) }))
        return Reply(response)
    }

    /// A control API call with a JSON body.
    func control(_ method: String, _ path: String, _ json: String? = nil) async throws -> Reply {
        try await send(
            method, "/__emulator/" + path, body: json,
            headers: json == nil ? [] : [("Content-Type", "application/json")])
    }

    /// A user token for the harness user.
    func token(
        granted: [String] = ["public_profile", "email", "user_link"], longLived: Bool = false
    ) throws -> String {
        try emulator.issueToken(appID: app.id, userID: user.id, longLived: longLived, granted: granted).accessToken
    }

    /// `appsecret_proof` for `token` with the harness app's secret.
    func proof(_ token: String, time: Int64? = nil) -> String {
        let message = time.map { token + "|" + String($0) } ?? token
        return Hex.encode(HMACSHA256.authenticationCode(for: message, key: Array(app.secret.utf8)))
    }
}

/// A response, with its body parsed as JSON when it is JSON.
struct Reply: Sendable {
    let status: Int
    let headers: [(String, String)]
    let body: [UInt8]

    init(_ response: ClientResponse) {
        status = response.status
        headers = response.headers
        body = response.body
    }

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: JSONValue? { JSONValue.parse(body) }

    func header(_ name: String) -> String? {
        headers.first { $0.0 == name.lowercased() }?.1
    }

    /// The `error` object of a Graph error body.
    var graphError: JSONValue? { json?["error"] }
}

/// Percent-encodes a query value.
func encoded(_ text: String) -> String {
    FormCoding.encode(text)
}

/// The query parameters of a URL (after `?`, before `#`).
func queryItems(_ url: String) -> [(String, String)] {
    guard let mark = url.firstIndex(of: "?") else { return [] }
    let rest = url[url.index(after: mark)...]
    let query = rest.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
    return FormCoding.parse(query) ?? []
}

extension Array where Element == (String, String) {
    /// The first value named `name`.
    func value(_ name: String) -> String? {
        first { $0.0 == name }?.1
    }
}
