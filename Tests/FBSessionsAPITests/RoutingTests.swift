import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import Foundation
import HTTPServer
import Support
import Testing
import TestSupport

/// A route taking a JSON body, to exercise decoding and the error shape before the product routes exist.
private struct Greeting: Codable {
    let owner: String
    let slot: Int?
}

private func makeRouter(keys: InMemoryKeyStore = InMemoryKeyStore(), log: InMemoryLogHandler = InMemoryLogHandler())
    throws -> (Router, MetricsRegistry)
{
    let metrics = MetricsRegistry()
    let echo = Route(
        "POST", "/v1/echo/{owner}", operationID: "echo", scope: .sessions, acceptsJSON: true,
        handler: .waiting { context in
            let greeting = try context.decode(Greeting.self)
            return try JSONResponse.make(200, ["owner": greeting.owner, "path_owner": context.parameters["owner"] ?? ""])
        })
    let crash = Route("GET", "/v1/crash", operationID: "crash", scope: nil, handler: .waiting { _ in
        struct Internal: Error { let secret = "db password 123" }
        throw Internal()
    })
    let routes = try ServiceRoutes.inMemory(keys: keys, metrics: metrics) { parts in
        parts.openAPIDocument = Array("openapi: 3.1.0\n".utf8)
        parts.extraRoutes = [echo, crash]
        parts.logger = { Logger(label: $0, handler: log) }
    }
    return (routes.router, metrics)
}

private func errorCode(_ response: Response) -> String? {
    let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    return (object?["error"] as? [String: Any])?["code"] as? String
}

@Suite struct RoutingTests {
    @Test func pathParametersAreReadByNameInTheTemplatesOrder() {
        let template = PathTemplate("/v1/apps/{app}/keys/{key}")
        guard case .matched(let parameters) = template.match("/v1/apps/a%20b/keys/k1") else {
            Issue.record("no match")
            return
        }
        #expect(parameters["app"] == "a b" && parameters["key"] == "k1")
        #expect(parameters["id"] == nil, "a name the template lacks")
        #expect(parameters.map(\.key) == ["app", "key"], "the template's order")
        #expect(parameters == ["key": "k1", "app": "a b"], "equal whatever the order")
        #expect(parameters != ["app": "a b", "key": "k2"] && parameters != ["app": "a b"])
        var replaced = parameters
        replaced["key"] = "k2"
        #expect(replaced.count == 2 && replaced["key"] == "k2", "a name set again replaces its value")
        replaced["key"] = nil
        #expect(replaced.count == 1 && replaced["key"] == nil)
    }

    @Test func templatesDecodeEachSegmentOnItsOwn() {
        let template = PathTemplate("/v1/owners/{owner}/sessions")
        guard case .matched(let parameters) = template.match("/v1/owners/a%2Fb%40c/sessions") else {
            Issue.record("no match")
            return
        }
        #expect(parameters["owner"] == "a/b@c")
        if case .matched = template.match("/v1/owners/a/b/sessions") { Issue.record("slash split the owner") }
        if case .badEncoding = template.match("/v1/owners/%zz/sessions") {} else { Issue.record("bad % accepted") }
        if case .badEncoding = template.match("/v1/owners/%ff%fe/sessions") {} else { Issue.record("bad UTF-8 accepted") }
        // The literals decide first: a path of another route is no match, however its parameters are encoded.
        if case .noMatch = template.match("/v1/owners/%zz/active") {} else { Issue.record("another route's path") }
        if case .noMatch = template.match("/v1/owners/%zz/sessionz") {} else { Issue.record("another literal") }
        if case .noMatch = template.match("/v1/owners//sessions") {} else { Issue.record("an empty parameter") }
    }

    @Test func queryStringsDecodeStrictly() {
        let pairs = QueryString.parse("validate=never&a=b+c%21&flag")
        #expect(pairs?.map(\.name) == ["validate", "a", "flag"])
        #expect(pairs?.map(\.value) == ["never", "b c!", ""])
        #expect(QueryString.parse("a=%4") == nil)
    }

