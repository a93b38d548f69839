import FBSessionsCore
import HTTPServer
import Support

/// The calling key's own app.
enum AppRoutes {
    struct AppDTO: Encodable {
        struct KeyDTO: Encodable {
            let id: String
            let scopes: [String]
        }

        let id: String
        let name: String
        let facebookAppID: String
        let redirectURIs: [String]
        let requiredPermissions: [String]
        let createdAt: String
        let key: KeyDTO

        enum CodingKeys: String, CodingKey {
            case id, name, key
            case facebookAppID = "facebook_app_id"
            case redirectURIs = "redirect_uris"
            case requiredPermissions = "required_permissions"
            case createdAt = "created_at"
        }

        init(_ principal: Principal) {
            let app = principal.app
            id = app.id
            name = app.name
            facebookAppID = app.facebookAppID
            redirectURIs = app.redirectURIs
            requiredPermissions = app.requiredPermissions
            createdAt = RFC3339.string(from: app.createdAt)
            key = KeyDTO(id: principal.key.id, scopes: principal.key.scopes.map(\.rawValue))
        }
    }

    static func routes(_ services: Services) -> [Route] {
        [
            /// - Remark: HTTP GET /v1/app (openapi.yaml operationId getApp)
            Route("GET", "/v1/app", operationID: "getApp", scope: .sessions, body: .immediate { context in
                guard let principal = context.principal,
                    let response = try? JSONResponse.make(200, AppDTO(principal))
                else {
                    return APIError.from(APIError(500, .internalError, "Could not encode the app.")).response(
                        requestID: context.requestID)
                }
                return response
            }),
        ]
    }
}
