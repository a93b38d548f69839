import FBSessionsCore
import GraphVersions
import HTTPServer
import Support

/// The calling key's own app, with its Graph API version as Facebook serves it.
enum AppRoutes {
    struct AppDTO: Encodable {
        struct KeyDTO: Encodable {
            let id: String
            let scopes: [String]
        }

        /// `graph_version`: what the app asks for, its last day on Meta's table, and what Facebook answered with.
        struct GraphVersionDTO: Encodable {
            let requested: String
            let availableUntil: String?
            let served: String?
            let servedAt: String?

            enum CodingKeys: String, CodingKey {
                case requested, served
                case availableUntil = "available_until"
                case servedAt = "served_at"
            }

            init(_ report: GraphVersionWatch.Report) {
                requested = report.requested.description
                availableUntil = report.availableUntil?.description
                served = report.served?.served
                servedAt = report.served.map { RFC3339.string(from: $0.at) }
            }

            // Nulls are written, not left out: the contract shows every field.
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(requested, forKey: .requested)
                try container.encode(availableUntil, forKey: .availableUntil)
                try container.encode(served, forKey: .served)
                try container.encode(servedAt, forKey: .servedAt)
            }
        }

        /// One of `warnings`: a code, a line for people, and the fields the code carries.
        struct WarningDTO: Encodable {
            let code: String
            let message: String
            let requested: String
            let availableUntil: String?
            let served: String?

            enum CodingKeys: String, CodingKey {
                case code, message, requested, served
                case availableUntil = "available_until"
            }

            init(_ warning: GraphVersionWarning) {
                code = warning.code.rawValue
                message = warning.message
                requested = warning.requested.description
                availableUntil = warning.availableUntil?.description
                served = warning.served?.description
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(code, forKey: .code)
                try container.encode(message, forKey: .message)
                try container.encode(requested, forKey: .requested)
                switch code {
                case GraphVersionWarning.Code.sunset.rawValue:
                    try container.encode(availableUntil, forKey: .availableUntil)
                case GraphVersionWarning.Code.upgraded.rawValue:
                    try container.encodeIfPresent(served, forKey: .served)
                default:
                    break
                }
            }
        }

        let id: String
        let name: String
        let facebookAppID: String
        let redirectURIs: [String]
        let requiredPermissions: [String]
        let createdAt: String
        let key: KeyDTO
        let graphVersion: GraphVersionDTO?
        let warnings: [WarningDTO]

        enum CodingKeys: String, CodingKey {
            case id, name, key, warnings
            case facebookAppID = "facebook_app_id"
            case redirectURIs = "redirect_uris"
            case requiredPermissions = "required_permissions"
            case createdAt = "created_at"
            case graphVersion = "graph_version"
        }

        init(_ principal: Principal, versions: GraphVersionWatch.Report?) {
            let app = principal.app
            id = app.id
            name = app.name
            facebookAppID = app.facebookAppID
            redirectURIs = app.redirectURIs
            requiredPermissions = app.requiredPermissions
            createdAt = RFC3339.string(from: app.createdAt)
            key = KeyDTO(id: principal.key.id, scopes: principal.key.scopes.map(\.rawValue))
            graphVersion = versions.map(GraphVersionDTO.init)
            warnings = versions?.warnings.map(WarningDTO.init) ?? []
        }
    }

    static func routes(_ services: Services) -> [Route] {
        let versions = services.graphVersions
        return [
            /// - Remark: HTTP GET /v1/app (openapi.yaml operationId getApp)
            Route("GET", "/v1/app", operationID: "getApp", scope: .sessions, handler: .waiting { context in
                guard let principal = context.principal else {
                    throw APIError(500, .internalError, "The request has no caller.")
                }
                let report = try await versions?.report(for: principal.app)
                return try JSONResponse.make(200, AppDTO(principal, versions: report))
            }),
        ]
    }
}