    @Test func unknownRoutesAndMethodsGet404And405() async throws {
        let (router, _) = try makeRouter()
        let missing = await RouteCaller.call(router, "GET", "/v1/nothing")
        #expect(missing.status == 404 && errorCode(missing) == "not_found")
        let wrongMethod = await RouteCaller.call(router, "DELETE", "/healthz")
        #expect(wrongMethod.status == 405 && errorCode(wrongMethod) == "method_not_allowed")
        #expect(wrongMethod.headers["Allow"] == "GET")
        let badPath = await RouteCaller.call(router, "POST", "/v1/echo/%zz")
        #expect(badPath.status == 400 && errorCode(badPath) == "invalid_request")
    }

    @Test func keysAndScopesAreEnforced() async throws {
        let keys = InMemoryKeyStore()
        let (router, _) = try makeRouter(keys: keys)
        let none = await RouteCaller.call(router, "GET", "/v1/app")
        #expect(none.status == 401 && errorCode(none) == "unauthorized")
        #expect(none.headers["WWW-Authenticate"] == "Bearer")
        let wrong = await RouteCaller.call(router, "GET", "/v1/app", headers: ["Authorization": "Bearer fbs_k00000000000_nope"])
        #expect(wrong.status == 401)
        let eventsOnly = try await keys.addKey(appID: "app_test", scopes: [.events])
        let forbidden = await RouteCaller.call(router, "GET", "/v1/app", headers: ["Authorization": "Bearer \(eventsOnly.text)"])
        #expect(forbidden.status == 403 && errorCode(forbidden) == "forbidden")
        let good = try await keys.addKey(appID: "app_test", scopes: [.sessions])
        let ok = await RouteCaller.call(router, "GET", "/v1/app", headers: ["authorization": "bearer \(good.text)"])
        #expect(ok.status == 200)
        #expect(ok.text.contains(#""name":"test""#) && ok.text.contains(good.key.id) && !ok.text.contains(good.text))
        // The scheme in any case, HTTP's blanks around the key (spaces and tabs) trimmed. Other white space is part
        // of the credential, as HTTP reads it: such a key is no key. (The messages name the case, never the key.)
        for (index, value) in ["BEARER  \(good.text)\t", "BeArEr \(good.text) ", "Bearer \t\(good.text)\t "].enumerated() {
            let reply = await RouteCaller.call(router, "GET", "/v1/app", headers: ["Authorization": value])
            #expect(reply.status == 200, "accepted case \(index)")
        }
        for (index, value) in [
            "Bearer", "Bearer    ", "Bearer\t\(good.text)", "Basic \(good.text)", "Bearér \(good.text)",
            "Bearer \u{3000}\(good.text)", "Bearer \(good.text)\u{00A0}",
        ].enumerated() {
            let reply = await RouteCaller.call(router, "GET", "/v1/app", headers: ["Authorization": value])
            #expect(reply.status == 401, "refused case \(index)")
        }
        _ = try await keys.revokeKey(id: good.key.id)
        let revoked = await RouteCaller.call(router, "GET", "/v1/app", headers: ["Authorization": "Bearer \(good.text)"])
        #expect(revoked.status == 401)
    }

