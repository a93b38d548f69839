import GraphVersions
import Crypto
import HTTPServer

/// The emulator's ``RequestHandler``: the control API under `/__emulator/`, the CDN under `/__cdn/`, and Graph
/// everywhere else. Latency is a `Task.sleep` inside ``Reply/later(_:)``, so waiting requests hold no thread.
struct EmulatorHandler: RequestHandler {
    let state: EmulatorState

    func inspect(_ head: RequestHead) -> HeadDecision {
        let first = head.path.split(separator: "/").first.map(String.init) ?? ""
        let route =
            switch first {
            case "__emulator": "control"
            case "__cdn": GraphEndpoint.cdn.rawValue
            default: "graph"
            }
        return .proceed(route: route, respond: respond)
    }

    func respond(to request: Request) -> Reply {
        let first = request.path.split(separator: "/").first.map(String.init) ?? ""
        if first == "__emulator" { return .now(ControlRoutes(state: state).respond(to: request)) }
        let baseURL = baseURL(for: request)
        let endpoint: GraphEndpoint
        let graphRequest: GraphRequest?
        if first == "__cdn" {
            endpoint = .cdn
            graphRequest = nil
        } else {
            let today = CalendarDay(unixSeconds: Double(state.withStore { $0.now }))
            let decoded = GraphRequest.decode(
                request, configuration: state.configuration, baseURL: baseURL, today: today)
            endpoint = decoded.problem == nil ? decoded.endpoint : .other
            graphRequest = decoded
        }
        let (fault, latency) = state.withStore { ($0.begin(endpoint), $0.latency(for: endpoint)) }
        let state = self.state
        let work: @Sendable () -> Response = {
            if let fault { return Self.render(fault, request: graphRequest, state: state) }
            guard let graphRequest else { return CDNRoute.respond(to: request, state: state) }
            return state.withStore { store in
                let answer = GraphRoutes.answer(graphRequest, store: &store)
                return Self.finish(answer, request: graphRequest, store: store)
            }
        }
        if latency > .zero {
            return .later {
                try? await Task.sleep(for: latency)
                return work()
            }
        }
        // Image bytes are made off the server's threads.
        return endpoint == .cdn ? .later(work) : .now(work())
    }

    func completed(_ record: ExchangeRecord) {}

    /// Where generated URLs point: the configured base URL, else the request's `Host`, else the started server.
    private func baseURL(for request: Request) -> String {
        if let configured = state.configuration.publicBaseURL { return configured }
        if let host = request.headers["Host"], !host.isEmpty,
            host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "\"") })
        {
            return "http://" + host
        }
        return state.withStore { $0.startedBaseURL } ?? "http://localhost"
    }

    // MARK: Rendering

    /// Adds Graph's common headers (docs/facebook-graph.md §1.4, §12.3) to an answer.
    static func finish(_ answer: GraphAnswer, request: GraphRequest, store: EmulatorStore) -> Response {
        var response: Response
        switch answer.reply {
        case .json(let value, let status):
            response = Response(status: status, body: value.bytes)
        case .error(let error):
            let body = error.body(traceID: request.traceID, omitSubcode: store.omitErrorSubcode)
            response = Response(status: error.status, body: body.bytes)
            if let header = error.authenticateHeader { response.headers.add("WWW-Authenticate", header) }
        case .redirect(let location):
            response = Response(status: 302, headers: ["Location": location])
        case .success:
            response = Response(status: 200, body: Array((store.bareTrueOnDelete ? "true" : #"{"success":true}"#).utf8))
        case .raw(let raw):
            return raw
        }
        if case .redirect = answer.reply {
            response.headers.add("Content-Type", "text/html; charset=\"utf-8\"")
        } else {
            response.headers.add("Content-Type", "application/json; charset=UTF-8")
        }
        if response.status == 200, !response.body.isEmpty {
            response.headers.add("ETag", "\"" + String(SHA256.hexDigest(response.body).prefix(40)) + "\"")
        }
        response.headers.add("facebook-api-version", request.version)
        let appID = request.accessToken.flatMap { store.resolve($0).appID }
        if answer.throttled {
            response.headers.add("x-app-usage", AppUsage(callCount: 100, totalCPUTime: 100, totalTime: 100).headerValue)
        } else if let appID {
            response.headers.add("x-app-usage", store.usage(for: appID).headerValue)
        }
        for (name, value) in commonHeaders(traceID: request.traceID) { response.headers.add(name, value) }
        return response
    }

    static func commonHeaders(traceID: String) -> [(String, String)] {
        [
            ("x-fb-trace-id", traceID), ("x-fb-rev", "1002481006"), ("x-fb-request-id", RandomText.alphanumeric(23)),
            ("X-FB-Debug", Base64URL.encode(SecureRandom.bytes(66))),
            ("Cache-Control", "private, no-cache, no-store, must-revalidate"), ("Pragma", "no-cache"),
            ("Expires", "Sat, 01 Jan 2000 00:00:00 GMT"), ("Access-Control-Allow-Origin", "*"),
            ("Strict-Transport-Security", "max-age=15552000; preload"),
        ]
    }

    /// The response for an injected fault.
    static func render(_ fault: GraphFault, request: GraphRequest?, state: EmulatorState) -> Response {
        let traceID = request?.traceID ?? RandomText.traceID()
        switch fault {
        case .graphError(let spec):
            guard let request else { return Response(status: spec.status) }
            var answer = GraphAnswer(.error(spec.graphError))
            answer.throttled = spec.isThrottle
            return state.withStore { finish(answer, request: request, store: $0) }
        case .httpStatus(let status):
            var error = GraphError.service
            error.status = status
            guard let request else { return Response(status: status) }
            return state.withStore { finish(GraphAnswer(.error(error)), request: request, store: $0) }
        case .malformedBody:
            return Response(
                status: 200, headers: ["Content-Type": "application/json; charset=UTF-8", "x-fb-trace-id": traceID],
                body: Array(#"{"id":"1002481006","name":"Trunc"#.utf8))
        case .emptyBody:
            return Response(
                status: 200, headers: ["Content-Type": "application/json; charset=UTF-8", "x-fb-trace-id": traceID])
        case .htmlPage:
            let html =
                "<!DOCTYPE html><html><head><title>Error</title></head><body>Sorry, something went wrong."
                + " We're working on getting this fixed as soon as we can.</body></html>"
            return Response(
                status: 500, headers: ["Content-Type": "text/html; charset=\"utf-8\"", "x-fb-trace-id": traceID],
                body: Array(html.utf8))
        case .dropConnection:
            return .droppedConnection
        }
    }
}

extension Response {
    /// A response that makes the server close the connection without sending a byte.
    ///
    /// HTTPServer has no flag for this yet. libmicrohttpd refuses to queue a status outside 100…999
    /// (`MHD_queue_response` returns `MHD_NO`), and the server then returns `MHD_NO` from its access handler,
    /// which closes the connection: the client sees an empty reply, a real dropped connection. Replace with a
    /// proper `Response` flag when HTTPServer has one.
    static var droppedConnection: Response {
        .dropConnection
    }
}
