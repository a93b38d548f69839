import FBSessionsCore
import Foundation
import Postgres

/// The columns of `apps` that make an ``App`` (never the secret).
enum AppRow {
    static let columns: StaticString = "a.id, a.name, a.facebook_app_id, a.redirect_uris, a.required_permissions, a.created_at,\n        a.graph_version"

    static func app(from row: PostgresRow) throws -> App {
        App(
            id: try row.decode("id"), name: try row.decode("name"),
            facebookAppID: try row.decode("facebook_app_id"), redirectURIs: try row.decode("redirect_uris"),
            requiredPermissions: try row.decode("required_permissions"), createdAt: try row.decode("created_at"),
            graphVersion: try row.decode("graph_version"))
    }
}
