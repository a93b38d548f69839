import Crypto
import FBSessionsCore
import Foundation
import Postgres

/// ``AppStore`` over PostgreSQL. App secrets are sealed with the key ring, bound to the app's id.
public struct PostgresAppStore: AppStore {
    private let database: Database
    private let keyring: Keyring

    /// Creates the store.
    public init(database: Database, keyring: Keyring) {
        self.database = database
        self.keyring = keyring
    }

    public func addApp(_ draft: AppDraft) async throws -> App {
        let id = "app_" + Hex.encode(SecureRandom.bytes(8))
        let sealed = try keyring.seal(Array(draft.secret.utf8), context: id)
        do {
            return try await database.run { connection in
                let rows = try connection.query(
                    """
                    INSERT INTO apps AS a (id, name, facebook_app_id, secret_key_id, secret_box, redirect_uris,
                                           required_permissions, graph_version)
                    VALUES (\(id), \(draft.name), \(draft.facebookAppID), \(sealed.keyID), \(sealed.box),
                            \(draft.redirectURIs), \(draft.requiredPermissions), \(draft.graphVersion))
                    RETURNING \(unsafeSQL: AppRow.columns)
                    """)
                guard let row = rows.first else { throw MigrationError("INSERT returned no row") }
                return try AppRow.app(from: row)
            }
        } catch let error as PostgresError where error.sqlState == "23505" {
            throw ServiceError.appExists(
                error.constraintName == "apps_facebook_app_id_key" ? "facebook app \(draft.facebookAppID)" : draft.name)
        }
    }

    public func apps() async throws -> [App] {
        try await database.run { connection in
            try connection.query("SELECT \(unsafeSQL: AppRow.columns) FROM apps a ORDER BY a.name").map(AppRow.app)
        }
    }

    public func app(named name: String) async throws -> App? {
        try await database.run { connection in
            try connection.query("SELECT \(unsafeSQL: AppRow.columns) FROM apps a WHERE a.name = \(name)").first
                .map(AppRow.app)
        }
    }

    public func secret(ofApp appID: String) async throws -> String {
        let sealed: Keyring.Sealed? = try await database.run { connection in
            try connection.query("SELECT secret_key_id, secret_box FROM apps WHERE id = \(appID)").first.map {
                Keyring.Sealed(keyID: try $0.decode("secret_key_id"), box: try $0.decode("secret_box"))
            }
        }
        guard let sealed else { throw ServiceError.unknownApp(appID) }
        do {
            return String(decoding: try keyring.open(sealed, context: appID), as: UTF8.self)
        } catch {
            throw ServiceError.undecryptable
        }
    }

    public func setGraphVersion(_ version: String?, ofAppNamed name: String) async throws -> App {
        let app = try await database.run { connection in
            try connection.query(
                """
                UPDATE apps AS a SET graph_version = \(version) WHERE a.name = \(name)
                RETURNING \(unsafeSQL: AppRow.columns)
                """
            ).first.map(AppRow.app)
        }
        guard let app else { throw ServiceError.unknownApp(name) }
        return app
    }

    public func recordServedGraphVersion(_ served: ServedGraphVersion, facebookAppID: String) async throws {
        try await database.run { connection in
            _ = try connection.query(
                """
                UPDATE apps SET graph_served = \(served.served), graph_served_for = \(served.requested),
                                graph_served_at = \(served.at)
                WHERE facebook_app_id = \(facebookAppID) AND (graph_served_at IS NULL OR graph_served_at < \(served.at))
                """)
        }
    }

    public func graphVersions(ofApp appID: String) async throws -> (requested: String?, served: ServedGraphVersion?) {
        try await database.run { connection in
            guard
                let row = try connection.query(
                    "SELECT graph_version, graph_served, graph_served_for, graph_served_at FROM apps WHERE id = \(appID)"
                ).first
            else { throw ServiceError.unknownApp(appID) }
            let requested: String? = try row.decode("graph_version")
            let served: String? = try row.decode("graph_served")
            let servedFor: String? = try row.decode("graph_served_for")
            let at: Date? = try row.decode("graph_served_at")
            guard let served, let servedFor, let at else { return (requested, nil) }
            return (requested, ServedGraphVersion(requested: servedFor, served: served, at: at))
        }
    }
}
