import Crypto
import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import FBSessionsStorage
import Foundation
import GraphEmulator
import HTTPClient
import HTTPServer
import Postgres
import Support
import TestSupport

/// The login flow and Facebook's callbacks end to end: a ``SessionHarness`` with a second tenant, a browser-like
/// driver for the emulator's login dialog, and `signed_request` signing.
final class LoginFlowHarness: Sendable {
    static let redirectURI = "https://shop.example/callback"

    let base: SessionHarness
    /// A second tenant with its own redirect URI and key.
    let otherApp: App
    let otherKey: String

    var server: Server { base.server }

    init(maxSlots: Int = 8) async throws {
        base = try await SessionHarness(maxSlots: maxSlots)
        otherApp = try await base.service.apps.addApp(
            AppDraft(
                name: "other-shop", facebookAppID: "777000111",
                secret: SecretsTranscript.noted("app secret", "other-shop-secret"),
                redirectURIs: ["https://other.example/callback"], requiredPermissions: []))
        otherKey = SecretsTranscript.noted(
            "api key", try await base.keys.addKey(appID: otherApp.id, scopes: Scope.allCases).text)
    }

    func stop() {
        base.stop()
    }

    // MARK: Calls

    func call(
        _ method: String, _ path: String, json: Any? = nil, key: String? = nil, headers extra: [(String, String)] = []
    ) async throws -> SessionHarness.Reply {
        var headers = [("Authorization", "Bearer \(key ?? base.key)")] + extra
        var body: [UInt8]?
        if let json {
            body = Array(try JSONSerialization.data(withJSONObject: json))
            headers.append(("Content-Type", "application/json"))
        }
        return try await send(ClientRequest(method: method, url: url(path), headers: headers, body: body))
    }

    /// A form POST without a key, as Facebook sends its callbacks.
    func postForm(
        _ path: String, _ body: String, contentType: String = "application/x-www-form-urlencoded"
    ) async throws -> SessionHarness.Reply {
        try await send(
            ClientRequest(method: "POST", url: url(path), headers: [("Content-Type", contentType)], body: Array(body.utf8)))
    }

    /// A callback with one `signed_request` field.
    func callback(_ path: String, signedRequest: String) async throws -> SessionHarness.Reply {
        try await postForm(path, "signed_request=" + TestForm.encode(signedRequest))
    }

    /// A GET without a key.
    func publicGet(_ path: String, accept: String? = nil) async throws -> SessionHarness.Reply {
        try await send(ClientRequest(method: "GET", url: url(path), headers: accept.map { [("Accept", $0)] } ?? []))
    }

    func loginURL(
        owner: String, scopes: [String] = ["public_profile", "email"], authType: String? = nil, slot: Int? = nil,
        redirectURI: String = LoginFlowHarness.redirectURI, key: String? = nil
    ) async throws -> SessionHarness.Reply {
        var body: [String: Any] = ["owner": owner, "redirect_uri": redirectURI, "scopes": scopes]
        body["auth_type"] = authType ?? NSNull()
        if let slot { body["slot"] = slot }
        return try await call("POST", "/v1/login-urls", json: body, key: key)
    }

    func codeLogin(owner: String, code: String, state: String, slot: Int? = nil, key: String? = nil) async throws
        -> SessionHarness.Reply
    {
        var body: [String: Any] = ["owner": owner, "code": code, "state": state]
        if let slot { body["slot"] = slot }
        return try await call("POST", "/v1/sessions", json: body, key: key)
    }

    func count(_ query: PostgresQuery) async throws -> Int {
        try await base.rows(query).first?.decode("n", as: Int.self) ?? -1
    }

    private func url(_ path: String) -> String { "http://127.0.0.1:\(server.port)\(path)" }

    private func send(_ request: ClientRequest) async throws -> SessionHarness.Reply {
        let response = try await base.client.execute(request)
        return SessionHarness.Reply(status: response.status, headers: response.headers, body: response.body)
    }

    // MARK: The login dialog, as a browser drives it

    /// Where the dialog sent the browser: the redirect's query parameters (fragment dropped).
    struct Redirect {
        let location: String
        let parameters: [String: String]
        var code: String? { parameters["code"] }
        var state: String? { parameters["state"] }
    }

    /// Opens the dialog URL, reads its form, and submits it as `userID` with `action` (approve or cancel).
    func completeDialog(_ dialogURL: String, as userID: String, action: String = "approve") async throws -> Redirect {
        let page = try await base.client.execute(ClientRequest(method: "GET", url: dialogURL))
        guard page.status == 200 else { throw TestSetupError("dialog page answered \(page.status)") }
        let html = String(decoding: page.body, as: UTF8.self)
        guard html.contains("value=\"\(userID)\"") else { throw TestSetupError("the dialog does not offer the user") }
        var fields: [(String, String)] = []
        for match in html.matches(of: #/<input type=hidden name="([^"]+)" value="([^"]*)">/#) {
            fields.append((String(match.1), Self.unescape(String(match.2))))
        }
        for match in html.matches(of: #/<input type=checkbox name=grant value="([^"]+)" checked>/#) {
            fields.append(("grant", Self.unescape(String(match.1))))
        }
        fields += [("user_id", userID), ("action", action)]
        let form = fields.map { TestForm.encode($0.0) + "=" + TestForm.encode($0.1) }
            .joined(separator: "&")
        guard let action = html.firstMatch(of: #/<form method=post action="([^"]+)">/#)?.1 else {
            throw TestSetupError("no form on the dialog page")
        }
        let posted = try await base.client.execute(
            ClientRequest(
                method: "POST", url: base.emulator.baseURL + action,
                headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8)))
        guard posted.status == 302, let location = posted.header("Location") else {
            throw TestSetupError("the dialog answered \(posted.status) instead of a redirect")
        }
        let withoutFragment = location.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let query = withoutFragment.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
        let pairs = QueryString.parse(query) ?? []
        return Redirect(
            location: location, parameters: Dictionary(pairs.map { ($0.name, $0.value) }, uniquingKeysWith: { $1 }))
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    // MARK: signed_request

    /// `base64url(HMAC-SHA256(secret, payloadPart)).payloadPart` with `payloadPart = base64url(json)`.
    static func sign(_ json: String, secret: String) -> String {
        let payload = Base64URL.encode(Array(json.utf8))
        return Base64URL.encode(HMACSHA256.authenticationCode(for: payload, key: Array(secret.utf8))) + "." + payload
    }

    /// A deauthorize or deletion payload for a user.
    static func payload(userID: String, algorithm: String = "HMAC-SHA256") -> String {
        #"{"algorithm":"\#(algorithm)","expires":1291840400,"issued_at":\#(Int(Date().timeIntervalSince1970)),"user_id":"\#(userID)"}"#
    }
}

/// Form and query encoding for test requests: every byte outside `A-Z a-z 0-9 - . _ ~` as `%XX`.
enum TestForm {
    static func encode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80, CharacterSet.alphanumerics.contains(scalar) || "-._~".unicodeScalars.contains(scalar) {
                output.unicodeScalars.append(scalar)
            } else {
                output += String(format: "%%%02X", byte)
            }
        }
        return output
    }
}
