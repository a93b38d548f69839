import FBSessionsCore
import HTTPServer

/// Liveness, readiness, metrics and the spec: the routes operators and tools use, without a key.
enum HealthRoutes {
    static func routes(_ services: Services) -> [Route] {
        // Made once: the handler hands out the same (copy-on-write) headers and body for every request.
        let ok = Response.json(status: 200, body: Array(#"{"status":"ok"}"#.utf8))
        let document = services.openAPIDocument
        let metrics = services.metrics
        let readiness = services.readiness
        return [
            /// - Remark: HTTP GET /healthz (openapi.yaml operationId getHealth)
            Route("GET", "/healthz", operationID: "getHealth", scope: nil, handler: .immediate { _ in ok }),
            /// - Remark: HTTP GET /readyz (openapi.yaml operationId getReadiness)
            Route("GET", "/readyz", operationID: "getReadiness", scope: nil, handler: .waiting { context in
                let state = await readiness.readiness()
                guard state.isReady else {
                    var error = APIError(
                        503, .notReady,
                        state.databaseReachable ? "Migrations are not current." : "The database is unreachable.")
                    error.headers.add("Retry-After", "1")
                    return error.response(requestID: context.requestID)
                }
                return .json(status: 200, body: Array(#"{"status":"ready"}"#.utf8))
            }),
            /// - Remark: HTTP GET /metrics (openapi.yaml operationId getMetrics)
            Route("GET", "/metrics", operationID: "getMetrics", scope: nil, handler: .immediate { _ in
                Response(
                    status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                    body: Array(metrics.render().utf8))
            }),
            /// - Remark: HTTP GET /openapi.yaml (openapi.yaml operationId getOpenAPI)
            Route("GET", "/openapi.yaml", operationID: "getOpenAPI", scope: nil, handler: .immediate { context in
                Response(
                    status: 200,
                    headers: ["Content-Type": OpenAPIDocument.contentType(accept: context.request.headers["Accept"])],
                    body: document)
            }),
        ]
    }
}
