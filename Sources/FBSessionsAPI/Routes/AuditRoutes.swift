import FBSessionsCore
import HTTPServer

/// The audit log: `GET /v1/audit` (docs/api-contract.md, "Audit log").
enum AuditRoutes {
    /// The routes.
    ///
    /// - Parameter audit: The log; `nil` (route tests without a database) answers 503 `database_unavailable`.
    static func routes(audit: (any AuditLog)?) -> [Route] {
        [
            /// - Remark: HTTP GET /v1/audit (openapi.yaml operationId listAudit)
            Route(
                "GET", "/v1/audit", operationID: "listAudit", scope: .audit,
                handler: .waiting { context in
                    let app = try context.app()
                    let request = try PageRequest(context)
                    guard let audit else {
                        throw APIError.from(ServiceError.databaseUnavailable)
                    }
                    let page = try await audit.entries(appID: app.id, after: request.after, limit: request.limit)
                    return Response.json(
                        status: 200, body: Array(render(page).utf8), headers: ["Cache-Control": "no-store"])
                })
        ]
    }

    /// The query of a page request, checked as the events feed checks its own (``EventRoutes/FeedRequest``).
    struct PageRequest {
        let after: AuditCursor?
        let limit: Int

        init(_ context: RouteContext) throws {
            if let text = context.query("after") {
                do {
                    after = try AuditCursor(parsing: text)
                } catch {
                    throw APIError.invalid(error.description, field: "after")
                }
            } else {
                after = nil
            }
            if let text = context.query("limit") {
                guard text.utf8.count <= 4, text.utf8.allSatisfy({ (48...57).contains($0) }), let value = Int(text),
                    AuditPolicy.limits.contains(value)
                else {
                    throw APIError.invalid("limit must be an integer from 1 to 500.", field: "limit")
                }
                limit = value
            } else {
                limit = AuditPolicy.defaultLimit
            }
        }
    }

    /// `{"entries": [...], "next_cursor": "..."}`.
    static func render(_ page: AuditPage) -> String {
        #"{"entries":["# + page.entries.map(\.json).joined(separator: ",") + #"],"next_cursor":""#
            + page.nextCursor.text + #""}"#
    }
}
