import HTTPClient
import Testing

@testable import GraphEmulator

/// Injected faults, usage headers and counters (docs/facebook-graph.md §12.13).
@Suite("Fault injection")
struct FaultTests {
    @Test func graphErrorsThenNormal() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.injectFault(.graphError(GraphErrorSpec(code: 17)), endpoint: .me, count: 2)
        for _ in 0..<2 {
            let reply = try await harness.send("GET", "/me?access_token=\(token)")
            #expect(reply.status == 400)
            #expect(
                reply.text.hasPrefix(
                    #"{"error":{"message":"(#17) User request limit reached","type":"OAuthException","code":17,"#
                        + #""is_transient":true,"#
                ))
            #expect(reply.header("x-app-usage") == #"{"call_count":100,"total_cputime":100,"total_time":100}"#)
        }
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        #expect(harness.emulator.callCount(.me) == 3)
        // Other endpoints are unaffected.
        harness.emulator.injectFault(.graphError(GraphErrorSpec(code: 190, subcode: 460)), endpoint: .debugToken)
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        let debug = try await harness.send("GET", "/debug_token?input_token=\(token)&access_token=1234567890%7Cs3cret")
        #expect(debug.graphError?["error_subcode"]?.intValue == 460)
        #expect(debug.header("www-authenticate")?.contains("invalid_token") == true)
    }

    @Test func serverErrorsAndBrokenBodies() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.injectFault(.httpStatus(500), endpoint: .me)
        harness.emulator.injectFault(.malformedBody, endpoint: .me)
        harness.emulator.injectFault(.emptyBody, endpoint: .me)
        harness.emulator.injectFault(.htmlPage, endpoint: .me)
        let server = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(server.status == 500)
        #expect(server.graphError?["code"]?.intValue == 2)
        #expect(server.graphError?["is_transient"]?.boolValue == true)
        let malformed = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(malformed.status == 200 && malformed.json == nil && !malformed.body.isEmpty)
        let empty = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(empty.status == 200 && empty.body.isEmpty)
        let html = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(html.status == 500 && html.header("content-type")?.hasPrefix("text/html") == true)
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
    }

    @Test func droppedConnection() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.injectFault(.dropConnection, endpoint: .me)
        await #expect(throws: ClientError.self) {
            _ = try await harness.send("GET", "/me?access_token=\(token)")
        }
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        #expect(harness.emulator.callCount(.me) == 2)
        // libcurl resends a request once by itself when a reused keep-alive connection closes without an answer
        // (it takes the connection for stale), so one drop on a reused connection goes unseen: the emulator
        // counts two calls and the client gets the second answer. Two drops in a row reach the client.
        harness.emulator.injectFault(.dropConnection, endpoint: .me, count: 1)
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        #expect(harness.emulator.callCount(.me) == 4)
        harness.emulator.injectFault(.dropConnection, endpoint: .me, count: 2)
        await #expect(throws: ClientError.self) {
            _ = try await harness.send("GET", "/me?access_token=\(token)")
        }
        #expect(harness.emulator.callCount(.me) == 6)
    }

    @Test func usageHeaderKnob() async throws {
        let harness = try Harness()
        let token = try harness.token()
        harness.emulator.setAppUsage(AppUsage(callCount: 80, totalCPUTime: 12, totalTime: 95), appID: harness.app.id)
        let reply = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(reply.header("x-app-usage") == #"{"call_count":80,"total_cputime":12,"total_time":95}"#)
        let anonymous = try await harness.send("GET", "/\(harness.user.id)/picture?redirect=false")
        #expect(anonymous.header("x-app-usage") == nil)
    }

    @Test func countersAndReset() async throws {
        let harness = try Harness()
        let token = try harness.token()
        _ = try await harness.send("GET", "/me?access_token=\(token)")
        _ = try await harness.send("GET", "/\(harness.user.id)?access_token=\(token)")
        _ = try await harness.send("GET", "/me/permissions?access_token=\(token)")
        _ = try await harness.send("GET", "/nope/edge")
        let counts = harness.emulator.callCounts
        #expect(counts[.me] == 1 && counts[.user] == 1 && counts[.permissions] == 1 && counts[.other] == 1)
        harness.emulator.resetCounters()
        #expect(harness.emulator.callCount(.me) == 0)
        harness.emulator.reset()
        #expect(harness.emulator.apps.isEmpty && harness.emulator.users.isEmpty)
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 400)
    }
}
