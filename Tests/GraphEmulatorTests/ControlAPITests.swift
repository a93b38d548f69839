import Testing

@testable import GraphEmulator

/// The JSON control API under `/__emulator/`, over HTTP.
@Suite("Control API")
struct ControlAPITests {
    @Test func appsUsersTokensRoundTrip() async throws {
        let harness = try Harness()
        let app = try await harness.control(
            "POST", "apps",
            #"{"id":"777","secret":"sh","name":"Other","require_proof":true,"redirect_uris":["https://x.example/cb"]}"#)
        #expect(app.status == 201)
        #expect(app.json?["app_token"]?.stringValue == "777|sh")
        #expect(app.json?["require_proof"]?.boolValue == true)
        let user = try await harness.control(
            "POST", "users", #"{"first_name":"Ann","last_name":"Lee","email":"ann@example.com","has_picture":false}"#)
        #expect(user.status == 201)
        let userID = try #require(user.json?["id"]?.stringValue)
        #expect(userID.count == 16 && user.json?["name"]?.stringValue == "Ann Lee")
        let users = try await harness.control("GET", "users")
        #expect(users.json?["users"]?.arrayValue?.count == 2)

        let issued = try await harness.control(
            "POST", "tokens",
            #"{"app_id":"1234567890","user_id":"\#(userID)","granted":["email"],"declined":["user_link"],"#
                + #""long_lived":true}"#
        )
        #expect(issued.status == 201)
        let token = try #require(issued.json?["access_token"]?.stringValue)
        #expect(issued.json?["type"]?.stringValue == "USER")
        #expect(issued.json?["granted"] == .strings(["public_profile", "email"]))
        #expect(issued.json?["expires_in"]?.intValue == 5_184_000)
        let me = try await harness.send("GET", "/me?fields=name,email&access_token=\(token)")
        #expect(me.text == #"{"name":"Ann Lee","email":"ann@example.com","id":"\#(userID)"}"#)

        let patched = try await harness.control("PATCH", "users/\(userID)", #"{"first_name":"Anne","email":null}"#)
        #expect(patched.json?["email"] == .null)
        let changed = try await harness.send("GET", "/me?fields=name,email&access_token=\(token)")
        #expect(changed.text == #"{"name":"Anne Lee","id":"\#(userID)"}"#)

        let invalidated = try await harness.control(
            "POST", "tokens/invalidate", #"{"access_token":"\#(token)","subcode":460}"#)
        #expect(invalidated.json?["invalidation"]?.intValue == 460)
        let inspected = try await harness.control("POST", "tokens/inspect", #"{"access_token":"\#(token)"}"#)
        #expect(inspected.json?["invalidation"]?.intValue == 460)
        #expect(
            try await harness.send("GET", "/me?access_token=\(token)").graphError?["error_subcode"]?.intValue == 460)
        let byUser = try await harness.control("POST", "tokens/invalidate", #"{"user_id":"\#(userID)","subcode":467}"#)
        #expect(byUser.json?["invalidated"]?.intValue == 1)

        let appToken = try await harness.control("POST", "tokens", #"{"app_id":"1234567890","type":"app"}"#)
        #expect(appToken.json?["access_token"]?.stringValue?.hasPrefix("1234567890|") == true)
        let page = try await harness.control(
            "POST", "tokens", #"{"app_id":"1234567890","user_id":"\#(userID)","type":"page","page_id":"55"}"#)
        #expect(page.json?["type"]?.stringValue == "PAGE")

        let code = try await harness.control(
            "POST", "codes",
            #"{"app_id":"1234567890","user_id":"\#(userID)","redirect_uri":"https://app.example/callback"}"#)
        #expect(code.json?["code"]?.stringValue?.hasPrefix("AQ") == true)
    }

    @Test func clockLatencyFaultsCountersOptions() async throws {
        let harness = try Harness()
        let before = harness.emulator.now
        let clock = try await harness.control("POST", "clock", #"{"advance":86400}"#)
        #expect((clock.json?["now"]?.intValue ?? 0) >= before + 86400)
        #expect(clock.json?["offset"]?.intValue == 86400)
        let set = try await harness.control("POST", "clock", #"{"now":2000000000}"#)
        #expect(set.json?["now"]?.intValue == 2_000_000_000)

        let latency = try await harness.control("PUT", "latency", #"{"endpoint":"me","ms":25}"#)
        #expect(latency.json?["me"]?.doubleValue == 25)
        let fault = try await harness.control(
            "POST", "faults", #"{"endpoint":"me","count":2,"kind":"graph_error","code":4}"#)
        #expect(fault.status == 201)
        #expect(harness.emulator.pendingFaults(for: .me).first?.remaining == 2)
        let token = try harness.token()
        let limited = try await harness.send("GET", "/me?access_token=\(token)")
        #expect(limited.graphError?["message"]?.stringValue == "(#4) Application request limit reached")
        let listed = try await harness.control("GET", "faults")
        #expect(listed.json?["faults"]?["me"]?.arrayValue?.first?["remaining"]?.intValue == 1)
        _ = try await harness.control("DELETE", "faults")
        #expect(try await harness.send("GET", "/me?access_token=\(token)").status == 200)
        _ = try await harness.control("POST", "faults", #"{"endpoint":"picture","kind":"http_status","status":503}"#)
        #expect(try await harness.send("GET", "/\(harness.user.id)/picture").status == 503)

        let usage = try await harness.control(
            "PUT", "app-usage", #"{"call_count":99,"total_cputime":1,"total_time":2}"#)
        #expect(usage.status == 200)
        #expect(
            try await harness.send("GET", "/me?access_token=\(token)").header("x-app-usage")
                == #"{"call_count":99,"total_cputime":1,"total_time":2}"#)

        let counters = try await harness.control("GET", "counters")
        #expect(counters.json?["me"]?.intValue == 3)
        #expect(counters.json?["picture"]?.intValue == 1)
        let cleared = try await harness.control("DELETE", "counters")
        #expect(cleared.json?["me"]?.intValue == 0)

        let options = try await harness.control(
            "PUT", "options", #"{"omit_error_subcode":true,"bare_true_on_delete":true}"#)
        #expect(options.json?["omit_error_subcode"]?.boolValue == true)
        #expect(harness.emulator.answersBareTrueOnDelete)

        #expect(try await harness.control("POST", "reset").status == 200)
        #expect(harness.emulator.apps.isEmpty)
        #expect(harness.emulator.now < 2_000_000_000)
    }

    @Test func demoSeedAndToken() async throws {
        let harness = try Harness()
        let seeded = try await harness.control("POST", "demo")
        #expect(seeded.json?["app"]?["id"]?.stringValue == Emulator.demoAppID)
        #expect(seeded.json?["instructions"]?.stringValue?.contains("/__emulator/demo-token?user=alice") == true)
        let demo = try await harness.control("POST", "demo-token?user=bob")
        #expect(demo.status == 201)
        let token = try #require(demo.json?["access_token"]?.stringValue)
        let me = try await harness.send("GET", "/me?fields=name,email,picture&access_token=\(token)")
        #expect(me.json?["name"]?.stringValue == "Bob Q Sample")
        #expect(me.json?["picture"]?["data"]?["is_silhouette"]?.boolValue == true)
        let unknown = try await harness.control("POST", "demo-token?user=carol")
        #expect(unknown.status == 404)
    }

    @Test func badControlRequests() async throws {
        let harness = try Harness()
        let json = try await harness.control("POST", "apps", "{nope")
        #expect(json.status == 400 && json.json?["error"]?["code"]?.stringValue == "invalid_json")
        let field = try await harness.control("POST", "users", #"{"frist_name":"x"}"#)
        #expect(field.status == 400 && field.json?["error"]?["message"]?.stringValue == "Unknown field frist_name.")
        let type = try await harness.control("POST", "users", #"{"has_picture":"yes"}"#)
        #expect(type.status == 400)
        let subcode = try await harness.control("POST", "tokens/invalidate", #"{"access_token":"x","subcode":999}"#)
        #expect(subcode.status == 400)
        let endpoint = try await harness.control("PUT", "latency", #"{"endpoint":"mee","ms":1}"#)
        #expect(endpoint.status == 400)
        let route = try await harness.control("GET", "nothing")
        #expect(route.status == 404)
        let noUser = try await harness.control("POST", "tokens", #"{"app_id":"1234567890","user_id":"1"}"#)
        #expect(noUser.status == 404)
        let index = try await harness.control("GET", "")
        #expect(index.json?["endpoints"]?.arrayValue?.count == GraphEndpoint.allCases.count)
    }
}
