import Foundation
import Testing
@testable import FBSessionsAPI
@testable import FBSessionsCore
@testable import FBSessionsGraph
@testable import FBSessionsStorage
import Crypto
import HTTPClient

/// Every input in `Fuzz/Corpus/<Fuzzer>/` (the seeds, and every crash the fuzzers ever found, added there as the
/// regression) replayed through the same parsers as its fuzzer, in the normal suite: no libFuzzer build needed
/// to keep a fixed crash fixed. The calls mirror `Fuzz/Sources/<Fuzzer>/Fuzzer.swift`.
@Suite struct FuzzCorpusReplayTests {
    /// The modulus of RFC 7515 Appendix A.2's key (FuzzLimitedLogin checks signatures against it).
    enum RSATestVector {
        static let modulus =
            "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS"
            + "-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R"
            + "2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDT"
            + "W9gb54h4FRWyuXpoQ"
    }

    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus")

    static func inputs(_ fuzzer: String) throws -> [(String, [UInt8])] {
        let folder = corpus.appendingPathComponent(fuzzer)
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().map { name in
            (name, Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
    }

    @Test func requestJSON() throws {
        let inputs = try Self.inputs("FuzzRequestJSON")
        #expect(!inputs.isEmpty)
        for (_, bytes) in inputs {
            let body = Data(bytes)
            if let login = try? JSONDecoder().decode(LoginRequest.self, from: body) { _ = try? Validation.owner(login.owner) }
            if let url = try? JSONDecoder().decode(LoginURLRoutes.Body.self, from: body) { _ = try? Validation.owner(url.owner) }
            if let activate = try? JSONDecoder().decode(OwnerRoutes.ActivateRequest.self, from: body) {
                _ = try? Validation.sessionID(activate.sessionID, field: "session_id")
            }
            if let text = String(data: body, encoding: .utf8) {
                _ = Session.isWellFormedID(text)
                _ = try? EventCursor(parsing: text)
                _ = APIKeyText.id(in: text)
            }
        }
        // The seeds decode as the API would: a token login with slot and activate.
        let login = try JSONDecoder().decode(LoginRequest.self, from: Data(inputs.first { $0.0 == "login-token.json" }!.1))
        #expect(login.owner == "user-42" && login.slot == 1 && login.activate)
    }

    @Test func pathsAndQueries() throws {
        let templates = ["/v1/sessions/{id}", "/v1/owners/{owner}/sessions"].map(PathTemplate.init)
        for (_, bytes) in try Self.inputs("FuzzPathQuery") {
            let target = String(decoding: bytes, as: UTF8.self)
            let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
            for template in templates { _ = template.match(String(path)) }
            _ = QueryString.parse(target.contains("?") ? String(target[target.index(after: target.firstIndex(of: "?")!)...]) : "")
            _ = PercentDecoding.decode(Substring(target), plusIsSpace: true)
        }
        guard case .matched(let parameters) = PathTemplate("/v1/owners/{owner}/sessions").match("/v1/owners/a%2Fb%40c/sessions")
        else { Issue.record("no match"); return }
        #expect(parameters["owner"] == "a/b@c")
    }

    @Test func signedRequests() throws {
        var parsed = 0
        for (_, bytes) in try Self.inputs("FuzzSignedRequest") {
            guard let envelope = try? SignedRequest.Envelope(parsing: String(decoding: bytes, as: UTF8.self)) else { continue }
            #expect(envelope.isSigned(withSecret: "fuzz-secret"))
            if (try? envelope.contents()) != nil { parsed += 1 }
        }
        #expect(parsed >= 1)
    }

    @Test func graphResponses() throws {
        let scrubber = SecretScrubber(["fuzz-token-value", "fuzz-app-secret"])
        let endpoint = GraphEndpoint("me", path: "me", authentication: .user(accessToken: "fuzz-token-value"))
        for (_, bytes) in try Self.inputs("FuzzGraphResponses") {
            let body = Data(bytes)
            if let envelope = try? JSONDecoder().decode(GraphWire.ErrorEnvelope.self, from: body) {
                #expect(!envelope.error.detail(httpStatus: 400, scrub: scrubber.scrub).message.contains("access_token=abc"))
            }
            _ = try? JSONDecoder().decode(GraphWire.DebugTokenEnvelope.self, from: body)
            _ = try? JSONDecoder().decode(GraphWire.Profile.self, from: body)
            _ = try? JSONDecoder().decode(GraphWire.Permissions.self, from: body)
            _ = try? JSONDecoder().decode(GraphWire.TokenGrant.self, from: body)
            let text = String(decoding: body, as: UTF8.self)
            _ = GraphClient.appUsage(text)
            let response = ClientResponse(status: 400, headers: [("x-app-usage", text)], body: bytes)
            _ = GraphClient.read(response, endpoint, scrubber) { _, _ in Result<Int, GraphError>.success(0) }
        }
    }

    @Test func limitedLogin() throws {
        let example = try RSAPublicKey(
            modulus: try #require(Base64URL.decode(RSATestVector.modulus)), exponent: [1, 0, 1])
        var signatures = 0
        var keySets = 0
        var claims = 0
        var bound = 0
        for (_, bytes) in try Self.inputs("FuzzLimitedLogin") {
            let text = String(decoding: bytes, as: UTF8.self)
            if let jws = try? CompactJWS(parsing: text) {
                if let parsed = try? AuthenticationTokenClaims(verifiedPayload: jws.payload) {
                    _ = try? parsed.check(audience: "4242", now: Date(), leeway: 60)
                    claims += 1
                }
                if let refreshed = try? AuthenticationTokenClaims(verifiedPayload: jws.payload, nonceRule: .notChecked) {
                    let record = RefreshRecord(claims: refreshed, token: text, sessionID: "ses_replay", appID: "app_replay")
                    _ = record.refusal(storedUserID: "10000000000000001")
                    _ = record.changesBinding(from: "stored-thumbprint")
                    if refreshed.deviceKeyThumbprint != nil { bound += 1 }
                }
                if example.isValidRS256Signature(jws.signature, for: jws.signingInput) { signatures += 1 }
            }
            _ = SessionService.expiry(ofStoredToken: text)
            if let set = try? JSONWebKeySet(parsing: bytes) { keySets += set.keys.count }
            if (try? AuthenticationTokenClaims(verifiedPayload: bytes)) != nil { claims += 1 }
            _ = CacheControl.maxAge([text])
        }
        // The seeds: the RFC 7515 example verifies, the set has its one RSA key, the Facebook-shaped claims read (a
        // login's and a refreshed one's, each as a token and alone); the refreshed token is bound to a device key.
        #expect(signatures == 1 && keySets == 1 && claims == 4 && bound == 1)
    }

    @Test func migrationFiles() throws {
        for (name, bytes) in try Self.inputs("FuzzMigrationFiles") {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fbs-replay-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("0001_base.sql").path, contents: Data("SELECT 1;".utf8))
            let newline = bytes.firstIndex(of: 0x0A) ?? bytes.endIndex
            let file = String(decoding: bytes[..<newline], as: UTF8.self)
            guard !file.isEmpty, !file.contains("/") else { continue }
            _ = FileManager.default.createFile(
                atPath: folder.appendingPathComponent(file).path,
                contents: newline < bytes.endIndex ? Data(bytes[(newline + 1)...]) : Data())
            let loaded = try? Migration.load(from: folder)
            if name == "valid" { #expect(loaded?.count == 2) } else { #expect(loaded == nil, "\(name)") }
        }
    }
}
