import Foundation
import Testing

@testable import GraphEmulator

/// `appsecret_proof` (docs/facebook-graph.md §8, §12.11).
@Suite("appsecret_proof")
struct ProofTests {
    static let missing = "API calls from the server require an appsecret_proof argument"
    static let invalid = "Invalid appsecret_proof provided in the API argument"

    @Test func requiredProof() async throws {
        let harness = try Harness(requiresProof: true)
        let token = try harness.token()
        let none = try await harness.send("GET", "/v25.0/me?access_token=\(token)")
        #expect(none.status == 400)
        #expect(
            none.text.hasPrefix(
                #"{"error":{"message":"\#(Self.missing)","type":"GraphMethodException","code":100,"fbtrace_id":""#))
        let wrong = try await harness.send(
            "GET", "/me?access_token=\(token)&appsecret_proof=\(String(repeating: "0", count: 64))")
        #expect(wrong.graphError?["message"]?.stringValue == Self.invalid)
        #expect(wrong.graphError?["type"]?.stringValue == "GraphMethodException")
        let classic = try await harness.send("GET", "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token))")
        #expect(classic.status == 200)
        let upper = try await harness.send(
            "GET", "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token).uppercased())")
        #expect(upper.status == 200)
        // Other endpoints too, e.g. permissions and pictures fetched with a token.
        let permissions = try await harness.send("GET", "/me/permissions?access_token=\(token)")
        #expect(permissions.graphError?["message"]?.stringValue == Self.missing)
        // App-token calls and the code exchange carry the secret and need no proof.
        let debug = try await harness.send("GET", "/debug_token?input_token=\(token)&access_token=1234567890%7Cs3cret")
        #expect(debug.status == 200)
    }

    @Test func timeStampedProof() async throws {
        let harness = try Harness(requiresProof: true)
        let token = try harness.token()
        let now = harness.emulator.now
        let fresh = try await harness.send(
            "GET", "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token, time: now))&appsecret_time=\(now)")
        #expect(fresh.status == 200)
        let old = now - 600
        let stale = try await harness.send(
            "GET", "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token, time: old))&appsecret_time=\(old)")
        #expect(stale.graphError?["message"]?.stringValue == Self.invalid)
        let classicWithTime = try await harness.send(
            "GET", "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token))&appsecret_time=\(now)")
        #expect(classicWithTime.graphError?["message"]?.stringValue == Self.invalid)
        let notANumber = try await harness.send(
            "GET", "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token))&appsecret_time=soon")
        #expect(notANumber.graphError?["message"]?.stringValue == Self.invalid)
        // A client on the host clock still passes after the emulator's clock moved (within token lifetime).
        harness.emulator.advanceClock(by: 1800)
        let host = Int64(Date().timeIntervalSince1970)
        let hostStamped = try await harness.send(
            "GET",
            "/me?access_token=\(token)&appsecret_proof=\(harness.proof(token, time: host))&appsecret_time=\(host)")
        #expect(hostStamped.status == 200)
    }

    @Test func optionalProofIsStillChecked() async throws {
        let harness = try Harness(requiresProof: false)
        let token = try harness.token()
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        let wrong = try await harness.send("GET", "/me?access_token=\(token)&appsecret_proof=abcd")
        #expect(wrong.graphError?["message"]?.stringValue == Self.invalid)
        // A token of another app with this app's proof: invalid (§8.2).
        let other = try harness.emulator.registerApp(id: "999", secret: "other")
        let foreign = try harness.emulator.issueToken(appID: other.id, userID: harness.user.id).accessToken
        let crossed = try await harness.send(
            "GET", "/me?access_token=\(foreign)&appsecret_proof=\(harness.proof(foreign))")
        #expect(crossed.graphError?["message"]?.stringValue == Self.invalid)
    }
}