    @Test func jsonBodiesAreCheckedWithClearErrors() async throws {
        let keys = InMemoryKeyStore()
        let key = try await keys.addKey(appID: "app_test", scopes: [.sessions]).text
        let (router, _) = try makeRouter(keys: keys)
        func post(_ body: [UInt8], type: String? = "application/json") async -> Response {
            var headers: HTTPHeaders = ["Authorization": "Bearer \(key)"]
            if let type { headers.add("Content-Type", type) }
            return await RouteCaller.call(router, "POST", "/v1/echo/o%2F1", headers: headers, body: body)
        }
        let ok = await post(Array(#"{"owner":"ann","slot":2}"#.utf8))
        #expect(ok.status == 200 && ok.text.contains(#""path_owner":"o/1""#))
        let charset = await post(Array(#"{"owner":"ann"}"#.utf8), type: "Application/JSON; charset=utf-8")
        #expect(charset.status == 200)

        let malformed = await post(Array(#"{"owner": "#.utf8))
        #expect(malformed.status == 400 && errorCode(malformed) == "invalid_request")
        let wrongType = await post(Array(#"{"owner":"ann","slot":"two"}"#.utf8))
        #expect(wrongType.status == 400 && wrongType.text.contains(#""field":"slot""#))
        let missing = await post(Array(#"{"slot":1}"#.utf8))
        #expect(missing.status == 400 && missing.text.contains(#""field":"owner""#))
        let badUTF8 = await post([0x7B, 0x22, 0x6F, 0x77, 0x6E, 0x65, 0x72, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D])
        #expect(badUTF8.status == 400 && errorCode(badUTF8) == "invalid_request")
        let empty = await post([])
        #expect(empty.status == 400)
        let text = await post(Array("owner=ann".utf8), type: "application/x-www-form-urlencoded")
        #expect(text.status == 415 && errorCode(text) == "unsupported_media_type")
        let untyped = await post(Array("{}".utf8), type: nil)
        #expect(untyped.status == 415)
    }

    @Test func internalErrorsRevealOnlyTheRequestID() async throws {
        let log = InMemoryLogHandler()
        let (router, _) = try makeRouter(log: log)
        let response = await RouteCaller.call(router, "GET", "/v1/crash")
        #expect(response.status == 500 && errorCode(response) == "internal_error")
        #expect(response.text.contains("test-request"))
        #expect(!response.text.contains("123") && !response.text.contains("Internal"))
        // The operator learns which error it was (its type, with the request id), never its text.
        let unexpected = log.records.filter { $0.message == "unexpected error" }
        #expect(unexpected.count == 1 && unexpected.first?.level == .error)
        let line = unexpected.first?.jsonLine ?? ""
        #expect(line.contains("Internal") && line.contains("test-request") && line.contains("/v1/crash"))
        #expect(!line.contains("123"), "an unknown error's text may hold a secret")
    }

    @Test func databaseOutageIs503WithRetryAfter() async throws {
        let keys = InMemoryKeyStore()
        let key = try await keys.addKey(appID: "app_test", scopes: [.sessions]).text
        keys.available = false
        let (router, _) = try makeRouter(keys: keys)
        let response = await RouteCaller.call(router, "GET", "/v1/app", headers: ["Authorization": "Bearer \(key)"])
        #expect(response.status == 503 && errorCode(response) == "database_unavailable")
        #expect(response.headers["Retry-After"] == "1")
    }

    @Test func logsOneLinePerRequestWithoutQueryOrSecrets() async throws {
        let log = InMemoryLogHandler()
        let keys = InMemoryKeyStore()
        let key = try await keys.addKey(appID: "app_test", scopes: [.sessions]).text
        let (router, metrics) = try makeRouter(keys: keys, log: log)
        for target in ["/healthz?access_token=SECRET_TOKEN", "/v1/app"] {
            _ = await RouteCaller.call(router, "GET", target, headers: ["Authorization": "Bearer \(key)"])
            router.completed(
                ExchangeRecord(requestID: "r", method: "GET", route: target.hasPrefix("/v1") ? "/v1/app" : "/healthz", status: 200, duration: 0.002, outcome: .completed))
        }
        let lines = log.records.map(\.jsonLine)
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { !$0.contains("SECRET_TOKEN") && !$0.contains(key) && !$0.contains("access_token") })
        #expect(lines[0].contains(#""route":"/healthz""#) && lines[0].contains(#""status":200"#))
        #expect(metrics.render().contains(#"fbs_http_requests_total{route="/v1/app",method="GET",status="200"} 1"#))
    }

    @Test func healthAndMetricsAnswerWithoutAKey() async throws {
        let (router, _) = try makeRouter()
        let health = await RouteCaller.call(router, "GET", "/healthz")
        #expect(health.status == 200 && health.text == #"{"status":"ok"}"#)
        let ready = await RouteCaller.call(router, "GET", "/readyz")
        #expect(ready.status == 200)
        let metrics = await RouteCaller.call(router, "GET", "/metrics")
        #expect(metrics.status == 200 && metrics.headers["Content-Type"]?.hasPrefix("text/plain") == true)
        let spec = await RouteCaller.call(router, "GET", "/openapi.yaml")
        #expect(spec.text == "openapi: 3.1.0\n")
    }
}
